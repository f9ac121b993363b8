"""The session starts the worker an entry needs before the entry comes: for the next entry, for
the entries a little further ahead, and, once pytest has collected a run's items, for all of
them, so that a worker for another device count is ready when its first entry comes; each entry's
manifest is read once on the way."""

import dataclasses
import datetime
from pathlib import Path

import types

import pytest
from _harness_paths import GOLDEN_CPU as ROOT_CPU, copy_cpu_entries

from jaxport.golden import EntryId
from jaxport.golden._entry import Entry
from jaxport.harness._controller import _plugin, _worker_pool
from jaxport.harness._project import OnChange, Project
from jaxport.harness._protocol._answers import FailureKind, ProjectCases, WorkerFailure
from jaxport.harness._protocol._requests import CasesRequest
from jaxport.harness._controller._session import HarnessSession
from jaxport.harness._controller._settings import Options, Settings
from jaxport.harness._controller._worker_client import Reply

ONE_DEVICE = "lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
EIGHT_DEVICES = "sharding_gspmd/shard_map_gspmd/2026-11-29_jax-0.10.2"


def _id(rest: str) -> EntryId:
  """The id of the CPU entry ``rest`` (``family/case/folder``) names."""
  return EntryId.parse("cpu/" + rest)


@pytest.fixture
def session(tmp_path, monkeypatch):
  """A session on a store of one single-device and one eight-device entry; the workers it
  starts are recorded (by device count), not started."""
  root = copy_cpu_entries([ONE_DEVICE, EIGHT_DEVICES], tmp_path / "store")
  project = Project(case_modules=(), store=root, on_change=OnChange.WARN, root=root)
  hs = HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date(2026, 11, 29)),
      golden_root=root, partial=True), project)
  started: list[int] = []
  monkeypatch.setattr(_worker_pool.WorkerClient, "start_soon",
                      lambda self: started.append(self.num_devices))
  hs.started = started
  return hs


def test_the_workers_of_entries_ahead_are_started_with_the_next_ones(session):
  session.prepare(_id(ONE_DEVICE), [_id(EIGHT_DEVICES)])
  assert sorted(set(session.started)) == [1, 8]


def test_without_entries_ahead_only_the_next_entrys_worker_starts(session):
  session.prepare(_id(ONE_DEVICE))
  assert set(session.started) == {1}


def _collected(session, entry_ids, **config):
  """What pytest hands ``pytest_collection_finish``: a session whose items replay
  ``entry_ids`` in order, its config holding the harness session."""
  items = [types.SimpleNamespace(callspec=types.SimpleNamespace(
      params={_plugin.ENTRY_FIXTURE: e})) for e in entry_ids]
  plugins = types.SimpleNamespace(has_plugin=lambda name: False)
  cfg = types.SimpleNamespace(stash={_plugin.session_key: session}, pluginmanager=plugins,
                              option=types.SimpleNamespace(collectonly=False), **config)
  return types.SimpleNamespace(config=cfg, items=items)


FAR = [_id(ONE_DEVICE)] * (2 * _worker_pool.LOOKAHEAD) + [_id(EIGHT_DEVICES)]


def test_every_worker_of_a_collected_run_starts_once_with_its_first_replay(
    session, requests_seen):
  _plugin.pytest_collection_finish(_collected(session, FAR))
  assert session.started == []  # reading the manifests waits until a worker has work
  session.replay(FAR[0])
  assert requests_seen[0] == ("ahead", 1, FAR[0])
  assert session.started == [1, 8]
  session.replay(FAR[-1])
  assert session.started == [1, 8]


def test_an_xdist_worker_starts_no_workers_for_items_the_controller_may_give_others(
    session, requests_seen):
  entries = [_id(ONE_DEVICE), _id(EIGHT_DEVICES)]
  _plugin.pytest_collection_finish(_collected(session, entries, workerinput={}))
  session.replay(entries[0])
  assert 8 not in session.started


def test_an_unreadable_entry_ahead_does_not_stop_the_others(session, tmp_path):
  broken = Path(session.options.golden_root) / "cpu" / EIGHT_DEVICES / "manifest.json"
  broken.write_text("{")
  session.prepare(_id(ONE_DEVICE), [_id(EIGHT_DEVICES), _id(ONE_DEVICE)])
  assert set(session.started) == {1}


def test_an_entry_without_shardings_prepared_ahead_has_its_manifest_read_once(session, monkeypatch):
  reads = []
  manifest = Entry.manifest

  def counted(entry):
    reads.append(entry.entry_id)
    return manifest.fget(entry)

  monkeypatch.setattr(Entry, "manifest", property(counted))
  entry_id = _id(ONE_DEVICE)
  session.prepare(_id(EIGHT_DEVICES), [entry_id])
  assert session.pool.manifest(entry_id).case_id == "cholesky_f32"
  assert session.pool.devices_needed(entry_id) == 1
  assert reads.count(entry_id) == 1


@pytest.fixture
def requests_seen(session, monkeypatch):
  """The replay requests the session makes of its workers, by kind (``ahead``: sent ahead of
  asking for its answer; ``request``: its answer asked for), answered with a failure (the
  project's cases, asked once, are kept apart in ``session.cases_asked``). Each worker keeps
  its queue of requests ahead as a worker client does."""
  seen: list[tuple[str, int, str]] = []
  session.cases_asked = []
  queues: dict[int, list] = {}

  def request(self, request):
    if isinstance(request, CasesRequest):
      session.cases_asked.append(self.num_devices)
      return Reply(ProjectCases((), {}), ())
    queue = queues.setdefault(self.num_devices, [])
    if request in queue:  # the answers of those before it are read and dropped
      del queue[:queue.index(request) + 1]
    seen.append(("request", self.num_devices, request.entry_id))
    return Reply(WorkerFailure(FailureKind.GOLDEN_DATA, "not replayed in this test"), ())

  monkeypatch.setattr(_worker_pool.WorkerClient, "request", request)

  def send_ahead(self, request, most=1):
    queue = queues.setdefault(self.num_devices, [])
    if request in queue:
      return True
    if len(queue) >= most:
      return False
    queue.append(request)
    seen.append(("ahead", self.num_devices, request.entry_id))
    return True

  monkeypatch.setattr(_worker_pool.WorkerClient, "send_ahead", send_ahead)
  monkeypatch.setattr(_worker_pool.WorkerClient, "holds_ahead", lambda self, entry_id: any(
      r.entry_id == entry_id for r in queues.get(self.num_devices, ())))
  return seen


def test_the_next_entrys_request_is_sent_to_its_worker_before_the_current_answer_is_awaited(
    session, requests_seen):
  first, second = _id(ONE_DEVICE), _id(EIGHT_DEVICES)
  session.prepare(first)  # at collection
  session.prepare(second)  # as the first item starts, for the item after it
  session.replay(first)
  assert requests_seen == [("ahead", 1, first), ("ahead", 8, second), ("request", 1, first)]
  session.replay(second)  # the last entry, sent ahead already: nothing more is sent
  assert requests_seen[3:] == [("request", 8, second)]
  assert session.cases_asked == [1]  # once, of the worker that replays first


def test_nothing_is_sent_ahead_in_a_cold_replay_or_for_an_entry_already_replayed(
    session, requests_seen, monkeypatch):
  first, second = _id(ONE_DEVICE), _id(EIGHT_DEVICES)
  session.replay(second)
  session.prepare(second)
  session.replay(first)
  assert requests_seen == [("ahead", 8, second), ("request", 8, second),
                           ("ahead", 1, first), ("request", 1, first)]
  cold = dataclasses.replace(
      session.options, settings=dataclasses.replace(session.options.settings, cold=True))
  monkeypatch.setattr(session, "options", cold)
  monkeypatch.setattr(session.pool, "replay_cold", lambda request, num_devices: (WorkerFailure(
      FailureKind.GOLDEN_DATA, "not replayed in this test"), ""))
  session._runs.clear()
  session.prepare(second)
  session.replay(first)
  assert len(requests_seen) == 4


SECOND_ONE_DEVICE = "lapack_potrf/cholesky_f64/2026-11-29_jax-0.10.2"


@pytest.mark.parametrize("most, sent", [(1, ["A2"]), (2, ["A2", "A1"])])
def test_entries_ahead_go_to_their_worker_in_order_and_none_passes_a_full_one(
    session, requests_seen, monkeypatch, most, sent):
  copy_cpu_entries([SECOND_ONE_DEVICE], Path(session.options.golden_root))
  ids = {"A1": _id(ONE_DEVICE), "A2": _id(SECOND_ONE_DEVICE), "E": _id(EIGHT_DEVICES)}
  monkeypatch.setattr(_worker_pool, "AHEAD_PER_WORKER", most)
  session.prepare(ids["A2"], [ids["A1"], ids["E"]])
  session.replay(ids["E"])
  assert requests_seen == [("ahead", 8, ids["E"]), *(("ahead", 1, ids[n]) for n in sent),
                           ("request", 8, ids["E"])]


MANY = [f"lapack_potrf/release_cholesky_f32/{p.name}"
        for p in sorted((ROOT_CPU / "lapack_potrf" / "release_cholesky_f32").iterdir())]


def test_each_manifest_of_a_run_is_read_once_however_far_ahead_it_is_looked_at(
    session, requests_seen, monkeypatch):
  # Entries enter the lookahead long before their requests are sent: reading their manifests
  # then, and again when their requests go, kept more manifests than fit, so every entry's
  # was read twice.
  monkeypatch.setattr(_worker_pool, "LOOKAHEAD", 4)
  monkeypatch.setattr(_worker_pool, "_MANIFESTS_KEPT", 5)
  monkeypatch.setattr(_worker_pool, "AHEAD_PER_WORKER", 2)
  ids = [_id(e) for e in MANY]
  assert len(ids) > 2 * _worker_pool.LOOKAHEAD
  copy_cpu_entries(MANY, Path(session.options.golden_root))
  reads = []
  manifest = Entry.manifest
  monkeypatch.setattr(Entry, "manifest",
                      property(lambda entry: reads.append(entry.entry_id) or manifest.fget(entry)))
  session.prepare(ids[0])
  for i, entry_id in enumerate(ids):
    if i + 1 < len(ids):  # as the plugin does when an item starts
      session.prepare(ids[i + 1], ids[i + 2:i + 2 + _worker_pool.LOOKAHEAD])
    session.replay(entry_id)
  assert [e for e, _, _ in requests_seen].count("request") == len(ids)
  assert sorted(reads) == sorted(ids)
