"""Replaying golden entries; runs inside the isolated worker.

Everything here may execute native code (XLA compilation, LAPACK), so the
session never calls it directly: it goes through the worker process
(``jaxport.harness._worker``). The worker's :class:`ReplayEngine` owns the project's cases,
today's exports and the reader thread; its answers are the typed records of ``_protocol``.
The jax configuration is ``_jax_setup``'s, the export and the call ``_case_runs``'
(recording, ``_recording``, shares both), what is read from module bytes
``_module_reads``', and what happens to a record its reader could not run
``_upgraded_run``'.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.export._checks import disabled_targets
from jaxport.golden import _soundness
from jaxport.golden._host import Host, current_host
from jaxport.golden._manifest import Manifest
from jaxport.harness._worker import _reference as _api, _corpus, _lowering
from jaxport.harness._worker import _contexts, _executables, _shardings, _stopwatch
from jaxport.harness._worker import _calling, _gradients, _judging, _kept_reads
from jaxport.harness import _case
from jaxport.golden._signature_drift import shape_blind
from jaxport.harness._worker._older_formats import OutputJudging, judging_of
from jaxport.harness._protocol._stage_marks import CASE_CODE, TODAY, reader_stage, stage
from jaxport.harness._worker._case_runs import (export_case, run_exported, run_exported_arrays,
                                                storable)
from jaxport.harness._worker._jax_setup import (calling_jax_config, case_jax_config, jax_config,
                                                keeps_config, warm_native_kernels)
from jaxport.harness._worker._module_reads import (ModuleReads, contract_change, same_computation,
                                                   same_module_bytes, vjp_module)
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import (EnvelopeRead, Numerics, ReaderResult, ReplayAnswer,
                                                Stage, TodayResult)
from jaxport.harness._registry import CaseRegistry
from jaxport.harness._worker._error_text import error_text
from jaxport.harness._worker._upgraded_run import (Envelope, expired_envelope, upgradable,
                                                   upgrade_ahead, upgrade_and_run)


@functools.lru_cache(maxsize=None)
def replay_host(platform: str) -> Host:
  """This process's host for ``platform`` (read once: it does not change while it runs)."""
  return current_host(platform)


def _inputs_digest(inputs: list[np.ndarray]) -> str:
  return hashlib.sha256(b"".join(
      f"{a.dtype.str}{a.shape}".encode() + np.ascontiguousarray(a).tobytes() for a in inputs)).hexdigest()


# Today's lowering builds its IR in contexts of its own, apart from the readers'.
_TODAYS_CONTEXTS = "today"


class ReplayEngine:
  """The replay of one project's golden entries in this process.

  It owns what outlives one entry: the project's case registry and declared targets,
  today's export and runs of each case (today's lowering does not change while the process
  runs, so entries of one case from several producers share one export and, for equal
  inputs, one run), and the reader thread (``threads``), on which the second reader and
  today's early export run beside the first reader.

  One entry goes down the stages in order: verify (the caller hands over a verified
  snapshot), read (each reader deserializes, runs and compares: :meth:`_read`), today
  (today's lowering compared with the entry: :meth:`_today`); classification happens in
  the session, on the answer.
  """

  def __init__(self, project: Project | None = None, *, threads: bool = False):
    self.registry = CaseRegistry(project.case_modules if project is not None else ())
    # The cases replayed last, newest last: entries come in store order, a case's together,
    # so a few are enough, and the worker's memory stays flat however large the store.
    self._exports: collections.OrderedDict[str, tuple[Any, tuple] | str] = collections.OrderedDict()
    # Each case's comparison settings as a recording of it today would write them, by the
    # recorded outputs' paths and dtypes.
    self._settings: collections.OrderedDict[tuple, _case.CaseComparison | str] = (
        collections.OrderedDict())
    self._runs: collections.OrderedDict[tuple[str, str], list[np.ndarray] | str] = (
        collections.OrderedDict())
    self._read_backs: collections.OrderedDict[str, Any | str] = collections.OrderedDict()
    # Entries replayed since jax's caches were last cleared (JAX_CACHES_CLEARED_EVERY).
    self._since_cleared = 0
    # Held while either is computed, so that the reader thread's early start and the entry's
    # own comparison never do the same export or run twice.
    self._today_lock = threading.RLock()
    self._executor = (concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jaxport-reader")
                      if threads else None)

  def each_thread(self, work: Callable[[], Any]) -> list[Any]:
    """``work`` run here, then on the reader thread where there is one (waited for), with
    its results in that order: for what is kept per thread, such as jax's context values.
    Between entries only, when nothing else is queued there."""
    results = [work()]
    if self._executor is not None:
      results.append(self._executor.submit(work).result())
    return results

  def close(self) -> None:
    """Stop the reader thread."""
    if self._executor is not None:
      self._executor.shutdown()
      self._executor = None

  # --- cases -----------------------------------------------------------------------------

  def load_cases(self) -> None:
    """Import the project's case modules now (they may register checkers the replay needs)."""
    self.registry.by_id  # noqa: B018  (imports and checks every module)

  def warm_native_kernels(self) -> None:
    """Register jax's native CPU kernels in this process (:func:`warm_native_kernels`)."""
    warm_native_kernels()

  def lookup_case(self, case_id: str) -> _case.Case | None:
    """The registered case ``case_id``, or None."""
    return self.registry.case(case_id)

  def case_of(self, m: Manifest) -> _case.Case | None:
    """The registered case of an entry: its own, or for one imported from jax's corpus, the match."""
    if _corpus.is_corpus_dataset(m):
      return _corpus.matching_case(m.imported_from.details, self.lookup_case)
    return self.lookup_case(m.case_id)

  # --- one entry -------------------------------------------------------------------------

  def replay(self, entry, readers: tuple[str, ...] | None = None, today: bool = True,
             watch: _stopwatch.Stopwatch | None = None, run: bool = True) -> ReplayAnswer:
    """Replay one verified entry with ``readers`` (default: every reader) and, if ``today``,
    against today's lowering of its case.

    Without ``run`` (an accelerator's entry in a CPU run) the entry is checked as a
    lowering-only one: the readers deserialize it and its module's custom-call signatures
    and targets are judged, today's lowering is compared, nothing is run.

    With the reader thread, the reference reader (then today's lowering) and the other
    readers run side by side: XLA compiles one while Python lowers the other. Today's
    lowering waits for the readers when it needs a jax configuration other than the entry's.
    """
    start = time.perf_counter()
    cached_before = _executables.loaded_from_cache()
    watch = watch or _stopwatch.Stopwatch()
    m = entry.manifest
    with _stopwatch.watching(watch), jax_config(calling_jax_config(m)):
      blob = entry.blob()
      inputs = entry.inputs()
      expected = entry.expected_outputs() if run else None
      shardings = entry.shardings()
      names = readers if readers is not None else _api.readers()
      lead = [r for r in names if r == _api.REFERENCE] or list(names[:1])
      rest = [r for r in names if r not in lead]
      reads = ModuleReads()
      results: dict[str, ReaderResult] = {}
      todays: list[TodayResult] = []

      judging = judging_of(m, self.case_of(m) if run else None, expected)
      envelope = expired_envelope(blob)
      readable = blob if envelope is None else envelope.blob
      # An old record whose targets jaxlib dropped will fail to run: its upgraded run starts
      # now, beside the doomed attempt, and is used only if the record indeed fails.
      ahead = ({r: self._ahead(_in_stage(reader_stage(r), functools.partial(
                    upgrade_ahead, r, readable, inputs, watch)))
                for r in names}
               if self._executor is not None and run and upgradable(m) else {})

      def read(some: list[str]) -> None:
        for r in some:
          with stage(reader_stage(r)), _contexts.lowering_for(r):
            results[r] = self._read(r, blob, inputs, expected, m, reads, shardings, watch,
                                    ahead.get(r), envelope, run, judging)

      case = self.case_of(m) if today else None

      def compare_today() -> None:
        with stage(TODAY), watch.stage(_stopwatch.CURRENT):
          todays.append(self._today(case, m, inputs, expected,
                                    reads.by_reader.get(_api.REFERENCE), run, reads, judging))

      alongside = today and keeps_config(case)

      def early() -> None:
        with stage(TODAY), watch.stage(_stopwatch.CURRENT):
          self._today_ahead(case, m, inputs, run, reads)

      try:
        self._side_by_side(
            lambda: (read(lead), compare_today() if alongside else None),
            lambda: (early() if alongside and self._executor is not None else None, read(rest)))
      finally:
        for task in ahead.values():
          task.settle()
      if today and not alongside:
        compare_today()
      if todays and run and expected is not None:
        todays[0] = self._with_recorded_check(todays[0], case, m, inputs, expected,
                                              tuple(results.values()))
    self._bound_jax_caches()
    host = replay_host(m.platform if run else "cpu").to_json()
    return ReplayAnswer(readers=tuple(results[r] for r in names),
                        golden_problems=golden_problems(entry, reads),
                        comparison_note=judging.note,
                        today=todays[0] if todays else None, host=host,
                        seconds=time.perf_counter() - start, timings=dict(watch.seconds),
                        from_cache=_executables.loaded_from_cache() - cached_before)

  def _bound_jax_caches(self) -> None:
    """Clear jax's own caches every ``JAX_CACHES_CLEARED_EVERY`` entries, between entries
    (nothing runs on the reader thread then). jax keeps what it traced, lowered and compiled
    for each entry's calls, though no later entry calls the same functions, so a worker
    would otherwise grow with the store; the executables memo is the harness's own and
    stays, so no module is compiled again for it."""
    self._since_cleared += 1
    if self._since_cleared >= JAX_CACHES_CLEARED_EVERY:
      self._since_cleared = 0
      jax.clear_caches()

  def _read(self, reader: str, blob: bytes, inputs, expected, m: Manifest,
            reads: ModuleReads, shardings: dict[str, Any] | None = None,
            watch: _stopwatch.Stopwatch | None = None, ahead: _Ahead | None = None,
            envelope: Envelope | None = None, run: bool = True,
            judging: OutputJudging | None = None) -> ReaderResult:
    """Deserialize with ``reader`` and, unless lowering-only or not to ``run``, run and judge
    the outputs.

    When the reader refuses the blob and ``envelope`` is its rewrite (an expired envelope),
    the rewrite is read instead and the result says so. When the record does not run, its
    upgrade is run and judged instead; ``ahead`` is that reader's upgraded run started early
    (:func:`upgrade_ahead`), taken instead of running it again here."""
    watch = watch or _stopwatch.Stopwatch()
    env_read: EnvelopeRead | None = None
    try:
      with watch.stage(_stopwatch.DESERIALIZE):
        try:
          exp = _api.deserialize(blob, reader=reader)
        except Exception as e:  # noqa: BLE001
          if envelope is None:
            raise
          env_read = envelope.read(error_text(e))
          exp = _api.deserialize(envelope.blob, reader=reader)
      reads.by_reader[reader] = bytes(exp.mlir_module_serialized)
      reads.contracts[reader] = _calling.contract_of(exp, _donations(reads, reader))
      reads.vjps[reader] = vjp_module(exp)
    except Exception as e:  # noqa: BLE001  (any failure to read is the finding)
      stage = Stage.DESERIALIZE if env_read is None else Stage.DESERIALIZE_REWRITTEN
      return ReaderResult(reader, stage, error=error_text(e), envelope=env_read)
    # Every entry's targets are judged, run or not: one that runs today may still be one
    # nothing promises to keep working. The module as read is what the judge weighs.
    targets = {"platforms": tuple(exp.platforms),
               "allowed_targets": tuple(sorted(disabled_targets(exp.disabled_safety_checks)))}
    if m.lowering_only or not run:
      try:
        # Its signatures are what a lowering-only entry promises: a module that does not
        # parse is this reader's error (golden verification compares them with the manifest).
        reads.signatures(reads.by_reader[reader])
      except Exception as e:  # noqa: BLE001
        return ReaderResult(reader, Stage.MODULE, error=error_text(e), envelope=env_read)
      return ReaderResult(reader, Stage.MODULE, envelope=env_read, **targets)
    result = ReaderResult(reader, Stage.COMPARE, envelope=env_read, **targets)
    try:
      with watch.stage(_stopwatch.CALL):
        arrays = run_exported_arrays(exp, inputs)
    except Exception as e:  # noqa: BLE001
      upgraded = ahead.result() if ahead is not None else None
      if upgraded is None:
        upgraded = upgrade_and_run(exp, inputs, watch)
      result, arrays = upgraded.taken(
          ReaderResult(reader, Stage.RUN, error=error_text(e), envelope=env_read, **targets))
      if arrays is None:
        return result
      result = dataclasses.replace(result, stage=Stage.COMPARE)
    with watch.stage(_stopwatch.CHECK):
      actual = [storable(o) for o in arrays]
      numerics = _judging.judge_entry(self.registry.checkers, m, inputs, expected, actual,
                                      judging)
      problems = _shardings.compare(shardings, arrays) if shardings is not None else []
    return dataclasses.replace(result, numerics=numerics, problems=tuple(problems))

  # --- today's lowering ------------------------------------------------------------------

  def _export_today(self, case: _case.Case) -> tuple[Any, tuple] | str:
    """(Exported, signatures) of the case lowered now, or the error text."""
    with self._today_lock, _contexts.lowering_for(_TODAYS_CONTEXTS):
      if case.case_id not in self._exports:
        try:
          with stage(CASE_CODE):  # its inputs and function, traced and lowered
            exp = export_case(case)
          found: tuple[Any, tuple] | str = (exp, _kept_reads.read(
              _kept_reads.SIGNATURES, bytes(exp.mlir_module_serialized)))
        except Exception as e:  # noqa: BLE001
          found = error_text(e)
        _keep(self._exports, case.case_id, found)
      self._exports.move_to_end(case.case_id)
      return self._exports[case.case_id]

  def _run_today(self, case: _case.Case, exp: Any, inputs: list[np.ndarray],
                 order: int) -> list[np.ndarray] | str:
    """Outputs of today's lowering (serialized with VJPs of ``order`` and read back) on
    ``inputs``, or the error text."""
    key = (case.case_id, _inputs_digest(inputs), order)
    with self._today_lock, _contexts.lowering_for(_TODAYS_CONTEXTS):
      if key not in self._runs:
        fresh = self._read_back_today(case, exp, order)
        try:
          found: list[np.ndarray] | str = (fresh if isinstance(fresh, str)
                                           else run_exported(fresh, inputs))
        except Exception as e:  # noqa: BLE001
          found = error_text(e)
        _keep(self._runs, key, found)
      self._runs.move_to_end(key)
      return self._runs[key]

  def _read_back_today(self, case: _case.Case, exp: Any, order: int) -> Any | str:
    """Today's export of ``case`` serialized with VJPs of ``order`` and read back, as a
    consumer of today's lowering would call it, or the error text; once per case and order
    kept (its entries' runs with other inputs call the same one)."""
    key = (case.case_id, order)
    with self._today_lock:
      if key not in self._read_backs:
        try:
          found: Any | str = _api.deserialize(exp.serialize(vjp_order=order))
        except Exception as e:  # noqa: BLE001
          found = error_text(e)
        _keep(self._read_backs, key, found)
      self._read_backs.move_to_end(key)
      return self._read_backs[key]

  def _same_as_recorded(self, case: _case.Case, exp: Any, recorded_module: bytes,
                        reads: ModuleReads | None, m: Manifest) -> bool:
    """Whether today's export computes what the entry's blob does up to source locations: its
    module and, where the blob carries a VJP, the VJP's module too (a changed ``custom_vjp``
    or ``custom_jvp`` rule leaves the function's module as it was)."""
    if not same_computation(exp, recorded_module, reads):
      return False
    recorded_vjp = reads.vjps.get(_api.REFERENCE) if reads is not None else None
    order = _todays_order(case, m, reads)
    if recorded_vjp is None and order < 1:
      return True
    today = self._read_back_today(case, exp, order)
    todays_vjp = None if isinstance(today, str) else vjp_module(today)
    if recorded_vjp is None or todays_vjp is None:
      return False
    return same_module_bytes(todays_vjp, recorded_vjp, reads)

  def _today_ahead(self, case: _case.Case | None, m: Manifest, inputs: list[np.ndarray],
                   run: bool = True, reads: ModuleReads | None = None) -> None:
    """Export the case today, and (to ``run`` it) run that export when the entry comes from
    another jax, before the entry's comparison asks; not when the first reader has read the
    entry's module by then and it is today's up to locations (the comparison then takes the
    readers' numerics and runs nothing; its text without locations is read once, in
    ``reads``, for both)."""
    if case is None or m.imported_from is not None:
      return
    exported = self._export_today(case)
    if isinstance(exported, str) or m.lowering_only or not run or m.producer.jax == installed_jax_version():
      return
    recorded = reads.by_reader.get(_api.REFERENCE) if reads is not None else None
    if recorded is not None and self._same_as_recorded(case, exported[0], recorded, reads, m):
      return
    self._run_today(case, exported[0], inputs, _todays_order(case, m, reads))

  def _today(self, case: _case.Case | None, m: Manifest, inputs, expected,
             recorded_module: bytes | None, run: bool = True,
             reads: ModuleReads | None = None,
             judging: OutputJudging | None = None) -> TodayResult:
    """Re-export the case now: targets, signature drift and (if runnable and to ``run``)
    numerics drift."""
    if case is None and _corpus.is_corpus_dataset(m):
      d = m.imported_from.details
      return TodayResult(available=False, reason=(
          f"imported from {m.imported_from.source}; no registered case computes "
          f"{d.get('dataset_op')} for {d.get('dataset_platform')} "
          f"(tried {_corpus.candidate_ids(d) or 'none: the operation is unknown'})"))
    if case is None:
      return TodayResult(available=False,
                         reason=f"case {m.case_id} is no longer registered by the project's "
                                "case modules")
    with jax_config(case_jax_config(case)):
      return self._today_of_case(case, m, inputs, expected, recorded_module, run, reads,
                                 judging)

  def _today_of_case(self, case: _case.Case, m: Manifest, inputs, expected,
                     recorded_module: bytes | None, run: bool = True,
                     reads: ModuleReads | None = None,
                     judging: OutputJudging | None = None) -> TodayResult:
    exported = self._export_today(case)
    if isinstance(exported, str):
      return TodayResult(available=True, error=f"re-export failed: {exported}")
    exp, sigs = exported
    targets = tuple(_lowering.targets(sigs))
    if m.imported_from is not None:
      # Another function of the same operation: compare the custom calls, not sizes or numerics.
      return TodayResult(available=True, targets=targets, matched_case=case.case_id,
                         signature_diff=tuple(_lowering.diff(shape_blind(m.custom_call_targets),
                                                             shape_blind(sigs))))
    diff = tuple(_lowering.diff(m.custom_call_targets, sigs))
    order = _todays_order(case, m, reads)
    contract = contract_change(self._read_back_today(case, exp, order), reads)
    calling = contract.by_function + _constraints_change(case, m)
    diff_kw = {"contract_diff": calling + self._settings_change(case, m),
               "contract_by_jax": contract.by_jax, "platforms_added": contract.platforms_added,
               "donation_removed": contract.donation_removed}
    if m.lowering_only or not run or calling:
      # A changed contract: the entry's inputs are not today's function's, nothing to run.
      return TodayResult(available=True, targets=targets, signature_diff=diff, **diff_kw)
    if recorded_module is not None and self._same_as_recorded(case, exp, recorded_module, reads,
                                                              m):
      # The entry's modules up to source locations: its numerics are the readers' numerics.
      return TodayResult(available=True, targets=targets, signature_diff=diff, same_module=True,
                         **diff_kw)
    actual = self._run_today(case, exp, inputs, order)
    if isinstance(actual, str):
      return TodayResult(available=True, targets=targets, signature_diff=diff,
                         error=f"running the current lowering failed: {actual}", **diff_kw)
    return TodayResult(available=True, targets=targets, signature_diff=diff,
                       numerics=_judging.judge_entry(self.registry.checkers, m, inputs,
                                                     expected, actual, judging), **diff_kw)

  def _with_recorded_check(self, today: TodayResult, case: _case.Case | None, m: Manifest,
                           inputs, expected, readers: tuple[ReaderResult, ...]) -> TodayResult:
    """``today`` with its ``recorded_check`` where a comparison of the entry failed with its
    checker's error: the case's checker today, as a recording of it would compare, on the
    entry's recorded outputs (whether a fixed checker accepts what the entry holds)."""
    raised = [n for n in (*(r.numerics for r in readers), today.numerics)
              if n is not None and n.checker_error is not None]
    if not raised or case is None or not today.available or today.error is not None:
      return today
    outputs = [(t.path, t.dtype) for t in m.tolerances] if m.tolerances is not None else [
        (f"output[{i}]", x.dtype) for i, x in enumerate(expected)]
    comparison = _calling.comparison_today(case, outputs)
    if isinstance(comparison, str):
      check = Numerics(False, True, 0.0, (comparison,))
    else:
      check = _judging.judge_as_recorded(self.registry.checkers, comparison, inputs, expected)
    return dataclasses.replace(today, recorded_check=check)

  def _settings_change(self, case: _case.Case, m: Manifest) -> tuple[str, ...]:
    """How the case's comparison settings (checker, tolerances, as a recording of it today
    would write them) differ from the entry's, one line each (``_calling.comparison_change``)."""
    outputs = [(t.path, t.dtype) for t in m.tolerances or ()]
    key = (case.case_id, tuple(outputs))
    if key not in self._settings:
      _keep(self._settings, key, _calling.comparison_today(case, outputs))
    return _calling.comparison_change(m, self._settings[key], case, self.registry.checkers)

  # --- the reader thread -----------------------------------------------------------------

  def _ahead(self, work: Callable[[], Any]) -> _Ahead:
    return _Ahead(work, self._executor)

  def _side_by_side(self, first: Callable[[], Any], second: Callable[[], Any]) -> None:
    """Run ``first`` here and ``second`` on the reader thread (here too, after ``first``, when
    the reader thread has not started it or there is none)."""
    other = self._ahead(second)
    try:
      first()
    finally:
      other.result()


# Today's exports and runs kept, of the cases replayed last.
TODAY_KEPT = 32

# Entries replayed between two clearings of jax's own caches (ReplayEngine._bound_jax_caches):
# clearing keeps the worker's memory bounded however large the store, and costs re-tracing
# and re-lowering what the next entries share with the last ones (jax's helpers that every
# call goes through; a case's entries come together), about 0.1 s each time. On this
# project's store a worker grows by about 0.25 MB per entry between clearings (360 MB after
# 313 entries uncleared, 284 MB when cleared every 64), so this bounds the growth to tens of
# megabytes.
JAX_CACHES_CLEARED_EVERY = 256


def _todays_order(case: _case.Case, m: Manifest, reads: ModuleReads | None) -> int:
  """The order of VJPs today's lowering of ``case`` is compared with the entry at
  (``_gradients.todays_order``): whether the entry carries a VJP as its reference reader read
  it, else as its manifest says (a VJP output among its tolerances, or ``no_cotangent``)."""
  if reads is not None and _api.REFERENCE in reads.vjps:
    has_vjp = reads.vjps[_api.REFERENCE] is not None
  else:
    has_vjp = _gradients.entry_has_vjp(m)
  return _gradients.todays_order(case, has_vjp)


def _donations(reads: ModuleReads, reader: str) -> tuple[bool, ...]:
  """The donated arguments of the module ``reader`` read, from the parse its text comes from;
  none where it does not parse (its run or signatures then fail with the parser's words)."""
  try:
    return reads.donations(reads.by_reader[reader])
  except Exception:  # noqa: BLE001
    return ()


def _constraints_change(case: _case.Case, m: Manifest) -> tuple[str, ...]:
  """The change of the case's symbolic constraints since the entry, as a line of its calling
  contract: a caller's shapes the entry accepted may be refused now (or the reverse)."""
  old, new = list(m.constraints or ()), list(case.constraints or ())
  return () if old == new else (f"symbolic constraints {old} became {new}",)


def _in_stage(name: str, work: Callable[[], Any]) -> Callable[[], Any]:
  """``work`` run with ``name`` in progress on whichever thread runs it."""
  def run() -> Any:
    with stage(name):
      return work()
  return run


def _keep(memo: collections.OrderedDict, key: Any, value: Any) -> None:
  memo[key] = value
  while len(memo) > TODAY_KEPT:
    memo.popitem(last=False)


class _Ahead:
  """Work queued on the reader thread before it is needed. Whoever needs it and finds it not
  started runs it in place, so no thread ever waits for work queued behind itself."""

  def __init__(self, work: Callable[[], Any],
               executor: concurrent.futures.Executor | None) -> None:
    self._work = work
    self._future = executor.submit(work) if executor is not None else None

  def result(self) -> Any:
    if self._future is None or self._future.cancel():
      self._future = None
      return self._work()
    return self._future.result()

  def settle(self) -> None:
    """Drop the work if it has not started; otherwise wait for it (it must not outlive the
    entry, whose jax configuration it runs under)."""
    if self._future is not None and not self._future.cancel():
      concurrent.futures.wait([self._future])


def golden_problems(entry, reads: ModuleReads) -> tuple[str, ...]:
  """Golden verification of the entry as its readers read it (``jaxport.golden._soundness``):
  the manifest's custom-call signatures against each distinct module read, and whether its
  comparison could fail at all. Results for the judge, one line each."""
  m = entry.manifest
  out = []
  for module in dict.fromkeys(reads.by_reader.values()):
    try:
      sigs = reads.signatures(module)
    except Exception:  # noqa: BLE001  (a module that does not parse: its reader's result)
      continue
    disagreement = _soundness.manifest_disagreement(m.custom_call_targets, sigs)
    if disagreement is not None:
      out.append(disagreement.message)
      break
  vacuous = _soundness.vacuous_comparison(m, entry.expected_outputs())
  if vacuous is not None:
    out.append(vacuous)
  return tuple(out)
