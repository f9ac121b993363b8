"""Rewriting an envelope the installed jax refuses as expired into the layout it reads.

jax 0.11.1 and newer refuse envelopes older than the 6-month window: those
that keep the device count only in the legacy 16-bit ``nr_devices_short``
(written by jax 0.8.0 and older) and those that store shardings as HloSharding
protos. The record inside is still sound: read with every legacy layout
accepted and written again by today's writer, it loads on today's jax. The
module bytes are kept as they are; removed custom calls are the business of
:func:`jaxport.upgrade`.

The installed jax is one consumer among others: ``for_jax`` names an older (or
newer) release, and the envelope is then written anew where that release does
not read its layout, the module where it is written for a newer StableHLO than
that release reads (``jaxport.export._for_jax``). The default, the installed
jax, is the rewrite of expired envelopes above.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.errors import UpgradeError
from jaxport.export import _for_jax
from jaxport.export._exported import Exported
from jaxport.serde import _read, _verify
from jaxport.serde._wire import sharding_devices

_X = _read._X
_SHARDING = _read._SHARDING


@json_record(Strict.raising(UpgradeError))
@dataclasses.dataclass(frozen=True)
class EnvelopeRewrite:
  """Why an envelope was rewritten, from which header version to which."""
  reason: str
  layout: str
  from_version: int
  to_version: int
  producer: str | None


def expired_reason(blob: bytes | bytearray | memoryview) -> str | None:
  """Why the installed jax refuses ``blob`` as expired by default, or None when it reads it.

  Reads the envelope's structure only; a corrupt blob raises ``DeserializationError``.
  """
  if not jax_envelope.REFUSES_EXPIRED:
    return None
  layout = envelope_layout(blob)
  return EXPIRED_LAYOUTS.get(layout)


# The envelope layouts jax has written, as told apart by their fields; the
# measured reader policy of each jax release (jaxport/releases/release_table.json)
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
  return layout_of_fields(_verify.decode(_read._as_bytes(blob)))


def layout_of_fields(t: list[Any]) -> str:
  """Which of :data:`LAYOUTS` an envelope has, from its decoded root table
  (``jaxport.serde._verify.decode``), for readers that decoded it already."""
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
  for side, shardings in (("in_shardings", exp.in_shardings_hlo),
                          ("out_shardings", exp.out_shardings_hlo)):
    for i, sharding in enumerate(shardings):
      if sharding is not None and sharding_devices(sharding) > 1:
        raise UpgradeError(
            f"Cannot rewrite the envelope of '{exp.fun_name}': {side}[{i}] is the HloSharding "
            f"{sharding} over {sharding_devices(sharding)} devices, but the envelope is for one "
            "device; it contradicts itself, so dropping its shardings would hide that. "
            "Re-export the function with a current jax.")
  n_in, n_out = len(exp.in_avals), len(exp.out_avals)
  return dataclasses.replace(exp, in_shardings_hlo=(None,) * n_in, out_shardings_hlo=(None,) * n_out,
                             _in_named_shardings=(None,) * n_in, _out_named_shardings=(None,) * n_out)


def consumer(for_jax: str | None = None) -> _for_jax.ConsumerTarget:
  """The release an artifact is rewritten for: ``for_jax`` from the release table, or the
  installed jax (None), which reads every layout but the expired ones it refuses."""
  if for_jax is not None:
    return _for_jax.consumer_target(for_jax)
  refused = EXPIRED_LAYOUTS if jax_envelope.REFUSES_EXPIRED else {}
  return _for_jax.installed_target(
      {layout: "refuses_expired" if layout in refused else "reads" for layout in LAYOUTS})


def _unread_reason(layout: str, target: _for_jax.ConsumerTarget) -> str | None:
  """Why ``target``'s release does not read an envelope of ``layout`` (None: it reads it)."""
  if target.reads_layout(layout):
    return None
  status = target.layouts_read.get(layout, "not measured")
  if status == "refuses_expired" and layout in EXPIRED_LAYOUTS:
    return EXPIRED_LAYOUTS[layout]
  return f"jax {target.release} {status.replace('_', ' ')} the {layout} layout"


def read_any_envelope(blob: bytes | bytearray | memoryview, for_jax: str | None = None,
                      layout: str | None = None) -> tuple[Exported, EnvelopeRewrite | None]:
  """The record in ``blob`` whatever its envelope's age, and the rewrite it needs for the
  consumer ``for_jax`` (None: the installed jax) to read it (None: none). ``layout``: the
  envelope's layout where the caller has read it already."""
  target = consumer(for_jax)
  layout = layout or envelope_layout(blob)
  reason = _unread_reason(layout, target)
  if EXPIRED_LAYOUTS.get(layout) and jax_envelope.REFUSES_EXPIRED:
    rec = _named_only(_read.deserialize_expired(blob))
  else:
    rec = _read.deserialize(blob)
    if EXPIRED_LAYOUTS.get(layout) and reason is not None:
      # Written anew for a consumer that refuses the layout: its HloShardings go, as above.
      rec = _named_only(rec)
  if reason is None:
    return rec, None
  header = _read.read_serialization_version(blob)
  return rec, EnvelopeRewrite(reason=reason, layout=layout, from_version=header,
                              to_version=target.header_version,
                              producer=_read.read_jax_version(blob))


def rewrite_envelope(blob: bytes | bytearray | memoryview, for_jax: str | None = None
                     ) -> tuple[bytearray, EnvelopeRewrite | None]:
  """``blob`` as the consumer ``for_jax`` (None: the installed jax) reads it, and the
  envelope rewrite made (None: the envelope as given).

  The record and its nested VJPs are kept; the envelope is written anew where the
  consumer does not read its layout, and the module (with the envelope around it)
  where it is written for a newer StableHLO than the consumer reads. A blob the
  consumer reads as it is comes back byte for byte.
  """
  rec, rewrite = read_any_envelope(blob, for_jax)
  new, retargeting = _for_jax.retarget(rec, consumer(for_jax))
  if rewrite is None and not retargeting.changed:
    return bytearray(blob), None
  return new.serialize(vjp_order=vjp_depth(rec)), rewrite


def upgrade_envelope(blob: bytes | bytearray | memoryview, for_jax: str | None = None) -> bytearray:
  """``blob`` in the layout the consumer ``for_jax`` reads (None: the installed jax); the
  same bytes when it reads them already.

  For an envelope the installed jax refuses as expired (jax 0.11.1 and newer
  refuse those of jax 0.8.0 and older): the record, its nested VJPs and the
  module bytes are kept, the envelope is written anew. For an older consumer,
  the module is also written again for its StableHLO where needed, and what it
  cannot run is refused (``ExportError`` naming the release and the feature).
  """
  return rewrite_envelope(blob, for_jax)[0]
