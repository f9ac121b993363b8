"""The harness session: selection, replay and judgement, the xdist merge and the exit status.

The pytest plugin only translates pytest hooks into calls on one
:class:`HarnessSession` kept in ``config.stash``. The session owns the run's
selection and outcomes; it hands the workers to a :class:`WorkerPool`, the
recordings to a :class:`Recorder` and the report to :func:`build_run_report`,
which works from the collected outcomes only, so a serial run and an
``-n auto`` run (whose workers send their outcomes to the controller) produce
the same report.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from jaxport._records import Strict
from jaxport._vocabulary import RecordAction
from jaxport.errors import GoldenDataError, HarnessWarning, JaxportError, WorkerAnswerError
from jaxport.golden._entry_id import EntryId, read_entry_id, require_entry_id
from jaxport.golden._entry import entry_sort_key
from jaxport.golden._manifest import CustomCallSignature, Manifest
from jaxport.golden._store import GoldenStore
from jaxport.harness import _devices
from jaxport.harness._controller import _jax_corpus, _update
from jaxport.harness._controller._cache_folder import DEFAULT_FOLDER
from jaxport.harness._controller._device_check import DeviceCheck, check_devices
from jaxport.harness._controller._entry_run import EntryRun
from jaxport.harness._judge import _entry as _judge
from jaxport.harness._judge import _expectations as expected_status
from jaxport.harness._protocol import _readers
from jaxport.releases import MeasuredRuns, measured_path, read_measured
from jaxport.harness._controller import _reporter as reporter
from jaxport.harness._project import OnChange, Project
from jaxport.harness._controller._recorder import Recorder
from jaxport.harness._registry import CaseRegistry
from jaxport.harness._controller._run_report import RunFacts, build_run_report
from jaxport.harness._controller._settings import Options
from jaxport.harness._controller._shard import costs_json
from jaxport.report._entries import EntryResult
from jaxport.harness._controller._worker_pool import WorkerPool, printed
from jaxport._jaxcompat._version import installed_jax_version
from jaxport.report import RunReport, Status, write_report
from jaxport.report._sections import Recorded
from jaxport._platforms import is_host
from jaxport.harness._protocol._answers import (ArtifactsAnswer, FailureKind, ProjectCases,
                                                ReplayAnswer)
from jaxport.harness._protocol._artifact_folder import left_behind
from jaxport.harness._protocol._requests import (ArtifactsRequest, CasesRequest, FeaturesWanted,
                                                 ReplayRequest)

logger = logging.getLogger(__name__)

WORKER_OUTPUT_KEY = "jaxport_harness"


class HarnessSession:
  """State of one pytest process's harness run (controller, worker or serial)."""

  def __init__(self, options: Options, project: Project,
               corpus: _jax_corpus.CorpusImport | None = None):
    self.store = GoldenStore(options.golden_root)
    self.pool = WorkerPool(project, self.store, options)
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
    # entry -> its replay in this run: outcome, seconds, what the replay did, and what its
    # test item has yet to report (a worker's output, why it is an expected failure).
    self._runs: dict[EntryId, EntryRun] = {}
    self._session_failures: list[str] = []
    # What the run went on without, said once (failures under --compat-strict): a
    # measurements file that does not read. Each process finds it itself.
    self._session_warnings: list[str] = []
    self._measured: MeasuredRuns | None = None
    self.recorder = Recorder(self.store, self.pool, self.registry, options.settings.today,
                             self._session_failures)
    self._present: list[EntryId] | None = None
    self._listing_failed = False
    self._newest_ids: dict[str, str] | None = None
    self._context: _judge.RunContext | None = None
    self.report: RunReport | None = None
    # The run's devices as its worker found them (asked once, on an accelerator run), and
    # whether a golden item has failed for a device that did not open (the others skip).
    self._devices: DeviceCheck | None = None
    self._device_failed = False
    # Whether this process ran golden items (or received a worker's results): only then
    # does the run get a compat report.
    self.used = False

  @property
  def options(self) -> Options:
    """The run's options: the worker pool's own, so that the session and its workers never
    read two different ones."""
    return self.pool.options

  @options.setter
  def options(self, options: Options) -> None:
    self.pool.options = options

  # --- selection ---------------------------------------------------------------

  def entry_ids(self) -> list[EntryId]:
    """Ids of the golden entries the run checks, sorted: those recorded for the platform and,
    in a CPU run, the accelerators' entries, checked without running them."""
    if self._present is None:
      platforms = _devices.checked_platforms(self.options.settings.platform)
      try:
        entries, problems = self.store.listing(
            platform=platforms[0] if len(platforms) == 1 else None)
        self._present = [e.entry_id for e in entries if e.entry_id.platform in platforms]
        # A folder out of place fails the run on its own; the entries beside it replay.
        self._session_failures.extend(
            f"the golden store holds something that is not an entry (not replayed): {p.message}"
            for p in problems)
      except GoldenDataError as e:
        self._session_failures.append(f"the golden store cannot be listed: {e}")
        self._listing_failed = True
        self._present = []
    return self._present

  def selected_entry_ids(self) -> list[EntryId]:
    """Ids of the entries this process replays: all of them, or this shard's part."""
    present = self.entry_ids()
    if self.options.settings.shard is None:
      return present
    return self.options.settings.shard.select(present, self.options.settings.costs)

  def _newest(self) -> dict[str, EntryId]:
    """The newest entry id of each case with entries on the platform."""
    if self._newest_ids is None:
      self._newest_ids = _update.newest_entries(self.entry_ids())
    return self._newest_ids

  def case_ids(self) -> list[str]:
    return [c.case_id for c in self.case_facts().cases_for(self.options.settings.platform)]

  def case_facts(self) -> ProjectCases:
    """The project's cases as data. A worker this process already runs has imported them and
    is asked once, so that this process never imports them, nor jax; they are imported here
    where no worker serves it (recording, a cold replay, an xdist controller) or the worker
    could not answer. ``GoldenDataError`` when the case modules fail to load."""
    if self._facts_error is not None:
      raise self._facts_error
    if self._facts is None:
      if self._asks_a_worker():
        self._facts_asked = True
        answer = self.pool.answer(self.pool.any_worker().request(CasesRequest()), ProjectCases)
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

  def _asks_a_worker(self) -> bool:
    """Whether the cases are asked of a worker: a running one, asked once; on a CPU run only
    in a warm replay (an accelerator run's pytest process imports neither the cases nor
    jax)."""
    on_cpu_only = self.options.settings.cold or self.recording
    return not ((on_cpu_only and is_host(self.options.settings.platform)) or self._facts_asked
                or not self.pool.running)

  def prefetch_cases(self) -> None:
    """Start importing the case modules on a background thread where this process will need
    them (to update cases, or with no worker to ask), so that the end of the run does not
    wait for them."""
    if self.options.settings.update or (self._facts is None and not self._asks_a_worker()):
      self.registry.prefetch()

  @property
  def recording(self) -> bool:
    return self.options.settings.record

  def compile_cache_dir(self) -> Path | None:
    """The folder where workers keep executables for later runs (None: none kept)."""
    return self.pool.compile_cache_dir()

  # --- replay ------------------------------------------------------------------

  def prepare(self, entry_id: EntryId, ahead: Sequence[EntryId] = ()) -> None:
    """Start the workers ``entry_id`` and the entries ``ahead`` of it will need."""
    self.pool.prepare(entry_id, ahead)

  def expect(self, entry_ids: Iterable[EntryId]) -> None:
    """The entries this process replays, in order, once known: every worker they need starts
    with the first replay."""
    self.pool.expect(entry_ids)

  def devices(self) -> DeviceCheck:
    """The run's devices, asked of its worker once (see ``_device_check``)."""
    if self._devices is None:
      self._devices = check_devices(self.pool, self.options.settings.platform)
      if self._devices.problem is None and not is_host(self._devices.platform):
        self.case_facts()  # while the worker that answered holds the device
    return self._devices

  def _device_gate(self) -> None:
    """Fail the first golden item, naming why, and skip the others, where the run's device
    did not open or is another platform's; nothing where the entries can run."""
    check = self.devices()
    if check.problem is None:
      return
    if not self._device_failed:
      self._device_failed = True
      if check.problem not in self._session_failures:
        self._session_failures.append(check.problem)
      pytest.fail(f"jaxport compat harness: {check.problem}", pytrace=False)
    pytest.skip(f"not run: the {check.platform} device is not usable here (the first golden "
                "item's failure says why)")

  def replay(self, entry_id: EntryId) -> EntryResult:
    """Replay one entry in the worker and judge the answer; the entry's run is kept."""
    require_entry_id(entry_id, "HarnessSession.replay")
    # A changed function fails the case's newest entry only: older ones stay, differing from
    # today's function, until pruned.
    newest = self._newest().get(entry_id.case_id) == entry_id
    try:
      num_devices = self.pool.devices_needed(entry_id)
      manifest = self.pool.manifest(entry_id)
    except GoldenDataError as e:
      run = EntryRun(_judge.judge_unreadable(entry_id, e, self._run_context(), newest=newest))
    else:
      request, not_run = self._replay_request(entry_id, manifest)
      if self.options.settings.cold:
        if not is_host(self.options.settings.platform):
          self.pool.close()  # each reader's fresh worker opens the device in turn
        answer, output = self.pool.replay_cold(request, num_devices)
      else:
        reply = self.pool.replay(request, num_devices, self._runs.__contains__,
                                 lambda e, m: self._replay_request(e, m)[0])
        answer, output = self.pool.answer(reply, ReplayAnswer), reply.output
      outcome = _judge.judge(entry_id, answer, request, _judge.EntryContext(
          manifest, newest=newest, min_consumer=self._min_consumer(manifest),
          numerics_skipped=not_run, current_jax=self._current_jax_lowering(entry_id, manifest)),
          self._run_context())
      if isinstance(answer, ReplayAnswer):
        run = EntryRun(outcome, seconds=answer.seconds, parts=dict(answer.timings),
                       from_cache=answer.from_cache, reader_runs=len(answer.readers),
                       exports_today=int(answer.today is not None), output=output)
      else:
        run = EntryRun(outcome, output=output)
    self._runs[entry_id] = run
    return run.outcome

  def _current_jax_lowering(self, entry_id: EntryId,
                            manifest: Manifest) -> tuple[CustomCallSignature, ...] | None:
    """For an entry another jax release recorded, the custom-call signatures of its case's
    newest entry recorded by the installed jax, else of its ``lowering_twin``'s (None: none,
    or the entry is the installed jax's own): the evidence that a lowering difference of the
    entry is jax's."""
    consumer = installed_jax_version()
    if manifest.producer.jax in (None, consumer):
      return None
    mine = sorted((e for e in self.entry_ids()
                   if e.case_key == entry_id.case_key and e.producer == consumer),
                  key=entry_sort_key)
    if not mine:
      mine = self._twin_entries(manifest.case_id, consumer)
    if not mine:
      return None
    try:
      return tuple(self.pool.manifest(mine[-1], keep=True).custom_call_targets)
    except GoldenDataError:  # its own replay says what is wrong with it
      return None

  def _twin_entries(self, case_id: str, consumer: str) -> list[EntryId]:
    """The entries recorded by jax ``consumer`` of the case's ``lowering_twin`` (a lowering-only
    case exporting the same function), oldest first; none where it declares no twin."""
    try:
      case = self.case_facts().case(case_id)
    except GoldenDataError:  # the case modules' failure is said once, where the run lists them
      return []
    if case is None or case.lowering_twin is None:
      return []
    return sorted((e for e in self.entry_ids()
                   if e.case_id == case.lowering_twin and e.producer == consumer),
                  key=entry_sort_key)

  def _replay_request(self, entry_id: EntryId,
                      manifest: Manifest) -> tuple[ReplayRequest, str | None]:
    """The worker's replay request for an entry (every reader, today's lowering, the blob's
    features where its releases are wanted), and why its numerics are not run (None when
    they are)."""
    # An accelerator's entry in a CPU run, or one needing more devices than an accelerator
    # machine has: read and compared, not run.
    not_run = _devices.numerics_skip(self.options.settings.platform, entry_id.platform)
    if not_run is None and not is_host(self.options.settings.platform):
      not_run = self.devices().shortfall(self._devices_of(entry_id, manifest))
    features = None
    if self._min_consumer(manifest) is not None:
      features = FeaturesWanted.MIN_CONSUMER
    elif self.options.settings.report:
      features = FeaturesWanted.REPORT
    return ReplayRequest(str(self.options.golden_root), entry_id, tuple(_readers.readers()),
                         run=not_run is None, features=features), not_run

  def _devices_of(self, entry_id: EntryId, manifest: Manifest) -> int:
    """The devices an entry's replay needs: its recorded shardings' count, or the count an
    imported dataset states."""
    details = getattr(manifest.imported_from, "details", None)
    stated = details.get("nr_devices") if isinstance(details, Mapping) else None
    needed = self.pool.devices_needed(entry_id)
    return max(needed, stated) if isinstance(stated, int) and not isinstance(stated, bool) \
        else needed

  def _run_context(self) -> _judge.RunContext:
    """What every entry of this run is judged against (made once)."""
    if self._context is None:
      o, project = self.options, self.project
      self._context = _judge.RunContext(
          today=o.settings.today, window_days=o.settings.window_days,
          consumer=installed_jax_version(), strict=o.settings.strict,
          updating=o.settings.update, changes_fail=project.on_change is OnChange.FAIL,
          expectations=(None if project.expectations is None
                        else expected_status.load_table(project.expectations)),
          project_targets=project.targets, measured=self._measurements(),
          shipped_expired_fails=project.shipped_expired_fails)
    return self._context

  def _measurements(self) -> MeasuredRuns:
    """The project's measurements of replays under other releases, read once: none without a
    project root or where the private cache was refused; none either where the file does not
    read, which one session warning names with its fault and fix (each entry replays without
    them, as with a damaged compile-cache file)."""
    if self._measured is None:
      self._measured = MeasuredRuns()
      root, folder = self.project.root, self._measured_folder()
      if root is not None and self.options.cache_refused is None:
        try:
          self._measured = read_measured(root, folder)
        except (JaxportError, OSError) as e:
          self._session_warnings.append(
              f"the measurements file {measured_path(root, folder)} is not used: every entry "
              f"is judged without measurements of replays under other releases. {e}")
    return self._measured

  def _measured_folder(self) -> Path | None:
    """The folder --compat-cache-dir names, where ``replay --with-jax`` then keeps the
    project's measurements; None for the project's own ``.jaxport_cache``."""
    o = self.options
    folder = Path(o.settings.cache_dir) if o.settings.cache_dir else None
    default = o.project_root / DEFAULT_FOLDER if o.project_root is not None else None
    return None if folder in (None, default) else folder

  def _min_consumer(self, manifest: Manifest) -> str | None:
    case = self.case_facts().case(manifest.case_id)
    return manifest.min_consumer or (case.min_consumer if case is not None else None)

  def take_expected_failure(self, entry_id: EntryId) -> str | None:
    """Why the entry just replayed is an expected failure (None: it is not), once."""
    run = self._runs.get(entry_id)
    if run is None or run.xfailed is None:
      return None
    self._runs[entry_id] = dataclasses.replace(run, xfailed=None)
    return run.xfailed

  def _take_output(self, entry_id: EntryId) -> str:
    """What the worker printed while replaying the entry, once (the run keeps it no longer)."""
    run = self._runs[entry_id]
    if run.output:
      self._runs[entry_id] = dataclasses.replace(run, output="")
    return run.output

  def check_replay(self, entry_id: EntryId) -> None:
    """The body of one replay test item: fail, warn or pass."""
    self._device_gate()
    outcome = self.replay(entry_id)
    output = self._take_output(entry_id)
    text = "\n".join(outcome.messages)
    if outcome.status in (Status.FAIL, Status.WARN):
      text += _update.change_hint(outcome, self.options.settings.update,
                                  newest=self._newest().get(outcome.case_id) == entry_id)
    if outcome.status is Status.FAIL:
      text += self._write_artifacts(entry_id) + printed(output)
      pytest.fail(f"golden entry {entry_id}:\n{text}", pytrace=False)
    if outcome.status is Status.XFAIL:
      # Reported as xfailed by the plugin's report hook: pytest.xfail() would have pytest
      # format a traceback, with the source of every frame, for each expected failure.
      self._runs[entry_id] = dataclasses.replace(
          self._runs[entry_id], xfailed=f"expected failure: {outcome.expected_failure}")
      return
    if outcome.status is Status.WARN:
      warnings.warn(HarnessWarning(f"golden entry {entry_id}:\n{text}"), stacklevel=2)

  def _write_artifacts(self, entry_id: EntryId) -> str:
    """Have a worker write a failed entry's artifacts (``--compat-artifacts``); the line that
    says where they are, or why there are none ("" without the option)."""
    artifacts = self.options.settings.artifacts
    if artifacts is None:
      return ""
    try:
      num_devices = self.pool.devices_needed(entry_id)
    except GoldenDataError:
      num_devices = 1
    request = ArtifactsRequest(
        str(self.options.golden_root), entry_id, artifacts,
        run=_devices.numerics_skip(self.options.settings.platform, entry_id.platform) is None)
    answer = self.pool.answer(self.pool.worker(num_devices).request(request), ArtifactsAnswer)
    if isinstance(answer, ArtifactsAnswer):
      return f"\nartifacts: {answer.folder}"
    left = left_behind(Path(artifacts), entry_id)
    if left is None:
      return f"\nartifacts: none written ({answer.why})"
    folder, files, writing = left
    return (f"\nartifacts: {folder}, incomplete: {', '.join(files) or 'no file'} written"
            + (f", {writing} not (the worker stopped while writing it)" if writing else "")
            + f" ({answer.why})")

  # --- record and update -------------------------------------------------------

  def record(self, case_id: str) -> Recorded:
    """Record ``case_id`` into staging and queue it (see :class:`Recorder`)."""
    return self.recorder.record(case_id)

  def check_record(self, case_id: str) -> None:
    self._device_gate()
    result = self.record(case_id)
    if result.action in (RecordAction.ERROR, RecordAction.CONFLICT):
      pytest.fail(f"case {case_id}: {result.message}", pytrace=False)

  def flush_writes(self) -> None:
    """Write every queued recording into the golden store (atomic, append-only)."""
    self.recorder.flush_writes()

  def apply_updates(self) -> None:
    """``--compat-update``, at the end of the run (serial run or xdist controller): record a
    new entry of every changed or new case and write it into the store, append-only."""
    self.recorder.apply_updates(_update.changed_cases(
        {k: run.outcome for k, run in self._runs.items()}, self.entry_ids(), self.case_ids(),
        include_new=not (self.options.partial or self._listing_failed)))

  # --- xdist -------------------------------------------------------------------

  def worker_output(self) -> str:
    """This xdist worker's part of the run, for its controller (:meth:`merge` reads it): each
    entry's run, the recordings, the session's failures and the workers' notices."""
    return json.dumps({"runs": {str(k): run.to_json() for k, run in self._runs.items()},
                       "recorded": {k: r.to_json() for k, r in self.recorder.recorded.items()},
                       "session_failures": self._session_failures,
                       "notices": self.pool.notices})

  def merge(self, payload: str) -> None:
    """Take in an xdist worker's part of the run. A part that does not read fails the run,
    naming why: its entries are then not judged, never passed."""
    self.used = True
    try:
      part = _read_worker_part(payload)
    except (JaxportError, ValueError) as e:
      self._session_failures.append(f"an xdist worker's results do not read, so its entries "
                                    f"are not judged: {e}")
      return
    self._runs.update(part["runs"])
    self.recorder.recorded.update(part["recorded"])
    self._session_failures.extend(f for f in part["session_failures"]
                                  if f not in self._session_failures)
    self.pool.take_notices(part["notices"])

  # --- end of run --------------------------------------------------------------

  def build_report(self) -> RunReport:
    """The report of the run, from collected outcomes only (deterministic, sorted)."""
    present = self.entry_ids()
    try:
      cases: ProjectCases | GoldenDataError = self.case_facts()
    except GoldenDataError as e:
      cases = e
    if not self.recording:
      self._measurements()  # an xdist controller replays nothing, yet says what its workers did
    refused = self.options.cache_refused
    self.report = build_run_report(RunFacts(
        options=self.options, project=self.project, runs=self._runs, present=present,
        failures=self._session_failures, notices=self.pool.notices,
        warnings=[*([refused] if refused else []), *self._session_warnings], cases=cases,
        listing_failed=self._listing_failed, corpus=self.corpus,
        recorded=self.recorder.recorded, updates=self.recorder.updates,
        cache_used=self.compile_cache_dir() is not None))
    return self.report

  def finish(self) -> bool:
    """Build the report, write it if asked; True when the session must fail."""
    report = self.build_report()
    if self.options.settings.report:
      write_report(report, self.options.settings.report)
    if self.options.settings.timings:
      timed = {k: run for k, run in self._runs.items() if run.seconds is not None}
      reporter.write_json(costs_json({k: run.seconds for k, run in timed.items()},
                                     {k: run.parts for k, run in timed.items()}),
                          self.options.settings.timings)
    return bool(report.session_failures)

  def close(self) -> None:
    """Stop the workers and remove the staging folder (unless a failed write keeps it),
    even when stopping a worker is interrupted; closing twice does nothing more."""
    try:
      self.pool.close()
    finally:
      self.recorder.close()


_PART = Strict.raising(WorkerAnswerError)


def _read_worker_part(payload: str) -> dict[str, Any]:
  """An xdist worker's part of the run (:meth:`HarnessSession.worker_output`), read strictly."""
  s = _PART
  d = s.obj(json.loads(payload), "part", ("runs", "recorded", "session_failures", "notices"), ())

  def values_of(value: Any, where: str, read: Callable[[Any, str], Any]) -> dict[str, Any]:
    return {k: read(v, f"{where}.{k}") for k, v in s.of(value, Mapping, where).items()}

  def by_entry(value: Any, where: str, read: Callable[[Any, str], Any]) -> dict[EntryId, Any]:
    return {read_entry_id(s, k, f"{where} key"): v for k, v in values_of(value, where, read).items()}

  return {
      "runs": by_entry(d["runs"], "part.runs", EntryRun.from_json),
      "recorded": values_of(d["recorded"], "part.recorded", Recorded.from_json),
      "session_failures": s.strs(d["session_failures"], "part.session_failures"),
      "notices": s.strs(d["notices"], "part.notices")}
