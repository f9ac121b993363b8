"""Small real models, exported and shipped as serialized JAX functions.

Each module builds its model with a well-known library and exposes the function a service
would export: a flax CNN and transformer block, an optax AdamW training step, an equinox MLP,
and LAPACK-backed linear algebra.
"""
