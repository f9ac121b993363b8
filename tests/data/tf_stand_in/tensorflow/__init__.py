"""A stand-in for TensorFlow, for the tf reader's tests: CI never installs TensorFlow.

It answers as a TensorFlow release's ``XlaCallModule`` does, from the JSON file
``$JAXPORT_TF_STAND_IN`` names: ``version``, ``stablehlo`` (the version it reads),
``calling_convention`` ([lowest, highest]), ``shardy`` (whether the op takes
``use_shardy_partitioner``), ``diagnostics_on_stderr`` (print MLIR's diagnostics and raise only
"Cannot deserialize computation", as TF 2.18 and 2.19 do), ``outputs`` (a module's sha256 ->
the npz of what it computes), ``perturbed`` (sha256s whose outputs come back changed) and
``crashes`` (sha256s whose call aborts the process).
Its refusals use TensorFlow's own words, as measured.
"""

import json
import os

_CONFIG = json.loads(open(os.environ["JAXPORT_TF_STAND_IN"]).read())
__version__ = _CONFIG["version"]


def as_dtype(name):
  return name
