"""``jaxport audit`` reads each artifact once: its envelope decoded once and its module parsed
once, for a bare blob and for a store entry, however many things it shows of it (versions,
what the running jax reads, targets, the releases it runs on)."""

import collections
import datetime

import pytest

from _cli_helpers import RECORD_DATE, qr_exported, write_qr_entry
from jaxport._jaxcompat import _mlir as jax_mlir_compat
from jaxport.cli import _artifacts, _audit
from jaxport.cli._parser import InProcess
from jaxport.golden._store import GoldenStore
from jaxport.serde import _verify

TODAY = RECORD_DATE + datetime.timedelta(days=10)


@pytest.fixture
def counted(monkeypatch):
  """Counts of envelope decodes and module parses made in this process."""
  counts = collections.Counter()

  def counting(name, fun):
    def wrapper(*args, **kwargs):
      counts[name] += 1
      return fun(*args, **kwargs)
    return wrapper

  monkeypatch.setattr(_verify, "decode", counting("decode", _verify.decode))
  monkeypatch.setattr(jax_mlir_compat, "deserialize_portable_artifact",
                      counting("parse", jax_mlir_compat.deserialize_portable_artifact))
  return counts


def _audit_one(art):
  return _audit.audit_artifact(art, today=TODAY, window_days=180, relowerer=None,
                               reader=InProcess())


def test_a_blob_and_a_store_entry_are_each_decoded_once_and_parsed_once(tmp_path, counted):
  blob = tmp_path / "qr.bin"
  blob.write_bytes(qr_exported().serialize())
  entry = write_qr_entry(GoldenStore(tmp_path / "compat_data"))
  for art in (*_artifacts.find_artifacts(blob), *_artifacts.find_artifacts(entry.path)):
    counted.clear()
    record = _audit_one(art)
    assert record["status"] == "pass", record
    # All of it shown from that one reading.
    assert record["envelope_layout"] and record["runs_on"]["cpu"]
    assert [t["target"] for t in record["custom_call_targets"]] == [
        "lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"]
    assert counted == {"decode": 1, "parse": 1}, (art.label, counted)
