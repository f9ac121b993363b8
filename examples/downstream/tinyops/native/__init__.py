"""tinyops' optional native kernel: ``softsign`` through an XLA FFI target of its own.

``run.sh`` compiles ``softsign.cc`` into ``libtinyops_native.so`` beside this
file when a C++ compiler and jax's FFI headers are present. :func:`available`
loads the library and registers its handler with jax as the custom-call target
:data:`TARGET` (once per process); without the library, the kernel is simply
not there.
"""

import ctypes
import functools
from pathlib import Path

import jax
import jax.numpy as jnp

TARGET = "tinyops_softsign"
LIBRARY = Path(__file__).resolve().parent / "libtinyops_native.so"


@functools.cache
def available() -> bool:
  """Whether the native library is built; registers its target with jax the first time."""
  if not LIBRARY.is_file():
    return False
  lib = ctypes.cdll.LoadLibrary(str(LIBRARY))
  jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.TinyopsSoftsign), platform="cpu")
  return True


def softsign(x: jax.Array) -> jax.Array:
  """``x / (1 + |x|)`` for float32 ``x``, computed by the native kernel."""
  if not available():
    raise RuntimeError(f"{LIBRARY} is not built; run ./run.sh build (it needs a C++ compiler)")
  x = jnp.asarray(x, jnp.float32)
  return jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
