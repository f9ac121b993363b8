"""``jaxport audit`` and ``jaxport inspect`` show each artifact's versions and what the running
jax makes of it: envelope layout, calling convention, the jax that wrote it, whether the
running jax reads it as it is, and the day it leaves that jax's window. A bare blob the running
jax refuses as it is is an audit problem naming ``jaxport upgrade``; a recorded entry keeps
the replay's ``upgraded`` pass; inspect describes the blob and states the refusal."""

import contextlib
import datetime
import io
import json
import shutil
from pathlib import Path

import pytest

from _cli_helpers import qr_exported, write_qr_entry
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat._version import installed_jax_version
from jaxport.cli import main
from jaxport.golden._store import GoldenStore
from jaxport.releases import release_facts
from jaxport.releases._dates import window_exit
from jaxport.serde import _read

ROOT = Path(__file__).resolve().parents[2]
# A blob jax 0.8.0 wrote: the short device-count envelope jax 0.11.1 and newer refuse as expired.
OLD_ENTRY = ROOT / "compat_data/cpu/lapack_trsm/release_triangular_solve_f32/2026-11-29_jax-0.8.0"
TODAY = datetime.date(2026, 12, 6)
REFUSES = jax_envelope.REFUSES_EXPIRED


def _main(*argv: str) -> tuple[int, str]:
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(list(argv))
  return rc, out.getvalue()


@pytest.fixture(scope="module")
def old(tmp_path_factory):
  """The jax 0.8.0 blob as a bare blob, and its recorded entry in a store of its own."""
  folder = tmp_path_factory.mktemp("old")
  shutil.copyfile(OLD_ENTRY / "exported.bin", folder / "old.bin")
  entry = folder / "store" / OLD_ENTRY.relative_to(ROOT / "compat_data")
  shutil.copytree(OLD_ENTRY, entry)
  return folder / "old.bin", folder / "store"


def test_an_old_bare_blob_shows_its_versions_and_what_the_running_jax_reads(old):
  blob, _ = old
  convention = _read.deserialize_expired(blob.read_bytes()).calling_convention_version
  rc, out = _main("audit", str(blob), "--today", str(TODAY))
  assert (f"envelope: layout short-device-count (header version "
          f"{_read.read_serialization_version(blob.read_bytes())}), calling convention "
          f"{convention}, written by jax unknown") in out
  window = release_facts(installed_jax_version()).expiry_days
  assert f"leaves jax {installed_jax_version()}'s window: " + (
      "none: " if window is None else "unknown: a bare blob records no date") in out
  said = f"read as it is by jax {installed_jax_version()}: "
  if REFUSES:
    assert rc == 1 and "PROBLEM " in out
    assert said + "only after `jaxport upgrade BLOB -o NEW.bin`" in out
    (problem,) = [line for line in out.splitlines() if line.startswith("  problem: ")]
    assert "refuses this shipped artifact as it is" in problem
    assert "`jaxport upgrade BLOB -o NEW.bin`" in problem
  else:
    assert rc == 0 and said + "yes" in out
  rc, out = _main("audit", str(blob), "--today", str(TODAY), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert (art["envelope_layout"], art["calling_convention_version"], art["writing_jax"]) == (
      "short-device-count", convention, None)
  assert art["reads_as_is"] == ("after_upgrade" if REFUSES else "yes")
  assert (art["refusal"] is not None) == REFUSES


def test_inspect_describes_an_old_blob_and_states_the_refusal(old):
  blob, _ = old
  rc, out = _main("inspect", str(blob))
  assert rc == 0 and "lapack_strsm_ffi" in out
  said = f"read as it is by jax {installed_jax_version()}: "
  assert said + ("only after `jaxport upgrade" if REFUSES else "yes") in out
  rc, out = _main("inspect", str(blob), "--json")
  info = json.loads(out)
  assert rc == 0 and info["exported"]["serialization_layout"] is not None
  assert info["read_as_is"]["reads_as_is"] == ("after_upgrade" if REFUSES else "yes")


def test_a_recorded_entry_of_that_blob_keeps_the_replays_upgraded_pass(old):
  _, store = old
  rc, out = _main("audit", str(store), "--today", str(TODAY), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["status"] == "pass"
  assert art["writing_jax"] == "0.8.0"
  assert {f["kind"] for f in art["findings"]} == ({"upgraded"} if REFUSES else set())


def test_the_window_exit_is_the_recording_date_plus_the_running_jaxs_window(tmp_path):
  entry = write_qr_entry(GoldenStore(tmp_path / "compat_data"))
  rc, out = _main("audit", str(entry.path), "--today", str(TODAY), "--json")
  (art,) = json.loads(out)["artifacts"]
  days = release_facts(installed_jax_version()).expiry_days
  recorded = datetime.date.fromisoformat(art["record_date"])
  expected = None if days is None else (recorded + datetime.timedelta(days=days)).isoformat()
  assert art["window_exit"]["date"] == expected
  assert art["window_exit"]["window_days"] == days
  # A release with a window, and one without.
  for release in ("0.12.0.1", "0.10.2"):
    window = release_facts(release).expiry_days
    got = window_exit(recorded, release)
    assert got.date == (None if window is None else recorded + datetime.timedelta(days=window))
    assert (window is None) == got.why.startswith("none:")
  assert window_exit(None, "0.12.0.1").date is None
  assert "not list" in window_exit(recorded, "0.0.1").why
  blob = tmp_path / "qr.bin"
  blob.write_bytes(qr_exported().serialize())
  rc, out = _main("audit", str(blob), "--today", str(TODAY), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["window_exit"]["date"] is None and art["reads_as_is"] == "yes"
