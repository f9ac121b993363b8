"""The exported VJP: its signature, shardings, numerics, and equality with jax's."""

import dataclasses

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.export import _vjp

X = np.linspace(0.1, 1.0, 4, dtype=np.float32)
N = np.arange(3, dtype=np.int32)


def f(x, n, *, w):
  return {"y": jnp.sin(x) * w, "count": n * 2}


def _export(module):
  return module.export(jax.jit(f))(X, N, w=X)


def test_vjp_signature_primals_then_output_cotangents():
  exp = _export(jaxport)
  vjp = exp.vjp()
  assert vjp.fun_name == "fun_vjp_jax"
  # Outputs flatten as ("count", "y"); the integer output's cotangent is float0.
  assert [str(a) for a in vjp.in_avals] == ["float32[4]", "int32[3]", "float32[4]", "float0[3]", "float32[4]"]
  assert vjp.out_avals[0] == exp.in_avals[0]
  assert [str(a) for a in vjp.out_avals] == ["float32[4]", "float0[3]", "float32[4]"]
  assert vjp.in_tree == jax.tree.structure((tuple(range(5)), {}))
  assert vjp.platforms == exp.platforms


def test_vjp_record_equals_jaxs():
  ours, theirs = [m.vjp() for m in [_export(jaxport), _export(jax.export)]]
  for field in dataclasses.fields(jax.export.Exported):
    if field.name in ("_get_vjp", "disabled_safety_checks"):
      continue
    assert getattr(ours, field.name) == getattr(theirs, field.name), field.name


def test_vjp_computes_the_pullback():
  exp = _export(jaxport)
  ct_y = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
  ct_count = np.zeros(3, jax.dtypes.float0)
  got = jaxport.call(exp.vjp())(X, N, X, ct_count, ct_y)
  _, pullback = jax.vjp(lambda x, w: f(x, N, w=w)["y"], X, X)
  want_x, want_w = pullback(ct_y)
  np.testing.assert_allclose(got[0], want_x, rtol=1e-6)
  np.testing.assert_allclose(got[2], want_w, rtol=1e-6)
  assert got[1].dtype == jax.dtypes.float0


def test_vjp_is_built_on_demand_and_nests(monkeypatch):
  built = []
  real = _vjp.vjp_function
  monkeypatch.setattr(_vjp, "vjp_function", lambda *a, **k: built.append(1) or real(*a, **k))
  exp = jaxport.export(jax.jit(jnp.sin))(X)
  assert built == []
  second = exp.vjp().vjp()
  assert len(built) == 2
  assert [str(a) for a in second.in_avals] == ["float32[4]"] * 3  # x, ct_y, ct_of_ct_x
  grad2 = jax.grad(lambda x: jax.grad(lambda y: jaxport.call(exp)(y).sum())(x).sum())(X)
  np.testing.assert_allclose(grad2, -np.sin(X), rtol=1e-6)


def test_vjp_shardings_follow_the_primal():
  mesh = Mesh(jax.devices()[:1], ("a",))
  s = NamedSharding(mesh, P("a"))
  exp = jaxport.export(jax.jit(lambda x, y: x * y, in_shardings=(s, None), out_shardings=s))(X, X)
  vjp = exp.vjp()
  assert vjp._in_named_shardings == (*exp._in_named_shardings, *exp._out_named_shardings)
  assert vjp._out_named_shardings == exp._in_named_shardings
  assert vjp._in_named_shardings[0].spec == P("a") and vjp._in_named_shardings[1] is None
