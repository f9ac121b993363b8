"""``jit_kwargs_from`` gives a case the jax.jit keyword arguments of a library's jax.jit object,
built when the worker calls it, and refuses what a case's export cannot take."""

import datetime

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxport.errors import ExportError
from jaxport.harness import Case, jit_kwargs_from
from jaxport.harness._worker import _recording


def _scale(x, w):
  return jnp.tanh(x * w)


def _shipped():
  mesh = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])
  rows = NamedSharding(mesh, P("data"))
  return jax.jit(_scale, in_shardings=(rows, NamedSharding(mesh, P())), out_shardings=rows,
                 donate_argnums=(1,))


def test_the_objects_shardings_and_donation_become_the_cases_jit_kwargs():
  built = []
  make = jit_kwargs_from(lambda: built.append(1) or _shipped())
  assert built == []  # nothing is built until the worker asks
  kwargs = make()
  assert built == [1]
  assert set(kwargs) == {"in_shardings", "out_shardings", "donate_argnums"}
  assert [s.spec for s in kwargs["in_shardings"]] == [P("data"), P()]
  assert kwargs["out_shardings"].spec == P("data") and tuple(kwargs["donate_argnums"]) == (1,)


def test_a_plain_jit_object_gives_no_keyword_arguments():
  assert jit_kwargs_from(lambda: jax.jit(_scale))() == {}


def test_a_case_with_them_records():
  case = Case("scale", "f", _scale, lambda: ((np.ones(4, np.float32), np.ones(4, np.float32)), {}),
              jit_kwargs=jit_kwargs_from(lambda: jax.jit(
                  _scale, out_shardings=NamedSharding(
                      jax.make_mesh((1,), ("data",), devices=jax.devices()[:1]), P("data")))))
  rec = _recording.record_case(case, datetime.date(2026, 11, 29))
  np.testing.assert_allclose(rec.expected[0], np.tanh(np.ones(4, np.float32)), rtol=1e-6)


@pytest.mark.parametrize("factory, named", [
    (lambda: _scale, "returned a function, not a jax.jit object"),
    (lambda: jax.jit(lambda x, n: x * n, static_argnums=(1,)), "static_argnums"),
])
def test_what_a_case_cannot_take_is_refused_naming_it(factory, named):
  with pytest.raises(ExportError, match=r"jit_kwargs_from\(.*\): .*" + named):
    jit_kwargs_from(factory)()
