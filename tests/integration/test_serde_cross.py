"""jaxport and jax.export read each other's blobs: same records, same numbers.

For every function of the corpus: export it with both, serialize both, read
jax's blob with jaxport and jaxport's blob with jax, call the results and
compare with ``jax.jit(f)``; the two blobs must also read back as equal records.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from _effect_helpers import OrderedTestEffect, UnorderedTestEffect, doubling_with

import jaxport


class Pair(NamedTuple):
  first: jax.Array
  second: jax.Array


@jax.tree_util.register_pytree_node_class
class Scaled:
  def __init__(self, value, scale):
    self.value, self.scale = value, scale

  def tree_flatten(self):
    return (self.value,), self.scale

  @classmethod
  def tree_unflatten(cls, scale, children):
    return cls(children[0], scale)


# Registered with jax.export first, then with jaxport under the same name, which keeps jax's.
for _register in (jax.export.register_namedtuple_serialization,
                  jaxport.register_namedtuple_serialization):
  _register(Pair, serialized_name="tests.cross.Pair")
for _register in (jax.export.register_pytree_node_serialization,
                  jaxport.register_pytree_node_serialization):
  _register(Scaled, serialized_name="tests.cross.Scaled",
            serialize_auxdata=lambda s: str(s).encode(),
            deserialize_auxdata=lambda b: float(b.decode()))

# jax registers none of its own result namedtuples for serialization; registered through
# jaxport, one is registered with jax.export too.
from jax._src.numpy.linalg import EighResult  # noqa: E402

jaxport.register_namedtuple_serialization(EighResult, serialized_name="jax.numpy.linalg.EighResult")

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal(4).astype(np.float32)
M33 = RNG.standard_normal((3, 3)).astype(np.float32)
I5 = np.arange(5, dtype=np.int32)


@dataclasses.dataclass
class Case:
  name: str
  fun: object
  args: tuple
  kwargs: dict = dataclasses.field(default_factory=dict)
  poly: str | None = None  # one spec for every positional argument
  platforms: tuple | None = None
  vjp_order: int = 0
  grad2: bool = False


def _specs(module, case):
  specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype), (case.args, case.kwargs))
  if case.poly is None:
    return specs
  scope = module.SymbolicScope()
  args = tuple(jax.ShapeDtypeStruct(module.symbolic_shape(case.poly, scope=scope), a.dtype)
               for a in specs[0])
  return args, specs[1]


_effectful = doubling_with(OrderedTestEffect(), UnorderedTestEffect())


KEY = jax.random.key(42)
CASES = [
    Case("sin", jnp.sin, (X4,)),
    Case("add_two", lambda x, y: x + y, (X4, X4)),
    Case("matmul", lambda a, b: a @ b, (M33, M33)),
    Case("int_ops", lambda n: n * 3 - 1, (I5,)),
    Case("mixed_dtypes", lambda x, n: x[:4] * n[:4].astype(jnp.float32), (X4, I5)),
    Case("float16", lambda x: jnp.exp(x), (X4.astype(np.float16),)),
    Case("bfloat16", lambda x: x * 2, (X4.astype(jnp.bfloat16),)),
    Case("float64_off_x64", lambda x: jnp.cumsum(x), (X4,)),
    Case("complex", lambda z: z * jnp.conj(z), ((X4 + 1j * X4).astype(np.complex64),)),
    Case("bool_out", lambda x: x > 0, (X4,)),
    Case("uint8", lambda u: u + jnp.uint8(1), (np.arange(4, dtype=np.uint8),)),
    Case("dict_in_out", lambda d: {"s": d["a"] + d["b"], "p": d["a"] * d["b"]}, ({"a": X4, "b": X4},)),
    Case("list_tuple_none", lambda xs: (xs[0], None, [xs[1] * 2]), ([X4, X4],)),
    Case("kwargs", lambda x, *, w, b: x * w + b, (X4,), {"w": X4, "b": X4}),
    Case("namedtuple", lambda p: Pair(p.second, p.first * 2), (Pair(X4, X4),)),
    Case("custom_node", lambda s: Scaled(s.value * s.scale, s.scale), (Scaled(X4, 3.0),)),
    Case("eigh_result", lambda m: jnp.linalg.eigh(m @ m.T), (M33,)),
    Case("reduce", lambda m: jnp.sum(m, axis=0), (M33,)),
    Case("symbolic_1d", lambda x: jnp.sin(x) * 2, (X4,), poly="n"),
    Case("symbolic_2d", lambda m: jnp.sum(m, axis=1), (M33,), poly="a, b"),
    Case("symbolic_two_args", lambda x, y: x * y, (X4, X4), poly="n"),
    Case("multi_platform", lambda x: jnp.cos(x), (X4,), platforms=("cpu", "cuda", "tpu")),
    Case("effects", _effectful, (X4,)),
    Case("prng_key", lambda k: jax.random.uniform(k, (3,)), (KEY,)),
    Case("prng_key_split", lambda k: jax.random.key_data(jax.random.split(k)), (KEY,)),
    Case("vjp_order_1", lambda x: jnp.sum(jnp.tanh(x)), (X4,), vjp_order=1),
    Case("vjp_order_2_grad2", lambda x: jnp.sum(jnp.sin(x) * x), (X4,), vjp_order=2, grad2=True),
    Case("where_select", lambda x, y: jnp.where(x > 0, x, y), (X4, X4)),
]


def _export(module, case):
  args, kwargs = _specs(module, case)
  return module.export(jax.jit(case.fun), platforms=case.platforms)(*args, **kwargs)


def _same_records(a, b):
  for field in dataclasses.fields(jaxport.Exported):
    if field.name in ("_get_vjp", "mlir_module_serialized"):
      continue
    if field.name == "disabled_safety_checks":
      assert list(map(str, a.disabled_safety_checks)) == list(map(str, b.disabled_safety_checks))
    elif field.name in ("in_avals", "out_avals"):
      assert [str(v) for v in getattr(a, field.name)] == [str(v) for v in getattr(b, field.name)]
    else:
      assert getattr(a, field.name) == getattr(b, field.name), field.name


def _close(got, want):
  got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
  assert jax.tree.structure(got) == jax.tree.structure(want)
  for g, w in zip(got_leaves, want_leaves):
    assert g.dtype == w.dtype
    np.testing.assert_allclose(np.asarray(g).astype(w.dtype if w.dtype.kind == "c" else np.float64),
                               np.asarray(w).astype(w.dtype if w.dtype.kind == "c" else np.float64),
                               rtol=2e-3, atol=1e-5)


def test_corpus_is_large_enough():
  assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cross_implementation(case):
  exp_jax, exp_ours = _export(jax.export, case), _export(jaxport, case)
  blob_jax = exp_jax.serialize(vjp_order=case.vjp_order)
  blob_ours = exp_ours.serialize(vjp_order=case.vjp_order)

  ours_from_jax = jaxport.deserialize(blob_jax)
  jax_from_ours = jax.export.deserialize(blob_ours)
  _same_records(ours_from_jax, jaxport.deserialize(blob_ours))
  _same_records(jax_from_ours, jax.export.deserialize(blob_jax))

  args = case.args
  if case.poly is not None:  # call with other sizes than the example
    args = tuple(np.concatenate([a, a]) if a.ndim == 1 else a[:2] for a in args)
  want = jax.jit(case.fun)(*args, **case.kwargs)
  if case.name.startswith("prng_key"):
    want, got_ours, got_jax = (jax.random.key_data(w) if jnp.issubdtype(w.dtype, jax.dtypes.prng_key) else w
                               for w in (want, jaxport.call(ours_from_jax)(*args), jax_from_ours.call(*args)))
  else:
    got_ours = jaxport.call(ours_from_jax)(*args, **case.kwargs)
    got_jax = jax_from_ours.call(*args, **case.kwargs)
  _close(got_ours, want)
  _close(got_jax, want)

  if case.grad2:  # second-order reverse mode through the nested VJPs
    def second(fun):
      return jax.grad(jax.grad(lambda s: fun(jnp.full((4,), s) * args[0])))(0.7)
    ref = second(case.fun)
    np.testing.assert_allclose(second(jaxport.call(ours_from_jax)), ref, rtol=1e-4)
    np.testing.assert_allclose(second(jax_from_ours.call), ref, rtol=1e-4)
