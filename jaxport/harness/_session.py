"""The harness session: selection, worker, write queue, xdist merge, report and exit status.

``conftest.py`` only translates pytest hooks into calls on one
:class:`HarnessSession` kept in ``config.stash``. The end-of-run report is
computed from the collected outcomes, so a serial run and an ``-n auto`` run
(whose workers send their outcomes to the controller) produce the same report.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from jaxport import _limits
from jaxport._vocabulary import RecordAction
from jaxport.errors import GoldenDataError, HarnessWarning
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import LOCATED_FILES, MANIFEST_FILE, SHARDINGS_FILE, Manifest
from jaxport.golden._store import GoldenStore
from jaxport.harness import _devices, _jax_corpus, _update
from jaxport.harness._judge import _entry as _judge
from jaxport.harness import _coverage as coverage
from jaxport.harness import _expectations as expected_status
from jaxport.harness import _reference as _api
from jaxport.harness import _reporter as reporter
from jaxport.harness._project import OnChange, Project
from jaxport.harness._registry import CaseRegistry
from jaxport.harness._shard import Shard, costs_json
from jaxport.harness._verdicts import Outcome
from jaxport._jaxcompat._version import distribution_version, installed_jax_version
from jaxport.report import (
    DRIFT_KINDS, CorpusImport, DriftItem, FindingKind, Recorded, RunReport, ShardRef,
    Skip, Status, Summary, Updated, Window, write_report)
from jaxport.report import _coverage as run_coverage
from jaxport.report._model import RECORD_ACTIONS, other_host_passes, producer_of
from jaxport.harness._protocol import (ArtifactsAnswer, FailureKind, ProjectCases, RecordAnswer,
                                       ReplayAnswer, WorkerFailure, wrong_kind)
from jaxport.harness._artifact_folder import left_behind
from jaxport.harness._cache_folder import private_folder
from jaxport.harness._requests import (ArtifactsRequest, CasesRequest, FeaturesWanted,
                                       RecordRequest, ReplayRequest)
from jaxport.harness._worker import Reply, WorkerClient

logger = logging.getLogger(__name__)

WORKER_OUTPUT_KEY = "jaxport_harness"
# How many entries ahead of the current one ``prepare`` looks for the workers they need: a
# worker for another device count takes seconds to start, several entries' replays.
LOOKAHEAD = 32
# Manifests the session keeps read (HarnessSession._manifest): the entry being replayed and
# those ahead of it, read to prepare their workers.
_MANIFESTS_KEPT = LOOKAHEAD + 4
# Requests each worker holds ahead of the entry being replayed, of the entries that come next
# (in the order they come): a worker for another device count replays its next entries while
# the current one's worker replays theirs.
AHEAD_PER_WORKER = 8


@dataclasses.dataclass(frozen=True)
class Options:
  platform: str
  record: bool
  strict: bool
  compat_report: str | None
  compat_window_days: int
  golden_root: Path
  today: datetime.date
  worker_timeout_s: float
  partial: bool
  jax_corpus: bool = False
  # Each distinct module compiled once per worker, and kept in jax's compilation cache in
  # ``compile_cache_dir`` for later runs (the project's .jaxport_cache/xla unless another
  # is given; None: none kept); or every module compiled.
  compile_cache: bool = True
  compile_cache_dir: Path | None = None
  # The project's root, below which the cache folder's parents are made private too.
  project_root: Path | None = None
  # Each reader of each entry in a fresh process that has compiled nothing before.
  cold: bool = False
  shard: Shard | None = None
  shard_costs: Mapping[str, float] | None = None
  timings_file: str | None = None
  # Replay, then record a new entry for each case whose function changed.
  update: bool = False
  # Resident memory past which a busy worker is killed (``--compat-worker-memory-mb``).
  worker_max_rss_bytes: int = _limits.MAX_WORKER_RSS_BYTES
  # Where each failing entry's artifacts go (``--compat-artifacts``), or None.
  artifacts_dir: Path | None = None


class HarnessSession:
  """State of one pytest process's harness run (controller, worker or serial)."""

  def __init__(self, options: Options, project: Project,
               corpus: _jax_corpus.CorpusImport | None = None):
    self.options = options
    self.project = project
    self.registry = CaseRegistry(project.case_modules)
    # The project's cases as data, asked of a worker once (or read from the registry).
    self._facts: ProjectCases | None = None
    # Why the case modules failed to load, once they did: asked again, the session says it
    # again rather than importing them again.
    self._facts_error: GoldenDataError | None = None
    self._facts_asked = False
    # jax's corpus imported for this run (controller only; workers get its root in the options).
    self.corpus = corpus
    self.store = GoldenStore(options.golden_root)
    self._outcomes: dict[str, Outcome] = {}
    self._recorded: dict[str, dict[str, Any]] = {}
    self._write_queue: list[str] = []
    self._session_failures: list[str] = []
    self._present: list[str] | None = None
    self._listing_failed = False
    self._clients: dict[int, WorkerClient] = {}
    self._devices: dict[str, int] = {}
    # The entries pytest replays next here, in order, when known (prepare): their requests go
    # to their workers as soon as the current entry's answer is in.
    self._upcoming: list[str] = []
    # The manifests read last (those of the entries ahead, read when their workers are
    # prepared, and the current one's), so that an entry's manifest is read once here.
    self._manifests: collections.OrderedDict[str, Manifest] = collections.OrderedDict()
    self._staging: Path | None = None
    self._seconds: dict[str, float] = {}
    # What the worker printed while replaying the entry replayed last (shown if it fails).
    self._output: dict[str, str] = {}
    # entry -> why it is an expected failure, from its replay until its test report takes it.
    self._xfailed: dict[str, str] = {}
    self._parts: dict[str, dict[str, float]] = {}
    # Per replayed entry, the executables its worker loaded from the cross-run compile cache.
    # entry -> what its replay did: executables loaded from the compile cache, readers' runs
    # and today's exports (summed into the report's summary).
    self._work: dict[str, dict[str, int]] = {}
    self._cache_checked = False
    self._cache_dir: Path | None = None
    self._updates: list[_update.Update] = []
    self._newest_ids: dict[str, str] | None = None
    self._context: _judge.RunContext | None = None
    # What a worker said about itself (a memo in front of jax that stays off), each once.
    self._notices: list[str] = []
    self.report: RunReport | None = None
    # Whether this process ran golden items (or received a worker's results): only then
    # does the run get a compat report.
    self.used = False

  # --- selection ---------------------------------------------------------------

  def entry_ids(self) -> list[str]:
    """Ids of the golden entries the run checks, sorted: those recorded for the platform and,
    in a CPU run, the accelerators' entries, checked without running them."""
    if self._present is None:
      platforms = _devices.checked_platforms(self.options.platform)
      try:
        entries, problems = self.store.listing(
            platform=platforms[0] if len(platforms) == 1 else None)
        self._present = [e.entry_id for e in entries if _platform_of(e.entry_id) in platforms]
        # A folder out of place fails the run on its own; the entries beside it replay.
        self._session_failures.extend(
            f"the golden store holds something that is not an entry (not replayed): {p.message}"
            for p in problems)
      except GoldenDataError as e:
        self._session_failures.append(f"the golden store cannot be listed: {e}")
        self._listing_failed = True
        self._present = []
    return self._present

  def selected_entry_ids(self) -> list[str]:
    """Ids of the entries this process replays: all of them, or this shard's part."""
    present = self.entry_ids()
    if self.options.shard is None:
      return present
    return self.options.shard.select(present, self.options.shard_costs)

  def _newest(self) -> dict[str, str]:
    """The newest entry id of each case with entries on the platform."""
    if self._newest_ids is None:
      self._newest_ids = _update.newest_entries(self.entry_ids())
    return self._newest_ids

  def case_ids(self) -> list[str]:
    return [c.case_id for c in self.case_facts().cases_for(self.options.platform)]

  def _checked_case_ids(self) -> list[str]:
    """The registered cases of every platform whose entries the run checks."""
    return [c.case_id for p in _devices.checked_platforms(self.options.platform)
            for c in self.case_facts().cases_for(p)]

  def case_facts(self) -> ProjectCases:
    """The project's cases as data. A worker this process already runs has imported them and
    is asked once, so that this process never imports them, nor jax; they are imported here
    where no worker serves it (recording, a cold replay, an xdist controller) or the worker
    could not answer. ``GoldenDataError`` when the case modules fail to load."""
    if self._facts_error is not None:
      raise self._facts_error
    if self._facts is None:
      client = self._facts_worker()
      if client is not None:
        self._facts_asked = True
        answer = self._answer(client.request(CasesRequest()), ProjectCases)
        if isinstance(answer, ProjectCases):
          self._facts = answer
        elif answer.kind is FailureKind.CASE_MODULES:  # they fail here as they did there
          self._facts_error = GoldenDataError(answer.why)
          raise self._facts_error
        else:
          logger.debug("the worker did not list the cases (%s); importing them here", answer.why)
      if self._facts is None:
        try:
          self._facts = self.registry.facts()
        except GoldenDataError as e:
          self._facts_error = e
          raise
    return self._facts

  def _facts_worker(self) -> WorkerClient | None:
    """The worker to ask for the cases: a running one of a warm replay, asked once."""
    if self.options.cold or self.recording or self._facts_asked or not self._clients:
      return None
    return self._clients.get(1) or next(iter(self._clients.values()))

  def prefetch_cases(self) -> None:
    """Start importing the case modules on a background thread where this process will need
    them (to update cases, or with no worker to ask), so that the end of the run does not
    wait for them."""
    if self.options.update or (self._facts is None and self._facts_worker() is None):
      self.registry.prefetch()

  @property
  def recording(self) -> bool:
    return self.options.record

  def _worker(self, num_devices: int = 1) -> WorkerClient:
    """The worker for entries needing ``num_devices`` host devices (one process per count)."""
    if num_devices not in self._clients:
      self._clients[num_devices] = WorkerClient(self.project,
                                                timeout_s=self.options.worker_timeout_s,
                                                num_devices=num_devices,
                                                compile_cache=self.compile_cache_dir(),
                                                share_executables=self.shares_executables,
                                                max_rss_bytes=self.options.worker_max_rss_bytes)
    return self._clients[num_devices]

  @property
  def shares_executables(self) -> bool:
    """Whether a worker compiles each distinct module once (not in cold or uncached replay)."""
    return self.options.compile_cache and not self.options.cold

  def compile_cache_dir(self) -> Path | None:
    """The folder where workers keep executables for later runs (``--compat-cache-dir``, by
    default the project's ``.jaxport_cache/xla``), made private on first use; None in cold
    or uncached replay, or where the folder cannot be made private."""
    o = self.options
    if not self.shares_executables or o.compile_cache_dir is None:
      return None
    if not self._cache_checked:
      self._cache_checked = True
      self._cache_dir = private_folder(o.compile_cache_dir, o.project_root)
    return self._cache_dir

  # --- replay ------------------------------------------------------------------

  def prepare(self, entry_id: str, ahead: Sequence[str] = ()) -> None:
    """Start the worker ``entry_id`` will need, so that it loads jax and the project's cases
    while the current entry replays (a no-op when that worker runs already), and those the
    entries ``ahead`` of it need (the ones that run after it, in order, when the caller
    knows them), so that a worker for another device count is ready when its first entry
    comes."""
    self._upcoming = [entry_id, *ahead]
    if self.options.cold or self.recording:
      return
    for upcoming in (entry_id, *ahead):
      try:
        num_devices = self._devices_needed(upcoming)
      except GoldenDataError:
        continue  # replay() reports it
      self._worker(num_devices).start()

  def _devices_needed(self, entry_id: str) -> int:
    """The host devices an entry's replay needs (read once per entry)."""
    if entry_id not in self._devices:
      entry = self.store.entry(entry_id)
      manifest = entry.manifest
      self._keep_manifest(entry_id, manifest)
      # Only an entry with recorded shardings may need more than one device (reading them
      # reads the manifest again).
      shardings = entry.shardings() if SHARDINGS_FILE in manifest.files else None
      self._devices[entry_id] = _devices.devices_needed(shardings)
    return self._devices[entry_id]

  def _keep_manifest(self, entry_id: str, manifest: Manifest) -> None:
    self._manifests[entry_id] = manifest
    while len(self._manifests) > _MANIFESTS_KEPT:
      self._manifests.popitem(last=False)

  def _manifest(self, entry_id: str) -> Manifest:
    """The entry's validated manifest, read once while it is among the last few asked for."""
    if entry_id not in self._manifests:
      self._keep_manifest(entry_id, self.store.entry(entry_id).manifest)
    return self._manifests[entry_id]

  def replay(self, entry_id: str) -> Outcome:
    """Replay one entry in the worker and classify the findings; the outcome is kept."""
    # A changed function fails the case's newest entry only: older ones stay, differing from
    # today's function, until pruned.
    newest = self._newest().get(EntryId.parse(entry_id).case_id) == entry_id
    try:
      num_devices = self._devices_needed(entry_id)
      manifest = self._manifest(entry_id)
    except GoldenDataError as e:
      outcome = _judge.judge_unreadable(entry_id, e, self._run_context(), newest=newest)
    else:
      request, not_run = self._replay_request(entry_id, manifest)
      self._output = {}
      if self.options.cold:
        answer = self._replay_cold(request, num_devices)
      else:
        reply = self._worker(num_devices).request(request)
        answer = self._answer(reply, ReplayAnswer)
        self._output[entry_id] = reply.output
        self._send_next(entry_id)
      if isinstance(answer, ReplayAnswer):
        self._seconds[entry_id] = answer.seconds
        self._parts[entry_id] = dict(answer.timings)
        self._work[entry_id] = {"from_cache": answer.from_cache,
                                "reader_runs": len(answer.readers),
                                "exports_today": int(answer.today is not None)}
      outcome = _judge.judge(entry_id, answer, request, _judge.EntryContext(
          manifest, newest=newest, min_consumer=self._min_consumer(manifest),
          numerics_skipped=not_run), self._run_context())
    self._outcomes[entry_id] = outcome
    return outcome

  def _replay_request(self, entry_id: str,
                      manifest: Manifest) -> tuple[ReplayRequest, str | None]:
    """The worker's replay request for an entry (every reader, today's lowering, the blob's
    features where its releases are wanted), and why its numerics are not run (None when
    they are)."""
    # An accelerator's entry in a CPU run: read and compared, not run.
    not_run = _devices.numerics_skip(self.options.platform, _platform_of(entry_id))
    features = None
    if self._min_consumer(manifest) is not None:
      features = FeaturesWanted.MIN_CONSUMER
    elif self.options.compat_report:
      features = FeaturesWanted.REPORT
    return ReplayRequest(str(self.options.golden_root), entry_id, tuple(_api.readers()),
                         run=not_run is None, features=features), not_run

  def _send_next(self, done: str) -> None:
    """Send the requests of the entries that come next to their workers now, in order, up to
    ``AHEAD_PER_WORKER`` each: a worker replays while this process classifies the entry
    ``done`` and pytest moves on (it would wait otherwise), and the worker of another device
    count replays its coming entries beside it."""
    full: set[int] = set()
    for upcoming in self._upcoming:
      if upcoming == done or upcoming in self._outcomes:
        continue
      try:
        num_devices = self._devices_needed(upcoming)
        request, _ = self._replay_request(upcoming, self._manifest(upcoming))
      except GoldenDataError:
        continue  # its own replay reports it, asking no worker
      if num_devices not in full and not self._worker(num_devices).send_ahead(
          request, AHEAD_PER_WORKER):
        full.add(num_devices)  # and nothing after it goes to that worker, to keep the order

  def _answer(self, reply: Reply, kind: type) -> Any:
    """A worker's reply to a request whose answer is of ``kind``, its notices kept: that
    answer or a failure; an answer of another kind is a malformed one."""
    answer = reply.answer
    self._take_notices(reply.notices)
    if not isinstance(answer, (kind, WorkerFailure)):
      return wrong_kind(kind, answer)
    return answer

  def _run_context(self) -> _judge.RunContext:
    """What every entry of this run is judged against (made once)."""
    if self._context is None:
      o, project = self.options, self.project
      self._context = _judge.RunContext(
          today=o.today, window_days=o.compat_window_days, consumer=installed_jax_version(),
          strict=o.strict, updating=o.update, changes_fail=project.on_change is OnChange.FAIL,
          expectations=(None if project.expectations is None
                        else expected_status.load_table(project.expectations)),
          project_targets=project.targets)
    return self._context

  def _min_consumer(self, manifest: Manifest) -> str | None:
    case = self.case_facts().case(manifest.case_id)
    return manifest.min_consumer or (case.min_consumer if case is not None else None)

  def _replay_cold(self, request: ReplayRequest,
                   num_devices: int) -> ReplayAnswer | WorkerFailure:
    """Each reader in its own fresh worker, deserializing and calling before anything else
    (today's export runs after the last reader); a failure is that entry's answer."""
    readers = _api.readers()
    parts: list[ReplayAnswer] = []
    for i, reader in enumerate(readers):
      last = i == len(readers) - 1
      client = WorkerClient(self.project, timeout_s=self.options.worker_timeout_s,
                            num_devices=num_devices, cold_start=True,
                            max_rss_bytes=self.options.worker_max_rss_bytes)
      try:
        reply = client.request(dataclasses.replace(request, readers=(reader,),
                                                   current=request.current and last))
        part = self._answer(reply, ReplayAnswer)
        self._output[request.entry_id] = self._output.get(request.entry_id, "") + reply.output
      finally:
        client.close()
      if isinstance(part, WorkerFailure):
        if part.kind is FailureKind.CRASHED:
          part = dataclasses.replace(part, why=f"cold replay with the {reader} reader in a "
                                               f"fresh process: {part.why}")
        return part
      parts.append(part)
    timings: dict[str, float] = {}
    for part in parts:
      for name, seconds in part.timings.items():
        timings[name] = timings.get(name, 0.0) + seconds
    last = parts[-1]
    return dataclasses.replace(last, readers=tuple(r for p in parts for r in p.readers),
                               seconds=sum(p.seconds for p in parts), timings=timings)

  def take_expected_failure(self, entry_id: str) -> str | None:
    """Why the entry just replayed is an expected failure (None: it is not), once."""
    return self._xfailed.pop(entry_id, None)

  def check_replay(self, entry_id: str) -> None:
    """The body of one replay test item: fail, warn or pass."""
    outcome = self.replay(entry_id)
    text = "\n".join(outcome.messages)
    if outcome.status in (Status.FAIL, Status.WARN):
      text += _update.change_hint(outcome, self.options.update,
                                  newest=self._newest().get(outcome.case_id) == entry_id)
    if outcome.status is Status.FAIL:
      text += self._write_artifacts(entry_id) + _printed(self._output.get(entry_id, ""))
      pytest.fail(f"golden entry {entry_id}:\n{text}", pytrace=False)
    if outcome.status is Status.XFAIL:
      # Reported as xfailed by the plugin's report hook: pytest.xfail() would have pytest
      # format a traceback, with the source of every frame, for each expected failure.
      self._xfailed[entry_id] = f"expected failure: {outcome.expected_failure}"
      return
    if outcome.status is Status.WARN:
      warnings.warn(HarnessWarning(f"golden entry {entry_id}:\n{text}"), stacklevel=2)

  def _write_artifacts(self, entry_id: str) -> str:
    """Have a worker write a failed entry's artifacts (``--compat-artifacts``); the line that
    says where they are, or why there are none ("" without the option)."""
    if self.options.artifacts_dir is None:
      return ""
    try:
      num_devices = self._devices_needed(entry_id)
    except GoldenDataError:
      num_devices = 1
    request = ArtifactsRequest(
        str(self.options.golden_root), entry_id, str(self.options.artifacts_dir),
        run=_devices.numerics_skip(self.options.platform, _platform_of(entry_id)) is None)
    answer = self._answer(self._worker(num_devices).request(request), ArtifactsAnswer)
    if isinstance(answer, ArtifactsAnswer):
      return f"\nartifacts: {answer.folder}"
    left = left_behind(self.options.artifacts_dir, entry_id)
    if left is None:
      return f"\nartifacts: none written ({answer.why})"
    folder, files, writing = left
    return (f"\nartifacts: {folder}, incomplete: {', '.join(files) or 'no file'} written"
            + (f", {writing} not (the worker stopped while writing it)" if writing else "")
            + f" ({answer.why})")

  # --- record ------------------------------------------------------------------

  def _staging_root(self) -> Path:
    if self._staging is None:
      self._staging = Path(tempfile.mkdtemp(prefix="jaxport-harness-staging-"))
    return self._staging

  def record(self, case_id: str) -> dict[str, Any]:
    """Record ``case_id`` into staging and queue it; an identical existing entry is left alone."""
    case = self.registry.case(case_id)
    worker = self._worker(case.num_devices if case is not None else 1)
    reply = worker.request(RecordRequest(case_id, self.options.today.isoformat(),
                                         str(self._staging_root())))
    answer = self._answer(reply, RecordAnswer)
    if isinstance(answer, WorkerFailure):
      why = answer.why
      detail = _without_repeat(answer.traceback or answer.stderr_tail, why)
      result = {"case_id": case_id, "entry_id": None, "action": RecordAction.ERROR,
                "message": f"recording failed: {why}" + (f"\n{detail}" if detail else "")
                + _printed(reply.output)}
    else:
      entry_id = answer.entry_id
      result = {"case_id": case_id, "entry_id": entry_id, "action": RecordAction.WRITTEN,
                "message": ""}
      try:
        # The day's newest revision of the case is what today's recording is compared with.
        same_day = self.store.same_day(GoldenStore(self._staging_root()).entry(entry_id).manifest)
        existing = same_day[-1].path if same_day else self.store.entry(entry_id).path
        if same_day:
          entry_id = result["entry_id"] = same_day[-1].entry_id
      except GoldenDataError:
        existing = None  # absent, or refused (a link): writing it reports why
      if existing is not None:
        differing = _differing_files(self._staging_root() / entry_id, existing)
        if differing:
          result.update(action=RecordAction.CONFLICT, message=(
              f"{entry_id} already exists and today's recording differs in {differing}. The "
              "store never overwrites an entry (source locations are not compared, so a moved "
              "case is not a cause). Usual causes: the lowering or the results changed today, "
              "or the build is not deterministic. Compare the module.mlir files to see which; "
              "where the function's lowering or results changed on purpose, --compat-update "
              "records it as the day's next revision."))
        else:
          result["action"] = RecordAction.UNCHANGED
      else:
        self._write_queue.append(entry_id)
    self._recorded[case_id] = result
    return result

  def check_record(self, case_id: str) -> None:
    result = self.record(case_id)
    if result["action"] in (RecordAction.ERROR, RecordAction.CONFLICT):
      pytest.fail(f"case {case_id}: {result['message']}", pytrace=False)

  def flush_writes(self) -> None:
    """Write every queued recording into the golden store (atomic, append-only).

    A recording that cannot be written is not lost: the staging store that
    holds it is kept, and the session failure names it.
    """
    staging = GoldenStore(self._staging_root()) if self._write_queue else None
    failed, raced = [], []
    for entry_id in self._write_queue:
      try:
        staged = staging.entry(entry_id)
        self.store.write_entry(staged.manifest, staged.blob(), staged.inputs(),
                               staged.expected_outputs(), staged.module_text(), staged.shardings())
      except GoldenDataError as e:
        (raced if self._written_meanwhile(entry_id) else failed).append(entry_id)
        self._session_failures.append(f"writing {entry_id} failed: {e}")
        for r in self._recorded.values():
          if r["entry_id"] == entry_id:
            r.update(action=RecordAction.ERROR, message=str(e))
    self._write_queue.clear()
    if raced:
      self._session_failures.append(
          f"{len(raced)} recording(s) were written meanwhile by another recording of the same "
          f"store ({', '.join(raced)}); this run's are kept in {self._staging}, a golden store "
          "of the same layout: compare the two (module.mlir, manifest.json), and record again "
          "if they differ.")
    if failed:
      self._session_failures.append(
          f"{len(failed)} recording(s) could not be written and are kept in {self._staging}, "
          f"a golden store of the same layout; once {self.store.root} is writable, copy its "
          f"entry folders there (cp -r {self._staging}/* {self.store.root}/) or record again.")
    if raced or failed:
      self._staging = None  # kept: close() must not remove it

  def _written_meanwhile(self, entry_id: str) -> bool:
    """Whether ``entry_id`` stands in the store now (another recording wrote it after this
    run found it absent)."""
    try:
      self.store.entry(entry_id)
    except GoldenDataError:
      return False
    return True

  # --- update ------------------------------------------------------------------

  def apply_updates(self) -> None:
    """``--compat-update``, at the end of the run (serial run or xdist controller): record a
    new entry of every changed or new case and write it into the store, append-only."""
    o = self.options
    changes = _update.changed_cases(
        self._outcomes, self.entry_ids(), self.case_ids(),
        include_new=not (o.partial or self._listing_failed))
    self._updates = [self._update_case(change) for change in changes]

  def _update_case(self, change: _update.CaseChange) -> _update.Update:
    case = self.registry.case(change.case_id)
    answer = self._answer(self._worker(case.num_devices if case is not None else 1).request(
        RecordRequest(change.case_id, self.options.today.isoformat(),
                      str(self._staging_root()))), RecordAnswer)
    if isinstance(answer, WorkerFailure):
      return self._update_failed(change, f"recording failed: {answer.why}")
    try:
      staged = GoldenStore(self._staging_root()).entry(answer.entry_id)
      manifest = staged.manifest
      # Only the day's newest revision counts: a change reverted the same day is the
      # revision after it, never the older revision it happens to equal.
      newest = self.store.same_day(manifest)[-1:]
      if newest and not _differing_files(staged.path, newest[0].path):
        return _update.Update(change, RecordAction.UNCHANGED, newest[0].entry_id,
                              "today's recording equals the newest entry of the same day",
                              targets=_update.targets_of(manifest))
      written = self.store.write_entry(
          self.store.next_revision(manifest), staged.blob(), staged.inputs(),
          staged.expected_outputs(), staged.module_text(), staged.shardings())
    except GoldenDataError as e:
      kept = self._staging
      self._staging = None  # kept: close() must not remove it
      return self._update_failed(change, f"writing {answer.entry_id} failed: {e}; the "
                                         f"recording is kept in the golden store {kept}")
    return _update.Update(change, RecordAction.WRITTEN, written.entry_id,
                          targets=_update.targets_of(manifest))

  def _update_failed(self, change: _update.CaseChange, why: str) -> _update.Update:
    self._session_failures.append(f"{_update.UPDATE_FLAG}: case {change.case_id}: {why}")
    return _update.Update(change, RecordAction.ERROR, None, why)

  def _take_notices(self, notices: Iterable[str]) -> None:
    """Keep the worker's notices, each once (a crashed worker's answer has none)."""
    self._notices.extend(n for n in notices if n not in self._notices)

  # --- xdist -------------------------------------------------------------------

  def _worked(self, what: str) -> int:
    return sum(work[what] for work in self._work.values())

  def worker_output(self) -> str:
    return json.dumps({"outcomes": {k: o.to_json() for k, o in self._outcomes.items()},
                       "recorded": self._recorded,
                       "session_failures": self._session_failures,
                       "seconds": self._seconds, "parts": self._parts,
                       "work": self._work, "notices": self._notices})

  def merge(self, payload: str) -> None:
    data = json.loads(payload)
    self.used = True
    self._outcomes.update((k, Outcome.from_json(o)) for k, o in data["outcomes"].items())
    self._recorded.update(data["recorded"])
    self._seconds.update(data["seconds"])
    self._parts.update(data["parts"])
    self._work.update(data["work"])
    self._session_failures.extend(f for f in data["session_failures"]
                                  if f not in self._session_failures)
    self._take_notices(data["notices"])

  # --- end of run --------------------------------------------------------------

  def build_report(self) -> RunReport:
    """The report of the run, from collected outcomes only (deterministic, sorted)."""
    o = self.options
    failures = list(self._session_failures)
    warns: list[str] = sorted(self._notices)
    outcomes = [self._outcomes[k] for k in sorted(self._outcomes)]
    present = self.entry_ids()
    skips = [Skip(out.entry_id, why) for out in outcomes for why in out.skips]
    try:
      cases = self.case_facts().cases_for(o.platform)
      unreachable = dict(self.case_facts().unreachable)
    except GoldenDataError as e:
      # Every item failed on it already; the report says it once and skips what needs cases.
      cases, unreachable = None, {}
      failures.append(f"the project's case modules cannot be loaded: {e}")
    targets = coverage.target_coverage(outcomes, o.platform, self.project)
    lowered_for = {p for c in cases or () if c.lowering_only for p in c.export_platforms}
    other = coverage.lowering_only_coverage(outcomes, lowered_for, unreachable, self.project)
    if cases is None:
      skips.append(Skip(coverage.CHECKS, "the project's case modules could not be loaded"))
    elif o.record:
      skips.append(Skip("replay, coverage and tripwire", "record mode writes entries only"))
    elif o.partial:
      skips.append(Skip(coverage.CHECKS,
                        "the selection was narrowed (-k, -m, --deselect, node ids or files)"))
    elif o.jax_corpus:
      skips.append(Skip("coverage and missing-case checks",
                        "the run replays jax's own corpus, not this repository's golden store"))
      unreplayed = run_coverage.tripwire(present, outcomes)
      if unreplayed:
        failures.append(f"tripwire: {len(outcomes)} corpus entries replayed but {len(present)} "
                        f"were imported; not replayed: {run_coverage.abbreviate(unreplayed)}")
    elif self._listing_failed:
      skips.append(Skip(coverage.CHECKS,
                        "the golden store could not be listed, so no entry was replayed"))
    elif o.shard is not None:
      skips.append(coverage.shard_skip(o.shard))
    else:
      checked_targets, checked_other, case_ids = targets, other, self.case_ids()
      if o.update:
        # The cases updated in this run have their new entries; those are replayed next run.
        checked_targets, checked_other, case_ids, recorded_now = _update.settled(
            targets, other, case_ids, self._updates)
        skips += recorded_now
      checks = coverage.session_checks(
          o.platform, self.project, targets=checked_targets, other=checked_other,
          entries=outcomes, present=present, case_ids=case_ids,
          checked_case_ids=self._checked_case_ids(), strict=o.strict)
      failures += checks.failures
      warns += checks.warnings
      skips += checks.skips
    if self.corpus is not None:
      skips.extend(Skip("jax corpus import", why) for why in self.corpus.skipped)
      failures.extend(f"jax corpus import failed: {why}" for why in self.corpus.failed)
    recorded = tuple(Recorded.from_json(r, f"recorded {r['case_id']}")
                     for r in sorted(self._recorded.values(), key=lambda r: r["case_id"]))
    entries = tuple(x.report_entry() for x in outcomes)
    summary = Summary(
        counts={s: sum(1 for x in outcomes if x.status is s) for s in Status},
        present=len(present), replayed=len(outcomes),
        actions={a: sum(1 for r in recorded if r.action == a) for a in RECORD_ACTIONS},
        upgraded=sum(1 for x in outcomes if x.has(FindingKind.UPGRADED)),
        other_host=other_host_passes(outcomes),
        from_cache=(self._worked("from_cache")
                    if self.compile_cache_dir() is not None else None),
        reader_runs=None if o.record else self._worked("reader_runs"),
        exports_today=None if o.record else self._worked("exports_today"))
    self.report = RunReport(
        mode="record" if o.record else "update" if o.update else "replay",
        platform=o.platform,
        today=o.today,
        compat_window_days=o.compat_window_days,
        strict=o.strict,
        readers=tuple(_api.readers()),
        producer=_api.PRIMARY,
        versions={"jax": installed_jax_version(),
                  **{d: distribution_version(d) for d in ("jaxlib", "jaxport", "numpy")}},
        entries=entries,
        targets=targets,
        skips=tuple(skips),
        drift=tuple(DriftItem(x.entry_id, str(f.kind), f.message)
                    for x in outcomes for f in x.findings if f.kind in DRIFT_KINDS),
        recorded=recorded,
        session_failures=tuple(failures),
        session_warnings=tuple(warns),
        summary=summary,
        shard=None if o.shard is None else ShardRef(o.shard.index, o.shard.count),
        lowering_only_targets=other,
        jax_corpus=(None if self.corpus is None
                    else CorpusImport.from_json(self.corpus.to_json(), "jax_corpus")),
        replay_hosts=tuple(_distinct(x.replay_host for x in outcomes
                                     if x.replay_host is not None)),
        updated=(None if not o.update else tuple(
            Updated.from_json(u.to_json(), u.change.case_id)
            for u in sorted(self._updates, key=lambda u: u.change.case_id))),
        declared_targets={k: tuple(v) for k, v in self.project.targets.by_platform.items()},
        release_windows={p: Window.from_json(w, p) for p, w in expected_status.release_windows(
            (producer_of(x.entry_id) for x in outcomes), o.today).items()})
    return self.report

  def finish(self) -> bool:
    """Build the report, write it if asked; True when the session must fail."""
    report = self.build_report()
    if self.options.compat_report:
      write_report(report, self.options.compat_report)
    if self.options.timings_file:
      reporter.write_json(costs_json(self._seconds, self._parts), self.options.timings_file)
    return bool(report.session_failures)

  def close(self) -> None:
    """Stop the workers and remove the staging folder (unless a failed write keeps it),
    even when stopping a worker is interrupted; closing twice does nothing more."""
    try:
      for client in list(self._clients.values()):
        client.close()
    finally:
      self._clients.clear()
      if self._staging is not None:
        shutil.rmtree(self._staging, ignore_errors=True)
        self._staging = None


def _differing_files(staged: Path, existing: Path) -> list[str]:
  """Files that differ between two entry directories: the blob and the module text compared
  without their source locations (two comment lines above a case move them), the manifest
  without its digest, revision and those two files' digests, every other file byte for byte."""
  names = sorted({p.name for p in staged.iterdir()} | {p.name for p in existing.iterdir()})
  out = []
  for name in names:
    a, b = staged / name, existing / name
    if not (a.is_file() and b.is_file()):
      out.append(name)
    elif name == MANIFEST_FILE:
      if _manifest_payload(a) != _manifest_payload(b):
        out.append(name)
    elif name in LOCATED_FILES:
      if not _same_without_locations(name, a.read_bytes(), b.read_bytes()):
        out.append(name)
    elif a.read_bytes() != b.read_bytes():
      out.append(name)
  return out


def _same_without_locations(name: str, a: bytes, b: bytes) -> bool:
  if a == b:
    return True
  # Parsing modules imports jax, which the pytest side does not otherwise (its light imports).
  from jaxport.golden import _locations
  return _locations.same_without_locations(name, a, b)


def _manifest_payload(path: Path) -> dict:
  d = json.loads(path.read_text())
  d.pop("digest", None)
  d.pop("revision", None)  # the entry's name among those of its day, not what it holds
  files = d.get("files")
  if isinstance(files, dict):
    # Digests of files that carry source locations: those files are compared without them.
    d["files"] = {k: v for k, v in files.items() if k not in LOCATED_FILES}
  return d


def _platform_of(entry_id: str) -> str:
  """The platform folder of an entry id (``<platform>/<family>/<case_id>/<dir>``)."""
  return EntryId.parse(entry_id).platform



def _distinct(items: Any) -> list[Any]:
  """``items`` in order, each once (for unhashable JSON records)."""
  out: list[Any] = []
  for x in items:
    if x not in out:
      out.append(dict(x))
  return out


def _without_repeat(traceback_text: str, message: str) -> str:
  """A worker's traceback without its closing exception line when that line only repeats
  ``message`` (already said once above it)."""
  lines = traceback_text.rstrip().splitlines()
  while lines and lines[-1].strip() and lines[-1].strip() in message:
    lines.pop()
  return "\n".join(lines)


def _printed(output: str) -> str:
  """The section of a failure that quotes what the worker printed while handling its request
  ("" when it printed nothing)."""
  if not output.strip():
    return ""
  return ("\nwhat the worker wrote to stdout and stderr meanwhile (the case code's prints, "
          f"jax's warnings):\n{output.rstrip()}")
