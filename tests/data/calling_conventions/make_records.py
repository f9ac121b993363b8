"""Write the serialized records of ``test_call_conventions.py`` for calling convention versions 6, 7 and 8.

Run with jax 0.4.25, the newest release that still produces these versions
(through its ``jax_serialization_version`` flag):

    PY=$(python -c "from jaxport.multirelease import _envs; print(_envs.ensure_venv('0.4.25'))")
    "$PY" tests/data/calling_conventions/make_records.py tests/data/calling_conventions

Each record is ``f(x) = (sin(x) * 2, sum(x, axis=0))`` for ``x: f32[b, 3]``,
exported for ``("cpu", "tpu")`` so that its ``main`` takes a platform index and
computes the dimension variable ``b`` from the argument's shape.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import export

VERSIONS = (6, 7, 8)


def f(x):
  return jnp.sin(x) * 2, jnp.sum(x, axis=0)


def main(out: str) -> None:
  assert jax.__version__ == "0.4.25", jax.__version__
  for version in VERSIONS:
    jax.config.update("jax_serialization_version", version)
    spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, 3"), np.float32)
    exp = export.export(jax.jit(f), lowering_platforms=("cpu", "tpu"))(spec)
    assert exp.mlir_module_serialization_version == version
    Path(out, f"sin_sum_v{version}.bin").write_bytes(export.serialize(exp))


if __name__ == "__main__":
  main(sys.argv[1])
