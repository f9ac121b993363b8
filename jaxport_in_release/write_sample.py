"""Run in the newest jax release's own environment: a sample blob of that release's own
``jax.export`` (``sin`` of a float32[3]), for measuring what each release's reader reads.

``python write_sample.py OUT``: writes the blob to ``argv[1]``. It never imports jaxport.
"""
import sys, jax, jax.numpy as jnp
from jax import export
exp = export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
open(sys.argv[1], "wb").write(exp.serialize())
