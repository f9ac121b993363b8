"""The session starts the worker an entry needs before the entry comes: for the next entry, and
for the entries a little further ahead, so that a worker for another device count is ready when
its first entry comes; each entry's manifest is read once on the way."""

import datetime
from pathlib import Path

import pytest
from _harness_paths import copy_cpu_entries

from jaxport.golden import _store
from jaxport.harness import _session
from jaxport.harness._project import OnChange, Project
from jaxport.harness._session import HarnessSession, Options

ONE_DEVICE = "lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
EIGHT_DEVICES = "sharding_gspmd/shard_map_gspmd/2026-11-29_jax-0.10.2"


@pytest.fixture
def session(tmp_path, monkeypatch):
  """A session on a store of one single-device and one eight-device entry; the workers it
  starts are recorded (by device count), not started."""
  root = copy_cpu_entries([ONE_DEVICE, EIGHT_DEVICES], tmp_path / "store")
  project = Project(case_modules=(), store=root, on_change=OnChange.WARN, root=root)
  hs = HarnessSession(Options(
      platform="cpu", record=False, strict=False, compat_report=None, compat_window_days=180,
      golden_root=root, today=datetime.date(2026, 11, 29), worker_timeout_s=60.0,
      partial=True), project)
  started: list[int] = []
  monkeypatch.setattr(_session.WorkerClient, "start", lambda self: started.append(self.num_devices))
  hs.started = started
  return hs


def test_the_workers_of_entries_ahead_are_started_with_the_next_ones(session):
  session.prepare(f"cpu/{ONE_DEVICE}", [f"cpu/{EIGHT_DEVICES}"])
  assert sorted(set(session.started)) == [1, 8]


def test_without_entries_ahead_only_the_next_entrys_worker_starts(session):
  session.prepare(f"cpu/{ONE_DEVICE}")
  assert set(session.started) == {1}


def test_an_unreadable_entry_ahead_does_not_stop_the_others(session, tmp_path):
  broken = Path(session.options.golden_root) / "cpu" / EIGHT_DEVICES / "manifest.json"
  broken.write_text("{")
  session.prepare(f"cpu/{ONE_DEVICE}", [f"cpu/{EIGHT_DEVICES}", f"cpu/{ONE_DEVICE}"])
  assert set(session.started) == {1}


def test_an_entry_without_shardings_prepared_ahead_has_its_manifest_read_once(session, monkeypatch):
  reads = []
  manifest = _store.Entry.manifest

  def counted(entry):
    reads.append(entry.entry_id)
    return manifest.fget(entry)

  monkeypatch.setattr(_store.Entry, "manifest", property(counted))
  entry_id = f"cpu/{ONE_DEVICE}"
  session.prepare(f"cpu/{EIGHT_DEVICES}", [entry_id])
  assert session._manifest(entry_id).case_id == "cholesky_f32"
  assert session._devices_needed(entry_id) == 1
  assert reads.count(entry_id) == 1
