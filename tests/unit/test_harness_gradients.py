"""The order of the gradients a recording writes: a case's own ``vjp_order``, or left unset,
1 where its function holds a custom derivative rule and takes a float input; an order above
the harness's limit refused at record; today's comparison at the entry's order where the case
leaves it unset; the paths of the inputs without a cotangent."""

import datetime

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.golden._manifest import OutputTolerance
from jaxport.harness import Case, random_matrix
from jaxport.harness._worker import _gradients, _recording

from test_golden_store import make_manifest
from test_jaxcompat_custom_rules import smooth, soft




def _floats():
  return (random_matrix(0, (3,), np.float32),), {}


def _ints():
  return (np.arange(3, dtype=np.int32),), {}


def _case(fun, inputs=_floats, **kw):
  return Case("c", "fam", fun, inputs, **kw)


@pytest.mark.parametrize("case,order,rules", [
    (_case(soft), 1, {"custom_vjp"}),
    (_case(smooth), 1, {"custom_jvp"}),
    (_case(jnp.sin), 0, set()),
    (_case(lambda n: soft(n.astype(jnp.float32)), _ints), 0, set()),  # no float input
    (_case(soft, vjp_order=0), 0, set()),
    (_case(jnp.sin, vjp_order=1), 1, set()),
], ids=["custom_vjp", "custom_jvp", "no rule", "int inputs only", "opted out", "asked for"])
def test_the_order_recorded_is_the_cases_or_by_default_one_where_a_custom_rule_exists(
    case, order, rules):
  got = _gradients.recorded_gradients(case)
  assert (got.order, got.rules) == (order, frozenset(rules))
  assert got.by_default == (case.vjp_order is None and order == 1)


def test_an_order_above_the_limit_is_refused_at_record_naming_it():
  with pytest.raises(ValueError, match=r"case c: vjp_order=2, but the harness records and "
                                       r"compares gradients up to order 1 only.*set vjp_order=1"):
    _recording.record_case(_case(soft, vjp_order=2), datetime.date(2026, 12, 1))


@pytest.mark.parametrize("bad", [-1, True, 1.0, "1"])
def test_a_vjp_order_that_is_no_order_is_refused_when_the_case_is_made(bad):
  with pytest.raises(ValueError, match=f"vjp_order={bad!r} is not an order of gradients"):
    _case(soft, vjp_order=bad)


def test_today_is_compared_at_the_entrys_order_where_the_case_leaves_it_unset():
  assert _gradients.todays_order(_case(soft), entry_has_vjp=False) == 0
  assert _gradients.todays_order(_case(soft), entry_has_vjp=True) == 1
  assert _gradients.todays_order(_case(soft, vjp_order=1), entry_has_vjp=False) == 1
  assert _gradients.todays_order(_case(soft, vjp_order=0), entry_has_vjp=True) == 0


def test_whether_an_entry_carries_a_vjp_is_read_from_its_manifest():
  tol = OutputTolerance("output[0]", "float32", 0.0, 0.0)
  vjp = OutputTolerance("vjp1:args[0]", "float32", 0.0, 0.0)
  assert not _gradients.entry_has_vjp(make_manifest())
  assert not _gradients.entry_has_vjp(make_manifest(tolerances=(tol,)))
  assert _gradients.entry_has_vjp(make_manifest(tolerances=(tol, vjp)))
  assert _gradients.entry_has_vjp(make_manifest(no_cotangent=()))


def test_inputs_without_a_cotangent_are_named_by_path_and_have_no_vjp_output_path():
  spec = jax.ShapeDtypeStruct
  exp = jaxport.export(jax.jit(lambda x, n, mask=None: x * n))(
      spec((3,), np.float32), spec((3,), np.int32), mask=spec((3,), np.bool_))
  assert _recording.no_cotangent(exp) == ("args[1]", "kwargs['mask']")
  outputs = [np.zeros(3, np.float32)] * 2
  assert [p for p, _ in _recording.output_paths(exp, 1, outputs)] == ["output", "vjp1:args[0]"]


def test_a_default_gradient_that_cannot_be_exported_is_refused_naming_the_opt_out():
  def looped(x):  # reverse mode cannot go through a while_loop of dynamic trip count
    return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, smooth(c[1])), (0, x))[1]

  with pytest.raises(ValueError, match=r"case c: its function holds a custom_jvp rule, so its "
                                       r"gradients .* are recorded by default, but its VJP cannot "
                                       r"be exported: .*while_loop.*Set vjp_order=0"):
    _recording.record_case(_case(looped), datetime.date(2026, 12, 1))
  recorded = _recording.record_case(_case(looped, vjp_order=0), datetime.date(2026, 12, 1))
  assert recorded.manifest.no_cotangent is None
