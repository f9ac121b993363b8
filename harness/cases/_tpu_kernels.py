"""The Pallas TPU kernels jax ships (``jax.experimental.pallas.ops.tpu``) as golden cases.

Each kernel is a tpu case with real outputs (recorded on a TPU, family ``run_tpu_kernels``),
in float32 and bfloat16 where it takes both; those of :data:`LOWERING_ONLY` also have a
lowering-only case a CPU host records for each jax release (family ``lowering_tpu_kernels``;
``tools/pallas_payloads.py`` compares their Mosaic payloads between releases). Both call the
same function on the same inputs.

Every case has a reference written with plain ``jax.numpy`` (:func:`cpu_reference`):
attention as softmax(scale * QK^T) V with the kernel's mask, the grouped matmul as one
product per group, the random kernel as ``jax.random.bits`` of the same key. The accelerator
script judges each recorded output against it on the CPU, with the tolerance stated per case
in :data:`WHY_TOLERANCE`.

A Mosaic payload holds the source locations of the kernel's operations, and jax's kernels
live in the environment's site-packages, whose path differs from machine to machine. The
kernels are therefore run from their installed source compiled under a file name relative to
site-packages (:func:`_stable_module`): the payload then depends on jax's kernel code, not on
where jax is installed.

Kernels left out, and why, are listed in :data:`UNREACHABLE`.
"""

from __future__ import annotations

import functools
import importlib
import math
import pathlib
import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxport.harness import Case, random_matrix

PLATFORM = "tpu"
FAMILY = "run_tpu_kernels"
LOWERING_FAMILY = "lowering_tpu_kernels"
PREFIX = "tpu_kernel_"
LOWERING_PREFIX = "tpu_lowering_kernel_"

_OPS = "jax.experimental.pallas.ops.tpu"

# jax's shipped TPU kernels that have no case here, and why.
UNREACHABLE = {
    "all_gather (ops/tpu/all_gather.py)": "needs more than one chip: it gathers over a mesh "
                                          "axis with remote DMAs between TPU cores",
    "philox (ops/tpu/random/philox.py)": "one random kernel is covered (threefry); philox "
                                         "lowers the same way with another hash",
    "example_kernel (ops/tpu/example_kernel.py)": "a documentation example, not a kernel "
                                                  "people ship",
    "ragged_paged_attention with its default block sizes": "chosen from the TPU generation at "
                                                           "trace time (tuned_block_sizes reads "
                                                           "the device kind), which a CPU host "
                                                           "does not have; the case gives its "
                                                           "block sizes",
}


def _stable_module(name: str, **replace: types.ModuleType) -> types.ModuleType:
  """jax's module ``name`` run from its installed source compiled under the file name it has
  relative to site-packages (``jax/experimental/...``), with the modules ``replace`` names in
  place of those it imported: source locations in a Mosaic payload then name the same file on
  every machine."""
  return _stable_module_cached(name, tuple(sorted(replace.items())))


@functools.cache
def _stable_module_cached(name: str, replace: tuple) -> types.ModuleType:
  installed = importlib.import_module(name)
  path = pathlib.Path(installed.__file__)
  relative = _relative(installed.__file__)
  module = types.ModuleType(name)
  module.__dict__.update(__file__=relative, __package__=installed.__package__)
  exec(compile(path.read_text(), relative, "exec"), module.__dict__)  # noqa: S102
  module.__dict__.update(dict(replace))
  return module


def _relative(path: str) -> str:
  return pathlib.Path(path).relative_to(pathlib.Path(jax.__file__).parent.parent).as_posix()


def _stable_function(fun: Callable, **replace: types.ModuleType) -> Callable:
  """jax's function ``fun`` with its code (and its nested functions') under the file name it
  has relative to site-packages, its globals those of its module with ``replace`` in place."""
  relative = _relative(fun.__code__.co_filename)

  def rename(code: types.CodeType) -> types.CodeType:
    consts = tuple(rename(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=relative, co_consts=consts)
  stable = types.FunctionType(rename(fun.__code__), {**fun.__globals__, **replace},
                              fun.__name__, fun.__defaults__, fun.__closure__)
  stable.__kwdefaults__ = fun.__kwdefaults__
  return stable


def _flash():
  return _stable_module(f"{_OPS}.flash_attention")


def _splash():
  mask = _stable_module(f"{_OPS}.splash_attention.splash_attention_mask")
  info = _stable_module(f"{_OPS}.splash_attention.splash_attention_mask_info", mask_lib=mask)
  kernel = _stable_module(f"{_OPS}.splash_attention.splash_attention_kernel", mask_lib=mask,
                          mask_info_lib=info)
  return mask, kernel


# --- references -------------------------------------------------------------------------------

_HIGHEST = jax.lax.Precision.HIGHEST


def _attention(q, k, v, scale: float, mask):
  """softmax(scale * q k^T, masked) v over the last two axes, in float32, cast to q's dtype."""
  logits = jnp.einsum("...qd,...kd->...qk", q.astype(jnp.float32), k.astype(jnp.float32),
                      precision=_HIGHEST) * scale
  logits = jnp.where(mask, logits, -jnp.inf)
  weights = jax.nn.softmax(logits, axis=-1)
  out = jnp.einsum("...qk,...kd->...qd", weights, v.astype(jnp.float32), precision=_HIGHEST)
  return out.astype(q.dtype)


def _causal(q_len: int, kv_len: int, offset: int = 0):
  """True where query i may see key j: j <= i + offset."""
  return jnp.arange(kv_len)[None, :] <= jnp.arange(q_len)[:, None] + offset


# --- flash attention ---------------------------------------------------------------------------

_FLASH_SHAPE = (1, 1, 128, 128)  # batch, heads, sequence, head dim
_FLASH_SCALE = 1.0 / math.sqrt(_FLASH_SHAPE[-1])


def _flash_attention(q, k, v):
  return _flash().flash_attention(q, k, v, causal=True, sm_scale=_FLASH_SCALE)


def _flash_reference(q, k, v):
  return _attention(q, k, v, _FLASH_SCALE, _causal(q.shape[-2], k.shape[-2]))


def _flash_grad(q, k, v, cotangent):
  """The kernel's own VJP (its backward Pallas kernels) at a given output cotangent."""
  _, vjp = jax.vjp(_flash_attention, q, k, v)
  return vjp(cotangent)


def _flash_grad_reference(q, k, v, cotangent):
  _, vjp = jax.vjp(_flash_reference, q, k, v)
  return vjp(cotangent)


# --- splash attention --------------------------------------------------------------------------

_SPLASH_SHAPE = (1, 256, 128)  # heads, sequence, head dim
_SPLASH_BLOCK = 128


def _splash_attention(q, k, v):
  """Multi-head splash attention with a causal mask; the kernel does not scale the logits."""
  mask_lib, kernel_lib = _splash()
  heads, seq, _ = q.shape
  mask = mask_lib.MultiHeadMask([mask_lib.CausalMask((seq, seq)) for _ in range(heads)])
  blocks = kernel_lib.BlockSizes(block_q=_SPLASH_BLOCK, block_kv=_SPLASH_BLOCK,
                                 block_kv_compute=_SPLASH_BLOCK)
  kernel = kernel_lib.make_splash_mha_single_device(mask, block_sizes=blocks)
  return kernel(q, k, v)


def _splash_reference(q, k, v):
  return _attention(q, k, v, 1.0, _causal(q.shape[-2], k.shape[-2]))


# --- paged attention ---------------------------------------------------------------------------

_PAGE_SIZE = 16
_PAGES_PER_SEQ = 4
_PAGED_Q_HEADS, _PAGED_KV_HEADS, _PAGED_DIM, _PAGED_TOTAL_PAGES = 4, 2, 128, 8


def _paged_attention(q, k_pages, v_pages, lengths, page_indices):
  """Decoding attention over a paged KV cache, grouped query heads, unscaled logits."""
  kernel = _stable_module(f"{_OPS}.paged_attention.paged_attention_kernel")
  return kernel.paged_attention(q, k_pages, v_pages, lengths, page_indices,
                                pages_per_compute_block=2)


def _paged_reference(q, k_pages, v_pages, lengths, page_indices):
  batch, q_heads, dim = q.shape
  kv_heads = k_pages.shape[0]
  group = q_heads // kv_heads
  # [kv_heads, batch, pages_per_seq * page_size, dim]
  k = k_pages[:, page_indices].reshape(kv_heads, batch, -1, dim)
  v = v_pages[:, page_indices].reshape(kv_heads, batch, -1, dim)
  qg = q.reshape(batch, kv_heads, group, dim).transpose(1, 0, 2, 3)
  visible = jnp.arange(k.shape[2])[None, None, None, :] < lengths[None, :, None, None]
  out = _attention(qg, k, v, 1.0, visible)  # [kv_heads, batch, group, dim]
  return out.transpose(1, 0, 2, 3).reshape(batch, q_heads, dim)


# --- ragged paged attention --------------------------------------------------------------------

_RAGGED_Q_LENS = (5, 11)  # a prefill of 5 new tokens and one of 11
_RAGGED_KV_LENS = (20, 40)
_RAGGED_Q_HEADS, _RAGGED_KV_HEADS, _RAGGED_DIM, _RAGGED_TOTAL_PAGES = 4, 2, 128, 8
_RAGGED_SCALE = 1.0 / math.sqrt(_RAGGED_DIM)


# The TPU the kernel is lowered for. Mosaic's lowering of some operations (``sign``) reads the
# TPU generation, which a CPU host has none of: an abstract mesh names the device (a v5e).
_TARGET_TPU = ("TPU v5 lite", 1)


def _ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
  """Mixed prefill and decode attention over a paged cache whose keys and values interleave
  by head; the block sizes are given (their default is read from the TPU generation), and
  the kernel is lowered for a v5e."""
  kernel = _stable_module(f"{_OPS}.ragged_paged_attention.kernel")
  device = jax.sharding.AbstractDevice(device_kind=_TARGET_TPU[0], num_cores=_TARGET_TPU[1],
                                       platform="tpu")
  mesh = jax.sharding.AbstractMesh((1,), ("kernel",), abstract_device=device)
  with jax.sharding.use_abstract_mesh(mesh):
    return kernel.ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens,
                                         num_seqs, sm_scale=_RAGGED_SCALE,
                                         num_kv_pages_per_block=2, num_queries_per_block=8)


def _ragged_reference(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
  del num_seqs  # every sequence of the case is live
  kv_heads = kv_pages.shape[2] // 2
  group = q.shape[1] // kv_heads
  outs = []
  for i, (q_len, kv_len) in enumerate(zip(_RAGGED_Q_LENS, _RAGGED_KV_LENS)):
    start = sum(_RAGGED_Q_LENS[:i])
    pages = kv_pages[page_indices[i]]  # [pages_per_seq, page_size, 2 * kv_heads, dim]
    k = pages[:, :, 0::2].reshape(-1, kv_heads, q.shape[-1])[:kv_len]
    v = pages[:, :, 1::2].reshape(-1, kv_heads, q.shape[-1])[:kv_len]
    k, v = (jnp.repeat(x, group, axis=1).transpose(1, 0, 2) for x in (k, v))
    qi = q[start:start + q_len].transpose(1, 0, 2)
    out = _attention(qi, k, v, _RAGGED_SCALE, _causal(q_len, kv_len, kv_len - q_len))
    outs.append(out.transpose(1, 0, 2))
  del cu_q_lens
  return jnp.concatenate(outs, axis=0)


# --- megablox grouped matmul ------------------------------------------------------------------

_GMM_GROUPS = (96, 0, 160)  # rows of lhs per group, one group empty
_GMM_K, _GMM_N = 128, 128


def _gmm(lhs, rhs, group_sizes):
  # gmm asks the default device whether it multiplies bfloat16: a CPU and a v5e both answer
  # yes, so a CPU host lowers what a v5e does.
  kernel = _stable_module(f"{_OPS}.megablox.gmm")
  return kernel.gmm(lhs, rhs, group_sizes, preferred_element_type=jnp.float32,
                    tiling=(128, 128, 128))


def _gmm_reference(lhs, rhs, group_sizes):
  del group_sizes  # the case's, fixed
  outs, start = [], 0
  for g, rows in enumerate(_GMM_GROUPS):
    outs.append(jnp.matmul(lhs[start:start + rows].astype(jnp.float32),
                           rhs[g].astype(jnp.float32), precision=_HIGHEST))
    start += rows
  return jnp.concatenate(outs, axis=0)


# --- tiled matmul ------------------------------------------------------------------------------


def _matmul(x, y):
  kernel = _stable_module(f"{_OPS}.matmul")
  return kernel.matmul(x, y, block_shape=(128, 128), block_k=128)


def _matmul_reference(x, y):
  return jnp.matmul(x.astype(jnp.float32), y.astype(jnp.float32),
                    precision=_HIGHEST).astype(x.dtype)


# --- random bits (threefry) --------------------------------------------------------------------

_RANDOM_SHAPE, _RANDOM_BLOCK = (16, 256), (8, 128)


def _threefry_bits(key):
  # The module registers a PRNG implementation when it runs, which may happen once: its
  # function is taken with its code under the stable file name instead.
  threefry = importlib.import_module(f"{_OPS}.random.threefry")
  count = _stable_function(threefry.threefry_2x32_count,
                           prng_utils=_stable_module(f"{_OPS}.random.prng_utils"))
  return count(key, _RANDOM_SHAPE, _RANDOM_SHAPE, block_size=_RANDOM_BLOCK)


def _threefry_reference(key):
  return jax.random.bits(jax.random.wrap_key_data(key, impl="threefry2x32"), _RANDOM_SHAPE,
                         jnp.uint32)


# --- inputs ------------------------------------------------------------------------------------


def _normal(seed: int, shape: tuple[int, ...], dtype) -> np.ndarray:
  return random_matrix(seed, shape, np.float32).astype(dtype)


def _qkv(seed: int, shape: tuple[int, ...], dtype):
  def make():
    return tuple(_normal(seed + i, shape, dtype) for i in range(3)), {}
  return make


def _flash_grad_inputs():
  (q, k, v), _ = _qkv(211, _FLASH_SHAPE, np.float32)()
  return (q, k, v, _normal(214, _FLASH_SHAPE, np.float32)), {}


def _page_table(seed: int, sequences: int, total: int) -> np.ndarray:
  """Distinct pages for each sequence, in a shuffled order."""
  order = np.random.default_rng(seed).permutation(total).astype(np.int32)
  return order[:sequences * _PAGES_PER_SEQ].reshape(sequences, _PAGES_PER_SEQ)


def _paged_inputs(seed: int, dtype):
  def make():
    # Queries come scaled by 1/sqrt(head dim), as callers of the kernel (which does not scale)
    # pass them.
    q = (_normal(seed, (2, _PAGED_Q_HEADS, _PAGED_DIM), np.float32)
         / math.sqrt(_PAGED_DIM)).astype(dtype)
    pages = (_PAGED_KV_HEADS, _PAGED_TOTAL_PAGES, _PAGE_SIZE, _PAGED_DIM)
    lengths = np.array([37, 64], np.int32)
    return (q, _normal(seed + 1, pages, dtype), _normal(seed + 2, pages, dtype), lengths,
            _page_table(seed + 3, 2, _PAGED_TOTAL_PAGES)), {}
  return make


def _ragged_inputs(seed: int, dtype):
  def make():
    tokens = sum(_RAGGED_Q_LENS)
    q = _normal(seed, (tokens, _RAGGED_Q_HEADS, _RAGGED_DIM), dtype)
    kv = _normal(seed + 1, (_RAGGED_TOTAL_PAGES, _PAGE_SIZE, 2 * _RAGGED_KV_HEADS, _RAGGED_DIM),
                 dtype)
    cu = np.cumsum((0,) + _RAGGED_Q_LENS).astype(np.int32)
    return (q, kv, np.array(_RAGGED_KV_LENS, np.int32),
            _page_table(seed + 2, len(_RAGGED_Q_LENS), _RAGGED_TOTAL_PAGES), cu,
            np.array([len(_RAGGED_Q_LENS)], np.int32)), {}
  return make


def _gmm_inputs(seed: int, dtype):
  def make():
    lhs = _normal(seed, (sum(_GMM_GROUPS), _GMM_K), dtype)
    rhs = _normal(seed + 1, (len(_GMM_GROUPS), _GMM_K, _GMM_N), dtype)
    return (lhs, rhs, np.array(_GMM_GROUPS, np.int32)), {}
  return make


def _matmul_inputs(seed: int, dtype):
  def make():
    return (_normal(seed, (256, 128), dtype), _normal(seed + 1, (128, 256), dtype)), {}
  return make


def _key():
  return (np.array([0, 42], np.uint32),), {}


# --- tolerances --------------------------------------------------------------------------------

# A kernel's float32 products run on the MXU at default precision (bfloat16 passes), against
# float32 products at HIGHEST in the reference: sums of 128 unit-normal products are about 11
# in size and lose about 2**-8 of each term.
_F32_PRODUCTS = (2e-2, 1.5e-1)
# Attention outputs are weighted means of unit-normal values: the logits' error from bfloat16
# passes (about 2**-8 of logits of size ~1) moves the weights by about 1%.
_F32_ATTENTION = (2e-2, 3e-2)
# Splash attention does not scale its logits (the caller does; the case does not, to keep the
# kernel's own call): logits of size ~sqrt(128) ~ 11 lose ~2**-8 of each product in bfloat16
# passes, which moves a weight by up to ~10% (0.098 measured on a v5e, 113 of 32768 elements
# above 0.03).
_F32_UNSCALED_ATTENTION = (2e-2, 1.5e-1)
# bfloat16 inputs, products accumulated in float32, output rounded to bfloat16 (2**-8): the
# kernel also rounds the softmax weights to bfloat16 before the second product.
_BF16_ATTENTION = (4e-2, 4e-2)
_BF16_PRODUCTS = (2e-2, 1.5e-1)

WHY_TOLERANCE = {
    "flash_attention_f32": "the kernel's float32 products run as bfloat16 passes on the MXU",
    "flash_attention_vjp_f32": "the kernel's float32 products run as bfloat16 passes on the MXU",
    "flash_attention_grad_f32": "the backward kernels' float32 products run as bfloat16 passes",
    "splash_attention_causal_f32": "the kernel's float32 products run as bfloat16 passes, on "
                                   "logits it does not scale",
    "paged_attention_f32": "the kernel's float32 products run as bfloat16 passes",
    "ragged_paged_attention_f32": "the kernel's float32 products run as bfloat16 passes",
    "gmm_f32": "the kernel's float32 products run as bfloat16 passes on the MXU",
    "matmul_f32": "the kernel's float32 products run as bfloat16 passes on the MXU",
    "flash_attention_bf16": "bfloat16 output, and softmax weights rounded to bfloat16",
    "splash_attention_causal_bf16": "bfloat16 output, and softmax weights rounded to bfloat16",
    "paged_attention_bf16": "bfloat16 output, and softmax weights rounded to bfloat16",
    "ragged_paged_attention_bf16": "bfloat16 output, and softmax weights rounded to bfloat16",
    "gmm_bf16": "bfloat16 inputs: the kernel and the reference sum the same products in "
                "another order",
    "matmul_bf16": "bfloat16 output of sums of 128 products",
}

# (suffix, kernel, reference, inputs, (rtol, atol), jax flags)
_KERNELS = (
    ("flash_attention_f32", _flash_attention, _flash_reference,
     _qkv(201, _FLASH_SHAPE, np.float32), _F32_ATTENTION, ()),
    ("flash_attention_bf16", _flash_attention, _flash_reference,
     _qkv(204, _FLASH_SHAPE, jnp.bfloat16), _BF16_ATTENTION, ()),
    ("flash_attention_vjp_f32", _flash_attention, _flash_reference,
     _qkv(207, _FLASH_SHAPE, np.float32), _F32_ATTENTION, ()),
    ("flash_attention_grad_f32", _flash_grad, _flash_grad_reference, _flash_grad_inputs,
     _F32_ATTENTION, ()),
    ("splash_attention_causal_f32", _splash_attention, _splash_reference,
     _qkv(221, _SPLASH_SHAPE, np.float32), _F32_UNSCALED_ATTENTION, ()),
    ("splash_attention_causal_bf16", _splash_attention, _splash_reference,
     _qkv(224, _SPLASH_SHAPE, jnp.bfloat16), _BF16_ATTENTION, ()),
    ("paged_attention_f32", _paged_attention, _paged_reference, _paged_inputs(231, np.float32),
     _F32_ATTENTION, ()),
    ("paged_attention_bf16", _paged_attention, _paged_reference,
     _paged_inputs(235, jnp.bfloat16), _BF16_ATTENTION, ()),
    ("ragged_paged_attention_f32", _ragged_paged_attention, _ragged_reference,
     _ragged_inputs(241, np.float32), _F32_ATTENTION, ()),
    ("ragged_paged_attention_bf16", _ragged_paged_attention, _ragged_reference,
     _ragged_inputs(245, jnp.bfloat16), _BF16_ATTENTION, ()),
    ("gmm_f32", _gmm, _gmm_reference, _gmm_inputs(251, np.float32), _F32_PRODUCTS, ()),
    ("gmm_bf16", _gmm, _gmm_reference, _gmm_inputs(253, jnp.bfloat16), _BF16_PRODUCTS, ()),
    ("matmul_f32", _matmul, _matmul_reference, _matmul_inputs(261, np.float32), _F32_PRODUCTS,
     ()),
    ("matmul_bf16", _matmul, _matmul_reference, _matmul_inputs(263, jnp.bfloat16),
     _BF16_PRODUCTS, ()),
    ("threefry_bits", _threefry_bits, _threefry_reference, _key, None,
     (("jax_threefry_partitionable", True),)),
)

# The kernels recorded lowering-only for each jax release: one dtype each (the payload of the
# other dtype moves with it); flash attention's backward kernels through the gradient case, whose
# module holds them beside the forward kernel that saves its residuals.
LOWERING_ONLY = ("flash_attention_f32", "flash_attention_grad_f32",
                 "splash_attention_causal_f32", "paged_attention_f32",
                 "ragged_paged_attention_f32", "gmm_f32", "matmul_f32", "threefry_bits",
                 "flash_attention_bf16", "splash_attention_causal_bf16", "paged_attention_bf16",
                 "ragged_paged_attention_bf16", "gmm_bf16", "matmul_bf16")
# The lowering-only case whose entries recorded by a jax release are the evidence for a tpu
# case's (its ``lowering_twin``): a CPU host records them under every jax, a TPU machine only
# under its own. Each tpu case's own sibling, but the VJP case's: its module is flash
# attention's forward on inputs of the same shapes.
TWIN = {"flash_attention_vjp_f32": "flash_attention_f32"}

# The order of the VJP a case records. jaxport records one by default where the function holds
# a custom_vjp rule (flash and splash attention): here only where it is asked for. The tpu
# cross-check computes no VJP, so flash attention's forward is judged by a case without one,
# its backward kernels by the gradient case (the kernel's own VJP at a given cotangent, against
# the reference's), and the VJP case records and replays the VJP (both readers on a TPU).
# Splash attention's backward needs block sizes of its own, which the case does not give.
VJP_ORDER = {"flash_attention_vjp_f32": 1}

_REFERENCES = {suffix: reference for suffix, _, reference, *_ in _KERNELS}
_KERNEL_FUNCTIONS = {suffix: kernel for suffix, kernel, *_ in _KERNELS}


def suffix_of(case_id: str) -> str | None:
  """The kernel row a case id of this module names, or None for another case."""
  for prefix in (PREFIX, LOWERING_PREFIX):
    if case_id.startswith(prefix) and case_id[len(prefix):] in _REFERENCES:
      return case_id[len(prefix):]
  return None


def cpu_reference(case_id: str) -> Callable | None:
  """The plain ``jax.numpy`` function a kernel case's outputs are judged against on the CPU;
  None for a case of another module."""
  suffix = suffix_of(case_id)
  return None if suffix is None else _REFERENCES[suffix]


def kernel_function(case_id: str) -> Callable | None:
  """The kernel function of a case of this module (for running it interpreted); None for a
  case of another module."""
  suffix = suffix_of(case_id)
  return None if suffix is None else _KERNEL_FUNCTIONS[suffix]


def cases() -> list[Case]:
  """The shipped kernels' tpu cases (real outputs) and their lowering-only CPU siblings."""
  out = []
  for suffix, kernel, _, make, tolerance, flags in _KERNELS:
    rtol, atol = tolerance or (None, None)
    twin = TWIN.get(suffix, suffix)
    out.append(Case(f"{PREFIX}{suffix}", FAMILY, kernel, make, targets=("tpu_custom_call",),
                    checker="allclose", rtol=rtol, atol=atol, host_platform=PLATFORM,
                    jax_flags=flags, vjp_order=VJP_ORDER.get(suffix, 0),
                    lowering_twin=f"{LOWERING_PREFIX}{twin}" if twin in LOWERING_ONLY else None))
    if suffix in LOWERING_ONLY:
      out.append(Case(f"{LOWERING_PREFIX}{suffix}", LOWERING_FAMILY, kernel, make,
                      targets=("tpu_custom_call",), platforms=(PLATFORM,), lowering_only=True,
                      checker="none", jax_flags=flags, vjp_order=0))
  return out
