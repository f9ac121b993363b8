import jax


def test_platform_option_is_a_known_platform(request):
  assert request.config.getoption("jaxport_platform") in {"cpu", "cuda", "rocm", "tpu"}
  assert jax.default_backend() == "cpu" or request.config.getoption("jaxport_platform") != "cpu"
