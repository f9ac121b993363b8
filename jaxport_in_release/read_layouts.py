"""Run in a jax release's own environment: which envelope layouts its own
``jax.export.deserialize`` reads.

``python read_layouts.py LAYOUTS_JSON``: layout -> blob path in ``argv[1]``; prints one JSON
object. It never imports jaxport.
"""
import json, sys, jax
from jax import export
out = {}
for layout, path in json.loads(sys.argv[1]).items():
  try:
    export.deserialize(bytearray(open(path, "rb").read()))
    out[layout] = {"status": "reads", "error": None}
  except Exception as e:
    first = (str(e).strip().splitlines() or [""])[0]
    expired = "backward-compatibility window" in first
    out[layout] = {"status": "refuses_expired" if expired else "refuses",
                   "error": f"{type(e).__name__}: {first}"[:300]}
print(json.dumps({"jax": jax.__version__, "reads": out}))
