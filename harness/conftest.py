"""Pytest options of the compat harness."""


def pytest_addoption(parser):
  group = parser.getgroup("jaxport", "jaxport compat harness")
  group.addoption("--platform", dest="jaxport_platform", default="cpu",
                  help="platform whose golden entries are replayed (cpu, cuda, rocm, tpu)")
