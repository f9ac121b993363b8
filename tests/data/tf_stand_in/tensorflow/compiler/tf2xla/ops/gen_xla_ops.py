"""The stand-in's ``XlaCallModule``: TensorFlow's refusals in its own words, else the outputs
the test gave for the module."""

import hashlib
import os
import re

import numpy as np

from tensorflow import _CONFIG

_WHERE = "{{function_node __wrapped__XlaCallModule_device_/job:localhost/replica:0/task:0/device:CPU:0}} "


class InvalidArgumentError(Exception):
  def __init__(self, message):
    super().__init__(message)
    self.message = message


class NotFoundError(InvalidArgumentError):
  pass


def _version(text):
  return tuple(int(p) for p in text.split("."))


def _call(args, version, module, Sout, Tout, platforms, disabled_checks, function_list,
          dim_args_spec, has_token_input_output):
  low, high = _CONFIG["calling_convention"]
  if version < low:
    raise InvalidArgumentError(_WHERE + f"XlaCallModuleOp with version {version} is not "
                               f"supported anymore. Must be >= {low}")
  if version > high:
    raise InvalidArgumentError(_WHERE + f"XlaCallModuleOp with version {version} is not "
                               f"supported by this build. Must be <= {high}")
  m = re.search(rb"StableHLO_v([\d.]+)\0", module[:64])
  written = m[1].decode()
  if _version(written) > _version(_CONFIG["stablehlo"]) and b"custom_call_v2" in module:
    lines = ["error: unregistered operation 'vhlo.custom_call_v2' found in dialect ('vhlo') "
             "that does not allow unknown operations",
             f"note: in bytecode version 6 produced by: StableHLO_v{written}",
             "error: failed to deserialize portable artifact using "
             f"StableHLO_v{_CONFIG['stablehlo']}"]
    if _CONFIG.get("diagnostics_on_stderr"):
      os.write(2, ("\n".join(f"<unknown>:0: {line}" for line in lines) + "\n").encode())
      raise InvalidArgumentError(_WHERE + "Cannot deserialize computation")
    raise InvalidArgumentError(_WHERE + "Cannot deserialize computation: UNKNOWN: "
                               + "\n".join(f"<unknown>:0: {line}" for line in lines))
  if "CPU" not in platforms:
    raise NotFoundError(_WHERE + "The current platform CPU is not among the platforms "
                        f"required by the module: [{', '.join(platforms)}]")
  target = re.search(rb"(lapack_\w+)", module)
  if target:
    raise NotFoundError(_WHERE + f"No FFI handler registered for {target[1].decode()} on a "
                        "platform Host (canonical host)")
  digest = hashlib.sha256(module).hexdigest()
  if digest in _CONFIG.get("crashes", ()):
    os._exit(134)  # as a native crash inside XlaCallModule (SIGABRT), leaving no core file
  with np.load(_CONFIG["outputs"][digest]) as npz:
    outs = [npz[f"arr_{i}"] for i in range(len(npz.files))]
  if digest in _CONFIG.get("perturbed", ()):
    outs = [o + 1 for o in outs]
  return outs


if _CONFIG["shardy"]:
  def xla_call_module(args, version, module, Sout, Tout, platforms, disabled_checks,
                      function_list, dim_args_spec, has_token_input_output,
                      use_shardy_partitioner=False, name=None):
    return _call(args, version, module, Sout, Tout, platforms, disabled_checks, function_list,
                 dim_args_spec, has_token_input_output)
else:
  def xla_call_module(args, version, module, Sout, Tout, platforms, disabled_checks,
                      function_list, dim_args_spec, has_token_input_output, name=None):
    return _call(args, version, module, Sout, Tout, platforms, disabled_checks, function_list,
                 dim_args_spec, has_token_input_output)
