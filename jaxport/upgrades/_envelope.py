"""Rewriting an envelope the installed jax refuses as expired into the layout it reads.

jax 0.11.1 and newer refuse envelopes older than the 6-month window: those
that keep the device count only in the legacy 16-bit ``nr_devices_short``
(written by jax 0.8.0 and older) and those that store shardings as HloSharding
protos. The record inside is still sound: read with every legacy layout
accepted and written again by today's writer, it loads on today's jax. The
module bytes are kept as they are; removed custom calls are the business of
:func:`jaxport.upgrade`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.errors import UpgradeError
from jaxport.export._exported import Exported
from jaxport.serde import _read, _verify

_X = _read._X


@dataclasses.dataclass(frozen=True)
class EnvelopeRewrite:
  """Why an envelope was rewritten, from which header version to which."""
  reason: str
  from_version: int
  to_version: int
  producer: str | None

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def expired_reason(blob: bytes | bytearray | memoryview) -> str | None:
  """Why the installed jax refuses ``blob`` as expired by default, or None when it reads it.

  Reads the envelope's structure only; a corrupt blob raises ``DeserializationError``.
  """
  if not jax_envelope.REFUSES_EXPIRED:
    return None
  t = _verify.decode(_read._as_bytes(blob))
  if not t[_X.nr_devices] and t[_X.nr_devices_short]:
    return ("the device count sits only in the legacy 16-bit nr_devices_short field "
            "(envelopes of jax 0.8.0 and older)")
  rec = _read.deserialize_expired(blob)
  if not jax_envelope.has_named_shardings(rec):
    return "shardings are stored as HloSharding protos (envelopes before named shardings)"
  return None


def _vjp_depth(exp: Any) -> int:
  """How many nested VJPs the record carries (the ``vjp_order`` to write it with again)."""
  depth = 0
  while exp.has_vjp():
    exp = exp.vjp()
    depth += 1
  return depth


def _named_only(exp: Exported) -> Exported:
  """``exp`` (and its nested VJPs) with HloShardings dropped, exact only for one device."""
  get_vjp = exp._get_vjp
  if get_vjp is not None:
    exp = dataclasses.replace(exp, _get_vjp=lambda primal: _named_only(get_vjp(primal)))
  if jax_envelope.has_named_shardings(exp):
    return exp
  if exp.nr_devices != 1:
    raise UpgradeError(
        f"Cannot rewrite the envelope of '{exp.fun_name}': it stores HloSharding protos for "
        f"{exp.nr_devices} devices, and no named sharding over an abstract mesh can be derived "
        "from them without the original mesh. Re-export the function with a current jax.")
  n_in, n_out = len(exp.in_avals), len(exp.out_avals)
  return dataclasses.replace(exp, in_shardings_hlo=(None,) * n_in, out_shardings_hlo=(None,) * n_out,
                             _in_named_shardings=(None,) * n_in, _out_named_shardings=(None,) * n_out)


def read_any_envelope(blob: bytes | bytearray | memoryview) -> tuple[Exported, EnvelopeRewrite | None]:
  """The record in ``blob`` whatever its envelope's age, and the rewrite it needs (None: none)."""
  reason = expired_reason(blob)
  if reason is None:
    return _read.deserialize(blob), None
  rec = _named_only(_read.deserialize_expired(blob))
  header = _read.read_serialization_version(blob)
  return rec, EnvelopeRewrite(reason=reason, from_version=header,
                              to_version=jax_envelope.header_version(),
                              producer=_read.read_jax_version(blob))


def upgrade_envelope(blob: bytes | bytearray | memoryview) -> bytearray:
  """``blob`` in the layout the installed jax reads; the same bytes when it reads them already.

  The record, its nested VJPs and the module bytes are kept; only the
  envelope is written anew.
  """
  rec, rewrite = read_any_envelope(blob)
  if rewrite is None:
    return bytearray(blob)
  return rec.serialize(vjp_order=_vjp_depth(rec))
