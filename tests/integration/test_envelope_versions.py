"""Envelopes as the installed jax writes and reads them: version 12, expired layouts, revival.

Old envelopes come from the golden store (recorded by each release's own
jax.export); the behaviour checked is the installed jax's, whichever
supported release it is.
"""

import json
import sys
import warnings
from pathlib import Path

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from _jax_releases import JAX_WRITES_JAXPORTS_LAYOUT, same_bytes_as_jax
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.errors import ExpiredEnvelopeError, GoldenDataError
from jaxport.golden import Entry
from jaxport.harness._judge import _reader_policy
from jaxport.serde import _read, _write
from jaxport.upgrades import (EnvelopeRewrite, envelope_layout, expired_reason, read_any_envelope,
                              upgrade_envelope)

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "compat_data"
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))
from jaxport.multirelease import _legacy_envelopes  # noqa: E402
F32 = jax.ShapeDtypeStruct((3,), jnp.float32)


def _entry(producer: str, case: str = "release_multi_platform_f32") -> Entry:
  found = sorted(STORE.glob(f"cpu/*/{case}/*_jax-{producer}"))
  assert found, (producer, case)
  return Entry(found[0])


OLD = _entry("0.4.26")      # nr_devices_short only: expired for jax 0.11.1 and newer
MIDDLE = _entry("0.9.2")    # legacy per-value vectors, read by every supported jax
refuses = pytest.mark.skipif(not jax_envelope.REFUSES_EXPIRED,
                             reason=f"jax {jax.__version__} reads every envelope layout "
                                    "(refusing expired ones started in jax 0.11.1)")


def test_layouts_of_the_store_are_told_apart_by_their_fields():
  assert envelope_layout(OLD.blob()) == "short-device-count"
  assert envelope_layout(MIDDLE.blob()) == "legacy-vectors"
  assert envelope_layout(_entry("0.10.0").blob()) == "unique-tables"
  fresh = jaxport.export(jax.jit(jnp.sin))(F32).serialize(jaxport_fields=False)
  assert envelope_layout(fresh) == ("version-12" if jax_envelope.WRITES_VERSION_12
                                    else "unique-tables")


def test_header_version_and_producer_follow_the_installed_jax():
  rec = jaxport.export(jax.jit(jnp.cos))(F32)
  plain = rec.serialize(jaxport_fields=False)
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert plain == jax.export.deserialize(plain).serialize()
  assert _read.read_serialization_version(plain) == jax_envelope.header_version()
  assert _read.read_serialization_version(rec.serialize()) == jax_envelope.header_version()
  assert _read.read_jax_version(rec.serialize()) == jax.__version__


@refuses
def test_expired_envelope_is_refused_with_jaxs_message_first():
  with pytest.raises(ValueError) as theirs:
    jax.export.deserialize(bytearray(OLD.blob()))
  with pytest.raises(ExpiredEnvelopeError) as ours:
    jaxport.deserialize(OLD.blob())
  text = str(ours.value)
  assert text.startswith(str(theirs.value))
  detail = text[len(str(theirs.value)):]
  assert "unknown producer" in detail and "envelope version 2" in detail
  assert "jaxport upgrade" in detail and jax_envelope.EXPIRED_FLAG in detail
  assert expired_reason(OLD.blob()) is not None and expired_reason(MIDDLE.blob()) is None


@refuses
def test_the_detail_names_the_producer_when_the_blob_does():
  table = list(_read._verify.decode(OLD.blob()))
  table[_read._X.jax_version] = "0.8.0"
  with pytest.raises(ExpiredEnvelopeError, match=r"(?s)It was created with JAX version 0\.8\.0\..*"
                                                 r"written by jax 0\.8\.0 in envelope version 2"):
    _read._expired(table, "Exported", policy=_read._JAX_POLICY, hlo_shardings=False)


@refuses
def test_jaxs_flag_reads_an_expired_envelope_with_a_warning(monkeypatch):
  jax.config.update(jax_envelope.EXPIRED_FLAG, True)
  try:
    with pytest.warns(DeprecationWarning, match="6-month backward-compatibility window"):
      ours = jaxport.deserialize(OLD.blob())
    with pytest.warns(DeprecationWarning):
      theirs = jax.export.deserialize(bytearray(OLD.blob()))
  finally:
    jax.config.update(jax_envelope.EXPIRED_FLAG, False)
  assert ours.nr_devices == theirs.nr_devices == 1
  assert ours.mlir_module_serialized == theirs.mlir_module_serialized


def test_an_envelope_every_supported_jax_reads_is_read_without_warning():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert jaxport.deserialize(MIDDLE.blob()).nr_devices == 1
  if not jax_envelope.REFUSES_EXPIRED:
    assert jaxport.deserialize(OLD.blob()).nr_devices == 1


def test_upgraded_envelope_reads_in_both_readers_and_computes_the_recorded_outputs():
  new = upgrade_envelope(OLD.blob())
  rec, rewrite = read_any_envelope(OLD.blob())
  if not jax_envelope.REFUSES_EXPIRED:
    assert rewrite is None and bytes(new) == OLD.blob()
    return
  assert isinstance(rewrite, EnvelopeRewrite) and rewrite.layout == "short-device-count"
  assert (rewrite.from_version, rewrite.to_version) == (2, jax_envelope.header_version())
  theirs, ours = jax.export.deserialize(new), jaxport.deserialize(new)
  assert ours.serialize(jaxport_fields=False) == theirs.serialize()
  assert ours.mlir_module_serialized == rec.mlir_module_serialized
  assert envelope_layout(new) != "short-device-count" and expired_reason(new) is None
  args = OLD.inputs()
  for got in (ours.call(*args), theirs.call(*args)):
    for g, want in zip(jax.tree.leaves(got), OLD.expected_outputs()):
      np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-5)


def test_the_cli_revives_an_expired_envelope(tmp_path, capsys):
  from jaxport.cli import main
  out = tmp_path / "new.bin"
  assert main(["upgrade", str(OLD.path), "-o", str(out),
               "--json"]) == 0
  report = json.loads(capsys.readouterr().out)
  if jax_envelope.REFUSES_EXPIRED:
    assert report["envelope"]["layout"] == "short-device-count"
    assert jax.export.deserialize(bytearray(out.read_bytes())).nr_devices == 1
  else:
    assert report["envelope"] is None
  assert jaxport.deserialize(out.read_bytes()).fun_name == jaxport.deserialize(
      upgrade_envelope(OLD.blob())).fun_name


def test_measured_reader_policy_agrees_with_the_installed_jax():
  policy = _reader_policy.load()
  if jax.__version__ not in policy.readers:
    pytest.skip(f"jax {jax.__version__} is not among the measured releases "
                f"({sorted(policy.readers)})")
  samples = {"short-device-count": OLD.blob(), "legacy-vectors": MIDDLE.blob(),
             "hlo-shardings": _legacy_envelopes.hlo_sharding_envelope()}
  for layout, blob in samples.items():
    try:
      jax.export.deserialize(bytearray(blob))
      now = _reader_policy.ReadStatus.READS
    except ValueError:
      now = _reader_policy.ReadStatus.REFUSES_EXPIRED
    assert policy.reading(jax.__version__, layout).status is now, layout


def test_a_malformed_reader_policy_is_refused_with_the_fix():
  good = _reader_policy.document(_reader_policy.load())
  assert _reader_policy.parse(good, "x").readers == _reader_policy.load().readers
  del good["readers"]["0.12.0.1"]["version-12"]["status"]
  with pytest.raises(GoldenDataError, match=r"bad: readers\.0\.12\.0\.1\.version-12: missing "
                     r"status\. .*reinstall jaxport .*release-table tool"):
    _reader_policy.parse(good, "bad")
  with pytest.raises(GoldenDataError, match="format_version: expected 1, got 99"):
    _reader_policy.parse({"format_version": 99}, "bad")


@same_bytes_as_jax
def test_serialize_without_jaxport_fields_writes_jaxs_bytes_for_records_read_from_jax():
  theirs = jax.export.export(jax.jit(lambda x: (jnp.sin(x), x * 2)))(F32).serialize()
  assert _write.serialize(jaxport.deserialize(theirs), jaxport_fields=False) == theirs
  assert jax.export.deserialize(jaxport.deserialize(theirs).serialize()).fun_name == "<lambda>"


def _one_blob_per_producer() -> dict[str, bytes]:
  found: dict[str, bytes] = {}
  for path in sorted(STORE.glob("cpu/*/release_*/*/exported.bin")):
    found.setdefault(path.parent.name.rsplit("_jax-", 1)[-1], path.read_bytes())
  return found


@pytest.mark.parametrize("producer", sorted(_one_blob_per_producer()))
def test_a_blob_of_each_producer_release_crosses_both_readers(producer):
  blob = bytes(upgrade_envelope(_one_blob_per_producer()[producer]))
  theirs, ours = jax.export.deserialize(bytearray(blob)), jaxport.deserialize(blob)
  # jaxport's blob of the record is read by jax, and jax's by jaxport, into equal records.
  from_ours = jax.export.deserialize(ours.serialize())
  from_theirs = jaxport.deserialize(theirs.serialize())
  for field in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "nr_devices",
                "platforms", "mlir_module_serialized", "calling_convention_version",
                "module_kept_var_idx", "uses_global_constants"):
    assert getattr(from_ours, field) == getattr(theirs, field), field
    assert getattr(from_theirs, field) == getattr(ours, field), field
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert _write.serialize(from_theirs, jaxport_fields=False) == theirs.serialize()


def test_an_hlo_sharding_envelope_is_read_as_the_installed_jax_reads_it():
  blob = _legacy_envelopes.hlo_sharding_envelope()
  assert envelope_layout(blob) == "hlo-shardings"
  x = np.arange(3, dtype=np.float32)
  if not jax_envelope.REFUSES_EXPIRED:
    ours, theirs = jaxport.deserialize(blob), jax.export.deserialize(bytearray(blob))
    assert not ours._has_named_shardings and ours.in_shardings_hlo == theirs.in_shardings_hlo
  else:
    with pytest.raises(ValueError) as theirs:
      jax.export.deserialize(bytearray(blob))
    jax.config.update(jax_envelope.EXPIRED_FLAG, True)
    try:  # jax's flag does not revive this layout, and jaxport's message does not offer it
      with pytest.raises(ExpiredEnvelopeError) as ours:
        jaxport.deserialize(blob)
    finally:
      jax.config.update(jax_envelope.EXPIRED_FLAG, False)
    assert str(ours.value).startswith(str(theirs.value))
    assert "HloSharding protos" in str(ours.value) and jax_envelope.EXPIRED_FLAG not in str(ours.value)
  revived = jaxport.deserialize(upgrade_envelope(blob))
  np.testing.assert_allclose(np.asarray(revived.call(x)), np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(jax.export.deserialize(upgrade_envelope(blob)).call(x)),
                             np.sin(x), rtol=1e-6)
