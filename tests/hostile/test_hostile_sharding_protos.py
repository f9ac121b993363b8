"""HloSharding protos in an old one-device envelope: a proto that contradicts itself is refused
by name before XLA's native check sees it (no native stack trace), and a sharding over more
devices than the envelope's one is refused by the envelope upgrade instead of dropped."""

import subprocess
import sys
from pathlib import Path

import pytest
from jax._src.lib import xla_client

from jaxport.errors import JaxportError, UpgradeError
from jaxport.releases import releases
from jaxport.upgrades import envelope_layout, upgrade_envelope

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))
from jaxport.multirelease import _legacy_envelopes  # noqa: E402

KINDS = xla_client.OpSharding.Type


def _proto(**fields) -> bytes:
  proto = xla_client.OpSharding()
  for name, value in fields.items():
    setattr(proto, name, value)
  return proto.SerializeToString()


INCONSISTENT = {
    "six tiles, two devices": (_proto(type=KINDS.OTHER, tile_assignment_dimensions=[2, 3],
                                      tile_assignment_devices=[0, 1]), "hold 6 devices but 2"),
    "repeated device": (_proto(type=KINDS.OTHER, tile_assignment_dimensions=[2],
                               tile_assignment_devices=[1, 1]), "repeated device ids"),
    "maximal over two": (_proto(type=KINDS.MAXIMAL, tile_assignment_devices=[0, 1]),
                         "names 2 devices, not one"),
}


@pytest.mark.parametrize("name", sorted(INCONSISTENT))
def test_an_inconsistent_proto_is_refused_by_name_without_a_native_trace(name, tmp_path):
  proto, why = INCONSISTENT[name]
  blob = _legacy_envelopes.hlo_sharding_envelope(proto)
  with pytest.raises(JaxportError, match=why) as refused:
    upgrade_envelope(blob)
  assert "at Exported.in_shardings[0].hlo_sharding_proto" in str(refused.value)
  path = tmp_path / "bad.bin"
  path.write_bytes(blob)
  jaxport = Path(sys.executable).parent / "jaxport"
  done = subprocess.run([str(jaxport), "inspect", str(path)], capture_output=True, text=True,
                        timeout=120)
  assert done.returncode != 0
  assert why in done.stderr and "stack trace" not in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("fields, devices", [
    (dict(type=KINDS.OTHER, tile_assignment_dimensions=[2], tile_assignment_devices=[0, 1]), 2),
    (dict(type=KINDS.MAXIMAL, tile_assignment_devices=[3]), 4)])
def test_a_sharding_over_more_devices_than_the_envelope_is_not_dropped(fields, devices):
  blob = _legacy_envelopes.hlo_sharding_envelope(_proto(**fields))
  # Written for the newest release, which refuses the layout, the shardings would go.
  with pytest.raises(UpgradeError, match=rf"in_shardings\[0\] is the HloSharding .* over "
                                         rf"{devices} devices, but the envelope is for one"):
    upgrade_envelope(blob, for_jax=releases()[-1].version)


def test_a_replicated_one_device_envelope_is_still_upgraded():
  blob = _legacy_envelopes.hlo_sharding_envelope()
  upgraded = upgrade_envelope(blob, for_jax=releases()[-1].version)
  assert envelope_layout(upgraded) != "hlo-shardings"
