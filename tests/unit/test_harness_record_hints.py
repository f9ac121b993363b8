"""A recording failure with a known cause names its fix before jax's traceback."""

import pytest

from jaxport.harness._controller._record_hints import hint_for

DEVICES = ("ValueError: Function main was exported for 8 devices and is called in a context "
           "with 1 devices. This is disallowed because ...")
FFT = ("NotImplementedError: fft of symbolic length is not implemented for TPU and GPU")


@pytest.mark.parametrize("text, named", [
    (DEVICES, ("jit_kwargs", "in_shardings", "shard_map")),
    (f"CallError: export failed\nTraceback (most recent call last):\n  ...\n{FFT}",
     ("fixed length", "polymorphic_shapes", "platforms=('cpu',)")),
])
def test_a_known_cause_gets_a_fix_naming_what_to_change(text, named):
  fix = hint_for(text)
  assert fix is not None and fix.startswith("fix: ")
  assert all(n in fix for n in named)


INDIVISIBLE = ("IndivisibleError: Sharding NamedSharding(mesh=Mesh('data': 4, 'model': 2), "
               "spec=P('data', None), memory_kind=device) implies that array axis {axis} is "
               "partitioned 4 times, but the dimension size is {dim} (full shape: {shape}, "
               "per-dimension tiling factors: [4, 1] should evenly divide the shape)")


@pytest.mark.parametrize("axis, dim, shape, example", [
    (0, "b", "(b, 16)", '"4*b, 16"'),
    (1, "n", "(8, n, 3)", '"8, 4*n, 3"'),
    (0, "b + 1", "(b + 1, 16)", '"4*k, 16"'),
])
def test_a_symbolic_dimension_sharded_unevenly_gets_a_multiple_of_the_ways(axis, dim, shape,
                                                                          example):
  fix = hint_for(INDIVISIBLE.format(axis=axis, dim=dim, shape=shape))
  assert fix is not None and fix.startswith(f"fix: dimension {axis} ({dim}) is sharded 4 ways")
  assert f"e.g. {example}" in fix and "multiple of 4" in fix


def test_any_other_failure_gets_no_fix():
  assert hint_for("ValueError: the case's inputs are not arrays") is None
