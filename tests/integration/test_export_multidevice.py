"""Export of a function sharded over two devices, in a subprocess with two host CPU devices.

jax fixes its device count at start-up, so this runs a child interpreter with
``--xla_force_host_platform_device_count=2`` and checks what it reports.
"""

import json
import os
import textwrap

import pytest

from _python_child import run_python

_CHILD = textwrap.dedent("""
    import json
    import jax, jax.export, jax.numpy as jnp, numpy as np
    from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P
    import jaxport

    mesh = Mesh(jax.devices(), ("a",))
    s = NamedSharding(mesh, P("a"))
    f = jax.jit(lambda x, y: (x * 2, y + 1), in_shardings=(s, None), out_shardings=(s, None))
    args = (np.arange(8, dtype=np.float32), np.ones(3, np.float32))
    ours, theirs = [m.export(f)(*args) for m in (jaxport, jax.export)]
    out = {
        "nr_devices": ours.nr_devices,
        "same_fields": all(getattr(ours, n) == getattr(theirs, n) for n in (
            "nr_devices", "_in_named_shardings", "_out_named_shardings", "in_avals", "out_avals",
            "mlir_module_serialized")),
        "num_partitions": "mhlo.num_partitions = 2 : i32" in ours.mlir_module(),
        "in_axes": list(ours._in_named_shardings[0].mesh.axis_sizes),
        "on_mesh": list(ours.in_shardings_jax(mesh)[0].spec),
        "on_mesh_same_as_jax": ours.in_shardings_jax(mesh) == theirs.in_shardings_jax(mesh),
        "call": np.asarray(jaxport.call(ours)(jax.device_put(args[0], s), args[1])[0]).tolist(),
    }
    try:
      ours.out_shardings_jax(AbstractMesh((4,), ("a",)))
    except ValueError as err:
      out["mismatch"] = str(err)
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_two_device_export_matches_jax():
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
  # Forked from a parent that imported jax but started no backend: the child's starts with
  # two devices.
  proc = run_python(_CHILD, env=env, timeout=120)
  assert proc.returncode == 0, proc.stderr
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  assert out["nr_devices"] == 2
  assert out["same_fields"]
  assert out["num_partitions"]
  assert out["in_axes"] == [2]
  assert out["on_mesh"] == ["a"]
  assert out["on_mesh_same_as_jax"]
  assert out["call"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
  assert out["mismatch"].startswith("NamedSharding new mesh AbstractMesh('a': 4")
  assert "For result[0] (flat): expected axis names ('a',), sizes (2,)" in out["mismatch"]
