"""Cases a TPU machine records and replays: every stable tpu target, Pallas TPU kernels, and
programs whose TPU lowering or numerics differ from the CPU's.

- The tpu rows of the lowering-only table (``_lowering_only``: Eigh, Qr with
  ProductOfElementaryHouseholderReflectors, LuDecomposition, ApproxTopK), run,
  with the checker of the CPU case of the same operation.
- Three Pallas TPU kernels (``tpu_custom_call``, compiled to Mosaic): a matmul
  tiled over a grid with an accumulator, a gather whose block index map reads
  scalars prefetched into SMEM, and a bfloat16 kernel.
- Programs the TPU lowers or computes otherwise than the CPU: matrix products at
  default precision (bf16 passes on a TPU), a convolution, sort, top_k, cumsum,
  the RNG bit generator, reduce_window, scatter, gather, a while loop, and one
  export for both the CPU and the TPU.

Each recorded output is cross-checked against the same case computed on the CPU
(``tools/accelerator/replay_on_accelerator.sh``) with the case's checker and its
tolerance per output; :func:`cpu_reference` gives the CPU function of a Pallas
case (the same kernel, interpreted). A tolerance wider than its dtype's default
says why in :data:`WHY_TOLERANCE`, and the matrix-product precision a case uses
is a jax flag, so its manifest records it.

A Pallas kernel's Mosaic payload (the call's ``backend_config``) holds the
source locations of the kernel's operations. The kernels and their callers are
pinned to a fixed file name and first line (:func:`_pinned`), so the payload
depends on the kernel's code, not on where the checkout lies or on lines added
above it; a changed kernel (another block size) still changes it.

A CPU run checks these entries without running them; ``pytest harness/
--platform=tpu`` on a TPU machine records (``--record``) and replays them.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from harness.cases import _lowering_only
from jaxport.harness import Case, random_matrix

PLATFORM = "tpu"
FAMILY = "run_tpu"
PREFIX = "tpu_run_"

# The checker of each tpu row of the lowering-only table: the CPU LAPACK case's of the same
# operation.
CHECKERS = {"eigh_f32": "eigh", "qr_f32": "qr", "lu_f32": "lu", "approx_top_k_f32": "top_k"}

# Matrix products at jax's default precision: a TPU multiplies float32 in bfloat16 passes, so
# such a case is compared with the CPU (which computes in float32) at about bfloat16's accuracy.
DEFAULT_PRECISION = (("jax_default_matmul_precision", "default"),)
HIGHEST_PRECISION = (("jax_default_matmul_precision", "highest"),)
_BF16_PASSES = (2e-2, 2e-2)
# Sums of n products of unit-normal numbers are about sqrt(n) in size; bfloat16 passes lose
# about 2**-8 of each, so the absolute error grows with n (measured on a v5e against the CPU:
# 0.084 for n = 64, 0.048 for a 27-term convolution, 0.17 for n = 256).
_BF16_SUMS_64 = (2e-2, 1e-1)
_BF16_SUMS_256 = (2e-2, 2.5e-1)
# The TPU's tanh and log approximations (8.1e-5 from the CPU's for softplus * tanh).
_TPU_TRANSCENDENTALS = (1e-3, 1e-4)
WHY_TOLERANCE = {
    "matmul_f32_default": "float32 products at default precision run as bfloat16 passes on a "
                          "TPU, against float32 on the CPU",
    "pallas_matmul_f32": "the kernel's jnp.dot runs at default precision on the MXU",
    "conv_f32": "the convolution runs at default precision on the MXU",
    "cpu_and_tpu_f32": "the TPU approximates tanh and log otherwise than the CPU",
    "eigh_f32": "the TPU's Jacobi eigensolver runs its products at default precision",
    "qr_f32": "the TPU's Householder QR runs its products at default precision",
    "lu_f32": "the TPU's blocked LU runs its products at default precision",
}

# --- Pallas kernels ----------------------------------------------------------------------------

_KERNEL_FILE = "<jaxport tpu kernels>"


def _pinned(fun: Callable, first_line: int) -> Callable:
  """``fun`` with its code (and its nested functions') given the file name ``_KERNEL_FILE`` and
  the first line ``first_line``, so that the source locations a Mosaic payload holds depend
  only on the function's own lines."""
  def pin(code: types.CodeType, line: int) -> types.CodeType:
    consts = tuple(pin(c, line + c.co_firstlineno - code.co_firstlineno)
                   if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=_KERNEL_FILE, co_firstlineno=line, co_consts=consts)
  pinned = types.FunctionType(pin(fun.__code__, first_line), fun.__globals__, fun.__name__,
                              fun.__defaults__, fun.__closure__)
  # Not functools.wraps: its ``__wrapped__`` would lead jax back to the unpinned function.
  pinned.__qualname__, pinned.__doc__ = fun.__qualname__, fun.__doc__
  pinned.__kwdefaults__ = fun.__kwdefaults__
  return pinned


_TILE = 128


def _matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
  @pl.when(pl.program_id(2) == 0)
  def _():
    acc_ref[...] = jnp.zeros_like(acc_ref)

  acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

  @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
  def _():
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _pallas_matmul(x, y, interpret: bool = False):
  m, k = x.shape
  n = y.shape[1]
  return pl.pallas_call(
      _pinned(_matmul_kernel, 1000),
      grid=(m // _TILE, n // _TILE, k // _TILE),
      in_specs=[pl.BlockSpec((_TILE, _TILE), lambda i, j, s: (i, s)),
                pl.BlockSpec((_TILE, _TILE), lambda i, j, s: (s, j))],
      out_specs=pl.BlockSpec((_TILE, _TILE), lambda i, j, s: (i, j)),
      out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
      scratch_shapes=[pltpu.VMEM((_TILE, _TILE), jnp.float32)],
      interpret=interpret)(x, y)


def _gather_kernel(rows_ref, x_ref, o_ref):
  o_ref[...] = x_ref[...] * 2.0


_ROWS = 8


def _pallas_gather_rows(rows, x, interpret: bool = False):
  """Blocks of ``_ROWS`` rows of ``x`` picked by the prefetched block numbers ``rows``, doubled."""
  spec = pltpu.PrefetchScalarGridSpec(
      num_scalar_prefetch=1, grid=(rows.shape[0],),
      # Block indices are int32 (a Python 0 would be int64 with 64-bit types on, which Mosaic
      # refuses).
      in_specs=[pl.BlockSpec((_ROWS, x.shape[1]), lambda i, rows_ref: (rows_ref[i], jnp.int32(0)))],
      out_specs=pl.BlockSpec((_ROWS, x.shape[1]), lambda i, rows_ref: (i, jnp.int32(0))))
  return pl.pallas_call(
      _pinned(_gather_kernel, 2000), grid_spec=spec,
      out_shape=jax.ShapeDtypeStruct((rows.shape[0] * _ROWS, x.shape[1]), x.dtype),
      interpret=interpret)(rows, x)


def _bf16_kernel(x_ref, y_ref, o_ref):
  o_ref[...] = (x_ref[...] * y_ref[...] + x_ref[...]).astype(o_ref.dtype)


def _pallas_fma_bf16(x, y, interpret: bool = False):
  return pl.pallas_call(
      _pinned(_bf16_kernel, 3000), out_shape=jax.ShapeDtypeStruct(x.shape, jnp.bfloat16),
      interpret=interpret)(x, y)


_pallas_matmul = _pinned(_pallas_matmul, 1100)
_pallas_gather_rows = _pinned(_pallas_gather_rows, 2100)
_pallas_fma_bf16 = _pinned(_pallas_fma_bf16, 3100)

# Pallas case suffix -> the same kernel interpreted, which the CPU runs.
_INTERPRETED = {
    "pallas_matmul_f32": functools.partial(_pallas_matmul, interpret=True),
    "pallas_prefetch_gather_f32": functools.partial(_pallas_gather_rows, interpret=True),
    "pallas_fma_bf16": functools.partial(_pallas_fma_bf16, interpret=True),
}


def cpu_reference(case_id: str) -> Callable | None:
  """The function the CPU computes for a tpu case whose own function only a TPU runs (a Pallas
  kernel, interpreted); None for the others, whose own function runs on the CPU."""
  return _INTERPRETED.get(case_id.removeprefix(PREFIX))

# --- programs ----------------------------------------------------------------------------------


def _matrices(seed: int, n: int, dtype=np.float32):
  def make():
    return (random_matrix(seed, (n, n), dtype), random_matrix(seed + 1, (n, n), dtype)), {}
  return make


def _bf16_matrices(seed: int, shape: tuple[int, int]):
  def make():
    a = random_matrix(seed, shape, np.float32).astype(jnp.bfloat16)
    b = random_matrix(seed + 1, shape, np.float32).astype(jnp.bfloat16)
    return (a, b), {}
  return make


def _int8_matrices():
  r = np.random.default_rng(71)
  return (r.integers(-128, 128, (64, 64), dtype=np.int8),
          r.integers(-128, 128, (64, 64), dtype=np.int8)), {}


def _vector(seed: int, shape: tuple[int, ...]):
  def make():
    return (random_matrix(seed, shape, np.float32),), {}
  return make


def _gather_inputs():
  return (np.array([3, 0, 2], np.int32), random_matrix(73, (4 * _ROWS, 128), np.float32)), {}


def _scatter_inputs():
  x = random_matrix(74, (16, 8), np.float32)
  idx = np.array([1, 5, 1, 15, 0, 5], np.int32)
  return (x, idx, random_matrix(75, (6, 8), np.float32)), {}


def _take_inputs():
  return (random_matrix(76, (32, 8), np.float32), np.array([31, 0, 7, 7, 12], np.int32)), {}


def _conv_inputs():
  return (random_matrix(77, (2, 3, 16, 16), np.float32),
          random_matrix(78, (4, 3, 3, 3), np.float32)), {}


def _rng_key():
  return (np.array([1, 2, 3, 4], np.uint32),), {}


def _matmul(a, b):
  return a @ b


def _int8_dot(a, b):
  return lax.dot(a, b, preferred_element_type=jnp.int32)


def _conv(x, w):
  return lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                  dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _sort(x):
  return jnp.sort(x, axis=-1), jnp.argsort(x, axis=-1, stable=True).astype(jnp.int32)


def _top_k(x):
  values, indices = lax.top_k(x, 3)
  return values, indices.astype(jnp.int32)


def _cumsum(x):
  return jnp.cumsum(x, axis=0), lax.cummax(x, axis=1)


def _rng_bits(key):
  _, bits = lax.rng_bit_generator(key, (4, 8), dtype=jnp.uint32,
                                  algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
  return bits


def _max_pool(x):
  return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2), (1, 2, 2), "VALID")


def _scatter_add(x, idx, updates):
  return x.at[idx].add(updates)


def _take(x, idx):
  return jnp.take(x, idx, axis=0)


def _newton_sqrt(x):
  def body(state):
    i, y = state
    return i + 1, 0.5 * (y + x / y)
  _, y = lax.while_loop(lambda s: s[0] < 6, body, (jnp.int32(0), jnp.ones_like(x)))
  return y


def _softplus(x):
  return jnp.logaddexp(x, 0.0) * jnp.tanh(x)


def _positive():
  return (np.abs(random_matrix(79, (8, 16), np.float32)) + 0.5,), {}


# (suffix, function, inputs, targets, checker, (rtol, atol) or None, jax flags, platforms)
_PROGRAMS = (
    ("pallas_matmul_f32", _pallas_matmul, _matrices(61, 256), ("tpu_custom_call",), "allclose",
     _BF16_SUMS_256, DEFAULT_PRECISION, None),
    ("pallas_prefetch_gather_f32", _pallas_gather_rows, _gather_inputs, ("tpu_custom_call",),
     "allclose", None, (), None),
    ("pallas_fma_bf16", _pallas_fma_bf16, _bf16_matrices(62, (16, 128)), ("tpu_custom_call",),
     "allclose", None, (), None),
    ("matmul_bf16", _matmul, _bf16_matrices(63, (64, 64)), (), "allclose", None,
     DEFAULT_PRECISION, None),
    ("matmul_f32_default", _matmul, _matrices(64, 64), (), "allclose", _BF16_SUMS_64,
     DEFAULT_PRECISION, None),
    ("matmul_f32_highest", _matmul, _matrices(65, 64), (), "allclose", None, HIGHEST_PRECISION,
     None),
    ("dot_int8", _int8_dot, _int8_matrices, (), "allclose", None, (), None),
    ("conv_f32", _conv, _conv_inputs, (), "allclose", _BF16_SUMS_64, DEFAULT_PRECISION, None),
    ("sort_f32", _sort, _vector(66, (4, 64)), (), "allclose", None, (), None),
    ("top_k_f32", _top_k, _vector(67, (4, 64)), (), "top_k", None, (), None),
    ("cumsum_f32", _cumsum, _vector(68, (16, 16)), (), "allclose", None, (), None),
    ("rng_bit_generator", _rng_bits, _rng_key, (), "allclose", None, (), None),
    ("reduce_window_f32", _max_pool, _vector(69, (2, 8, 8)), (), "allclose", None, (), None),
    ("scatter_add_f32", _scatter_add, _scatter_inputs, (), "allclose", None, (), None),
    ("gather_f32", _take, _take_inputs, (), "allclose", None, (), None),
    ("while_loop_f32", _newton_sqrt, _positive, (), "allclose", None, (), None),
    ("cpu_and_tpu_f32", _softplus, _vector(70, (8, 16)), (), "allclose", _TPU_TRANSCENDENTALS,
     (), ("cpu", "tpu")),
)


# The Pallas programs a CPU host also exports, lowering-only, under each jax release (a
# CPU-only jaxlib lowers a Pallas TPU kernel to its Mosaic payload; only a TPU compiles and
# runs it): each tpu program's ``lowering_twin``, the evidence for its entries under a jax the
# TPU machine did not record them with.
PALLAS_TWINS = ("pallas_matmul_f32", "pallas_prefetch_gather_f32", "pallas_fma_bf16")


def cases() -> list[Case]:
  """The tpu cases: the lowering-only table's tpu rows run, the Pallas kernels, the programs;
  and the Pallas programs exported on a CPU host, lowering-only (:data:`PALLAS_TWINS`)."""
  out = [Case(f"{PLATFORM}_{suffix}", f"lowering_{PLATFORM}", fun, make, targets=targets,
              platforms=(PLATFORM,), lowering_only=True, checker="none", jax_flags=flags)
         for suffix, fun, make, targets, _, _, flags, _ in _PROGRAMS if suffix in PALLAS_TWINS]
  for platform, suffix, fun, make, targets, flags in _lowering_only._TABLE:
    if platform != PLATFORM or fun is None:
      continue
    if suffix not in CHECKERS:
      raise ValueError(f"harness/cases/_tpu.py: the tpu lowering-only row {suffix!r} has no "
                       "checker; add it to CHECKERS")
    tolerance = _BF16_PASSES if suffix in WHY_TOLERANCE else (None, None)
    out.append(Case(f"{PREFIX}{suffix}", FAMILY, fun, make, targets=targets,
                    checker=CHECKERS[suffix], rtol=tolerance[0], atol=tolerance[1],
                    host_platform=PLATFORM, jax_flags=flags or DEFAULT_PRECISION))
  for suffix, fun, make, targets, checker, tolerance, flags, platforms in _PROGRAMS:
    rtol, atol = tolerance or (None, None)
    out.append(Case(f"{PREFIX}{suffix}", FAMILY, fun, make, targets=targets, checker=checker,
                    rtol=rtol, atol=atol, host_platform=PLATFORM, platforms=platforms,
                    jax_flags=flags,
                    lowering_twin=f"{PLATFORM}_{suffix}" if suffix in PALLAS_TWINS else None))
  return out
