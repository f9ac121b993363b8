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
_SHARDING = _read._SHARDING


@dataclasses.dataclass(frozen=True)
class EnvelopeRewrite:
  """Why an envelope was rewritten, from which header version to which."""
  reason: str
  layout: str
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
  layout = envelope_layout(blob)
  return EXPIRED_LAYOUTS.get(layout)


# The envelope layouts jax has written, as told apart by their fields; the
# measured reader policy of each jax release (jaxport/harness/reader_policy.json)
# is keyed by these names.
SHORT_DEVICE_COUNT = "short-device-count"    # jax 0.8.0 and older: nr_devices_short only
HLO_SHARDINGS = "hlo-shardings"              # shardings as HloSharding protos only
LEGACY_VECTORS = "legacy-vectors"            # jax 0.8.1 to 0.9.x: per-value vectors
UNIQUE_TABLES = "unique-tables"              # jax 0.10.0 to 0.11.0: unique_* tables, header 3
VERSION_12 = "version-12"                    # jax 0.11.1 and newer: real header number
LAYOUTS = (SHORT_DEVICE_COUNT, HLO_SHARDINGS, LEGACY_VECTORS, UNIQUE_TABLES, VERSION_12)

EXPIRED_LAYOUTS = {
    SHORT_DEVICE_COUNT: ("the device count sits only in the legacy 16-bit nr_devices_short "
                         "field (envelopes of jax 0.8.0 and older)"),
    HLO_SHARDINGS: "shardings are stored as HloSharding protos (envelopes before named shardings)",
}


def _stores_hlo_protos(t: list[Any]) -> bool:
  for idxs, legacy in ((_X.in_shardings_idxs, _X.in_shardings),
                       (_X.out_shardings_idxs, _X.out_shardings)):
    if t[idxs]:
      continue
    for s in t[legacy] or ():
      if (s is not None and s[_SHARDING.named_sharding] is None
          and s[_SHARDING.hlo_sharding_proto] is not None):
        return True
  return False


def envelope_layout(blob: bytes | bytearray | memoryview) -> str:
  """Which of :data:`LAYOUTS` ``blob``'s envelope has (read from its structure alone)."""
  t = _verify.decode(_read._as_bytes(blob))
  if not t[_X.nr_devices] and t[_X.nr_devices_short]:
    return SHORT_DEVICE_COUNT
  if _stores_hlo_protos(t):
    return HLO_SHARDINGS
  if (t[_X.serialization_version] or 0) >= jax_envelope.REAL_HEADER_VERSION:
    return VERSION_12
  if t[_X.in_avals_idxs] or t[_X.out_avals_idxs] or t[_X.unique_avals]:
    return UNIQUE_TABLES
  return LEGACY_VECTORS


def vjp_depth(exp: Any) -> int:
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
  layout = envelope_layout(blob)
  reason = EXPIRED_LAYOUTS.get(layout) if jax_envelope.REFUSES_EXPIRED else None
  if reason is None:
    return _read.deserialize(blob), None
  rec = _named_only(_read.deserialize_expired(blob))
  header = _read.read_serialization_version(blob)
  return rec, EnvelopeRewrite(reason=reason, layout=layout, from_version=header,
                              to_version=jax_envelope.header_version(),
                              producer=_read.read_jax_version(blob))


def rewrite_envelope(blob: bytes | bytearray | memoryview) -> tuple[bytearray, EnvelopeRewrite | None]:
  """``blob`` in the layout the installed jax reads, and the rewrite made (None: the bytes as given).

  The record, its nested VJPs and the module bytes are kept; only the
  envelope is written anew.
  """
  rec, rewrite = read_any_envelope(blob)
  if rewrite is None:
    return bytearray(blob), None
  return rec.serialize(vjp_order=vjp_depth(rec)), rewrite


def upgrade_envelope(blob: bytes | bytearray | memoryview) -> bytearray:
  """``blob`` in the layout the installed jax reads; the same bytes when it reads them already.

  For an envelope the installed jax refuses as expired (jax 0.11.1 and newer
  refuse those of jax 0.8.0 and older): the record, its nested VJPs and the
  module bytes are kept, the envelope is written anew.
  """
  return rewrite_envelope(blob)[0]
