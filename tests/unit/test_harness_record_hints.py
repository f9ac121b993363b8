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


def test_any_other_failure_gets_no_fix():
  assert hint_for("ValueError: the case's inputs are not arrays") is None
