"""Record refuses a case whose arguments or results hold a pytree node jax.export cannot
serialize (jax's reader would fail every replay of the entry), naming the type and the fix;
with the fix, the entry records and jax reads it."""

import dataclasses
import datetime

import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.errors import UnregisteredNodeError
from jaxport.harness import Case
from jaxport.harness._worker import _recording

TODAY = datetime.date(2026, 12, 6)
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)


def test_a_case_returning_eighs_namedtuple_is_refused_at_record_naming_the_type_and_the_fix(
    unregistered_result_namedtuples):
  case = Case("eigh_f32", "linalg", lambda a: jnp.linalg.eigh(a), lambda: ((SPD,), {}))
  with pytest.raises(UnregisteredNodeError) as refusal:
    _recording.record_case(case, TODAY)
  message = str(refusal.value)
  assert message.startswith("case eigh_f32: its results hold `")
  assert "EighResult" in message.splitlines()[0]
  assert "Return a tuple instead (tuple(result))" in message
  assert ("jaxport.register_namedtuple_serialization(EighResult, "
          "serialized_name='jax.numpy.linalg.EighResult')") in message
  assert "Nothing was recorded" in message

  as_tuple = _recording.record_case(
      dataclasses.replace(case, fun=lambda a: tuple(jnp.linalg.eigh(a))), TODAY)
  assert jax.export.deserialize(as_tuple.blob).out_tree.node_data()[0] is tuple
  jaxport.register_namedtuple_serialization(refusal.value.node_type,
                                            serialized_name="jax.numpy.linalg.EighResult")
  registered = _recording.record_case(case, TODAY)
  assert jax.export.deserialize(registered.blob).out_tree.node_data()[0] is refusal.value.node_type
