"""Run in a jax release's own environment by the release table's measurement
(``jaxport.multirelease._table_measure``): that release's StableHLO versions and VHLO ops,
calling conventions, stable table, and what its own ``jax.export`` reads.

``python measure_release.py SAMPLES_JSON``: the JSON of the sample blobs in ``argv[1]``; prints one
JSON object. It imports only that release's jax, jaxlib, numpy and the standard library (never
jaxport), so what it reports is the release's own behaviour.
"""
import glob, json, os, re, sys
import jax
args = json.loads(sys.argv[1])
import jaxlib
out = {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None) or jax.lib.__version__,
       "python": "%d.%d.%d" % sys.version_info[:3]}
try:
  from jax._src.lib.mlir.dialects import hlo as shlo
except ImportError:
  from jax._src.lib.mlir.dialects import stablehlo as shlo
out["stablehlo"] = {"writes": str(shlo.get_current_version()),
                    "reads_min": str(shlo.get_minimum_version())}
import importlib
def first_module(*names):
  for name in names:
    try:
      return importlib.import_module(name)
    except ImportError:
      pass
  raise ImportError(f"none of {names}")
ex = first_module("jax.export", "jax.experimental.export")
ex_mod = first_module("jax._src.export._export", "jax.experimental.export._export",
                      "jax.experimental.export.export")
def num(name):
  v = getattr(ex, name, None) or getattr(ex_mod, name, None)
  return v() if callable(v) else v
lo = num("minimum_supported_calling_convention_version") or num("minimum_supported_serialization_version")
hi = num("maximum_supported_calling_convention_version") or num("maximum_supported_serialization_version")
try:
  from jax._src import config as jcfg
  default = jcfg.jax_export_calling_convention_version.value
except Exception:
  default = getattr(jax.config, "jax_serialization_version", None) or getattr(
      jax.config, "jax_export_calling_convention_version", None)
out["calling_conventions"] = {"default": default, "call": [lo, hi], "export": [lo, hi]}
out["stable_table"] = sorted(getattr(ex_mod, "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE", ()))
ops = set()
libdir = os.path.dirname(__import__("jaxlib").__file__)
pat = re.compile(rb"vhlo\.([a-z][a-z0-9_]*_v[0-9]+)")
for so in glob.glob(os.path.join(libdir, "**", "*.so"), recursive=True):
  with open(so, "rb") as f:
    ops.update(m.decode() for m in pat.findall(f.read()))
out["vhlo_ops"] = sorted(ops)
reads = {}
for layout, path in args["blobs"].items():
  try:
    got = ex.deserialize(bytearray(open(path, "rb").read()))
    reads[layout] = {"status": "reads", "error": None,
                     "nr_devices": int(getattr(got, "nr_devices", 1))}
  except Exception as e:
    first = (str(e).strip().splitlines() or [""])[0]
    expired = "backward-compatibility window" in first
    reads[layout] = {"status": "refuses_expired" if expired else "refuses",
                     "error": f"{type(e).__name__}: {first}"[:300]}
out["envelope_layouts"] = reads

# Which device-count field the reader takes: a blob with only nr_devices, one with only the
# older nr_devices_short (each exported for one device); None where it refuses that blob.
fields = {}
for field, path in args["device_count_blobs"].items():
  try:
    fields[field] = int(getattr(ex.deserialize(bytearray(open(path, "rb").read())), "nr_devices", 1)) == 1
  except Exception:
    fields[field] = None
out["device_count_fields"] = fields

# Whether its jaxlib reads a minimal portable artifact (sin) of a newer StableHLO than its own,
# and a module whose attributes use the sdy (Shardy) dialect.
def portable_reader():
  from jax._src.lib import xla_client as xc
  for owner in (getattr(xc, "_xla", None), getattr(__import__("jax._src.lib", fromlist=["x"]), "_jax", None)):
    mlir = getattr(owner, "mlir", None)
    if mlir is not None and hasattr(mlir, "deserialize_portable_artifact"):
      return mlir.deserialize_portable_artifact
  raise ImportError("no deserialize_portable_artifact")
def read_portable(path):
  data = open(path, "rb").read()
  try:
    from jax._src.interpreters import mlir as jmlir
    ctx = jmlir.make_ir_context()
  except Exception:
    return portable_reader()(data)
  with ctx:
    portable_reader()(data)
def vkey(v):
  return tuple(int(x) for x in v.split("."))
def first_error(e):
  return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]
newer = args["newer_module"]
if vkey(newer["version"]) <= vkey(out["stablehlo"]["writes"]):
  out["newer_stablehlo"] = {"version": newer["version"], "reads": None,
                            "error": "not newer than the StableHLO this release writes"}
else:
  try:
    read_portable(newer["path"])
    out["newer_stablehlo"] = {"version": newer["version"], "reads": True, "error": None}
  except Exception as e:
    out["newer_stablehlo"] = {"version": newer["version"], "reads": False, "error": first_error(e)}
sdy = args["sdy_module"]
if (vkey(sdy["version"]) > vkey(out["stablehlo"]["writes"])
    and out["newer_stablehlo"]["reads"] is False):
  out["sdy_dialect"] = {"reads": None, "error": "refuses the probe's newer StableHLO first"}
else:
  import tempfile
  # MLIR reports an unknown dialect on the process's stderr, not in the exception.
  with tempfile.TemporaryFile() as log:
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    try:
      read_portable(sdy["path"])
      got = {"reads": True, "error": None}
    except Exception as e:
      got = {"reads": None, "error": first_error(e)}
    finally:
      os.dup2(saved, 2)
      os.close(saved)
    log.seek(0)
    diag = log.read().decode("utf-8", "replace")
  if got["reads"] is None and "dialect 'sdy' is unknown" in diag:
    got = {"reads": False, "error": "dialect 'sdy' is unknown"}
  out["sdy_dialect"] = got

# Whether deserialize or call refuses a calling convention above its maximum: its own export of
# sin, with the version set one above, serialized, read back and called.
import dataclasses
import numpy as np
import jax.numpy as jnp
field = "calling_convention_version"
stage = "export"
try:
  exp = ex.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), np.float32))
  if not hasattr(exp, field):
    field = "mlir_module_serialization_version"
  exp = dataclasses.replace(exp, **{field: hi + 1})
  blob = exp.serialize() if hasattr(exp, "serialize") else ex.serialize(exp)
  stage = "deserialize"
  back = ex.deserialize(bytearray(blob))
  stage = "call"
  caller = back.call if hasattr(back, "call") else ex.call_exported(back)
  np.asarray(jax.jit(caller)(np.ones((3,), np.float32)))
  got = {"refused": False, "error": None}
except Exception as e:
  first = (str(e).strip().splitlines() or [""])[0]
  # A failure before the blob is read back measures nothing.
  got = {"refused": None if stage == "export" else True,
         "error": f"{stage}: {type(e).__name__}: {first}"[:300]}
out["calling_convention_above_max"] = {"version": hi + 1, **got}
print(json.dumps(out))
