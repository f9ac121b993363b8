"""Run in a jax release's own environment by the release table's measurement: which cpu
custom-call targets its jaxlib registers, each compiled in a minimal module.

``python probe_targets.py TARGETS_JSON``: the JSON list of targets in ``argv[1]``; prints a
``started`` line, then a result line, per target, so that the driver knows the target a crash
stopped at. It imports only that release's jax, jaxlib and the standard library (never jaxport).
"""
import json, re, sys
import jax
args = {"targets": json.loads(sys.argv[1])}
from jax._src import xla_bridge as xb
from jax._src.lib import xla_client as xc
backend = xb.get_backend("cpu")
def compile_text(text):
  opts = xc.CompileOptions()
  if hasattr(backend, "compile_and_load"):
    devs = backend.devices()[:1]
    try:
      return backend.compile_and_load(text, xc.DeviceList(tuple(devs)), opts)
    except TypeError:
      return backend.compile_and_load(text, devs, opts)
  return backend.compile(text, opts)
def module(target, ffi):
  attrs = "api_version = 4 : i32, backend_config = {}" if ffi else "api_version = 2 : i32"
  return ("module @probe { func.func public @main() -> tensor<f32> {\n"
          f"  %0 = stablehlo.custom_call @{target}() {{{attrs}}} : () -> tensor<f32>\n"
          "  return %0 : tensor<f32> } }")
arity = re.compile(r"Wrong number of arguments: expected (\d+)")
# Some releases bind untyped (legacy) targets only when the executable runs, so a made-up
# one compiles: there, an untyped target also counts only if jaxlib's cpu module lists it.
try:
  compile_text(module("jaxport_no_such_untyped_target", False))
  lazy = True
except Exception:
  lazy = False
listed = set()
if lazy:
  try:
    from jaxlib.cpu import _lapack
    regs = _lapack.registrations()
    for v in (regs.values() if isinstance(regs, dict) else [regs]):
      listed.update(x if isinstance(x, str) else x[0] for x in v) if isinstance(v, (list, tuple)) else None
    listed.update(k for k in regs if isinstance(k, str))
  except Exception:
    pass
for t in args["targets"]:
  ffi = t.endswith("_ffi")
  print(json.dumps({"target": t, "started": True}), flush=True)
  try:
    exe = compile_text(module(t, ffi))
  except Exception as e:
    print(json.dumps({"target": t, "registered": False,
                      "error": (str(e).splitlines() or [""])[0][:240]}), flush=True)
    continue
  got = {"registered": True, "error": None}
  if lazy and not ffi and t not in listed:
    got = {"registered": False, "error": "compiles but is not among jaxlib.cpu._lapack's "
           "registrations (this release binds untyped targets when the executable runs)"}
  if ffi:
    # Some releases bind typed targets only when the executable runs, so a made-up one compiles:
    # running it without operands tells a missing handler from one that wants operands.
    try:
      exe.execute([])
    except Exception as e:
      m = arity.search(str(e))
      if m:
        got["operands"] = int(m.group(1))
      elif "No registered implementation" in str(e):
        got = {"registered": False, "error": (str(e).splitlines() or [""])[0][:240]}
  print(json.dumps({"target": t, **got}), flush=True)
