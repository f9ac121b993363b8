"""A record exported for two devices, called on two CPU devices in a fresh process.

The device count of a CPU backend is fixed when jax starts its backend, so the scenario
runs in a child process (forked from a parent that imported jax but started no backend) and
reports back as JSON.
"""

import json
import textwrap

import pytest

from _python_child import run_python

_SCRIPT = textwrap.dedent('''
    import json
    import jax
    jax.config.update("jax_num_cpu_devices", 2)
    import jax.export
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    import jaxport

    mesh = jax.make_mesh((2,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    row, rep = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    x = np.arange(8, dtype=np.float32)
    xs = jax.device_put(x, row)
    report = {}
    for name, export in (("jax", jax.export.export), ("jaxport", jaxport.export)):
      f = jax.jit(lambda v: jnp.sin(v) * 2, in_shardings=row, out_shardings=rep)
      e = export(f)(jax.ShapeDtypeStruct((8,), np.float32, sharding=row))
      with jax.set_mesh(mesh):
        got = jax.jit(jaxport.call(e))(xs)
        want = jax.export.deserialize(e.serialize()).call(xs)
        text = jax.jit(jaxport.call(e)).lower(xs).as_text()
      caller_main = text.split("func.func private")[0]
      report[name] = {
          "nr_devices": e.nr_devices,
          "values_equal": bool(np.allclose(got, np.sin(x) * 2)),
          "same_as_jax_call": bool(np.array_equal(got, want)),
          "spec": str(got.sharding.spec), "jax_spec": str(want.sharding.spec),
          "in_constraint": '<@mesh, [{"x"}]>' in caller_main,
          "out_constraint": "<@mesh, [{}]>" in caller_main,
      }
    print("REPORT" + json.dumps(report))
''')


@pytest.fixture(scope="module")
def report():
  proc = run_python(_SCRIPT, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = next(l for l in proc.stdout.splitlines() if l.startswith("REPORT"))
  return json.loads(line[len("REPORT"):])


@pytest.mark.parametrize("exporter", ["jax", "jaxport"])
def test_two_device_record_on_two_devices(report, exporter):
  r = report[exporter]
  assert r["nr_devices"] == 2
  assert r["values_equal"] and r["same_as_jax_call"]
  assert r["spec"] == r["jax_spec"]
  assert r["in_constraint"] and r["out_constraint"]

