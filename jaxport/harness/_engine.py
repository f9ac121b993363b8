"""Replaying golden entries, and the helpers recording shares; runs inside the isolated worker.

Everything here may execute native code (XLA compilation, LAPACK), so the
session never calls it directly: it goes through ``jaxport.harness._worker``.
The worker's :class:`ReplayEngine` owns the project's cases, today's exports
and the reader thread; its answers are the typed records of ``_protocol``.
Recording a case is ``_recording``; it shares the helpers for the jax
configuration, the export and the call defined here.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.harness import _reference as _api, _contract, _corpus, _lowering
from jaxport.harness import _contexts, _executables, _shardings, _stopwatch
from jaxport.harness import _calling, _case
from jaxport.harness._project import Project, ProjectTargets
from jaxport.harness._protocol import (EnvelopeRead, Numerics, ReaderResult, ReplayAnswer, Stage,
                                       TodayResult, UpgradedRun)
from jaxport.harness._registry import CaseRegistry
from jaxport.harness._judge import _targets
from jaxport._jaxcompat import _lapack as jax_lapack
from jaxport._vocabulary import TargetVerdict
from jaxport.errors import DeserializationError, UpgradeError
from jaxport.export import _mlir
from jaxport.export._checks import disabled_targets
from jaxport.golden._host import Host, current_host
from jaxport.golden._manifest import CustomCallSignature, Manifest
from jaxport.upgrades import (EnvelopeRewrite, UpgradeReport, expired_reason, rewritable_targets,
                              rewrite_envelope, upgrade_with_report)

# Module locations name files without their directories, so golden modules do
# not depend on where the checkout lives.
_JAX_CONFIG = (
    ("jax_include_full_tracebacks_in_locations", False),
    ("jax_traceback_in_locations_limit", 0),
    ("jax_hlo_source_file_canonicalization_regex", r".*/"),
)


# The jax configuration an entry recorded before the manifest carried one ran with.
LEGACY_JAX_CONFIG = {"jax_enable_x64": True}


def recording_config() -> dict[str, Any]:
  """The jax settings every recording and replay runs under: short source locations, and
  whole tracebacks (:func:`configure_jax` applies them to the process)."""
  return {**dict(_JAX_CONFIG), "jax_traceback_filtering": "off"}


def configure_jax(compile_cache_dir: str | None = None, share_executables: bool = False,
                  own_process: bool = False) -> None:
  """Process-wide jax settings for recording and replaying (short locations; jaxport's own
  frames never name one, see ``jaxport/export/_lower.py``, so a recording does not change
  when jaxport does).

  With ``share_executables``, a module compiled once in this process (the second reader's
  identical module, an entry of another producer with the same computation, today's
  re-export) is not compiled again (``jaxport.harness._executables``). With
  ``compile_cache_dir``, compiled executables are also kept in jax's persistent
  compilation cache there, for other processes and later runs; an unreadable cache
  entry is compiled again. Both are keyed by the module itself, so only the executable
  of an identical module is shared. Errors keep jax's whole traceback: filtering it
  costs more than the failed call when an old record's module does not compile.

  With ``own_process`` (a worker: nothing else runs in the process) and no cache directory
  (neither ``compile_cache_dir`` nor jax's own setting), jax's compilation cache is turned
  off: jax would otherwise compute its cache key of each module it compiles for a cache it
  has nowhere to keep.
  """
  for name, value in recording_config().items():
    jax.config.update(name, value)
  if share_executables:
    # Each stays off where jax's function is not the one it was written for; the worker's
    # answers then say so (replacement_notices).
    _executables.share_within_process()
    _contexts.reuse_within_process()
  if own_process and compile_cache_dir is None and not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_enable_compilation_cache", False)
  if compile_cache_dir is not None:
    for name, value in (("jax_compilation_cache_dir", compile_cache_dir),
                        ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", -1)):
      jax.config.update(name, value)


def replacement_notices() -> list[str]:
  """Why the memos :func:`configure_jax` puts in front of jax stay off in this process
  (jax's function has a signature they were not written for), one line each; [] when
  they are on or were not asked for."""
  statuses = (_executables.COMPILE.status, _contexts.MAKE_CONTEXT.status)
  return [s.notice for s in statuses if s.notice is not None]


# The replay contract (storable leaves, cotangents, float0), shared with the scripts that
# record and replay inside older jax releases.
storable = _contract.storable
callable_leaves = _contract.callable_leaves


def warm_native_kernels() -> None:
  """Register jax's native CPU kernels as lowering a LAPACK call does. Before jax 0.10 a
  deserialized LAPACK call could crash a process that had not lowered one itself; a
  long-lived worker starts with this, so that its verdicts do not depend on which entry
  it replayed first (the release replayer, without jaxport, makes a native call instead)."""
  jax_lapack.initialize_lapack()


def run_exported_arrays(exp: Any, leaves: list[np.ndarray]) -> list[Any]:
  """Call ``exp`` on the flat stored inputs (and its VJP, if any) as the replay contract
  says; the flat output arrays, with their shardings. Multi-device records get their
  inputs placed as recorded (``jaxport.harness._shardings``)."""
  return _contract.run_exported_arrays(exp, leaves, place=_shardings.placed_call_args)


def run_exported(exp: Any, leaves: list[np.ndarray]) -> list[np.ndarray]:
  """Call ``exp`` on the flat stored inputs; flat storable outputs."""
  return [storable(o) for o in run_exported_arrays(exp, leaves)]


def case_inputs(case: _case.Case) -> tuple[tuple, dict, list[np.ndarray]]:
  args, kwargs = case.make_inputs()
  return args, kwargs, [storable(x) for x in jax.tree.leaves((args, kwargs))]


def _jit_kwargs(case: _case.Case) -> dict[str, Any]:
  """``jax.jit`` keyword arguments of a multi-device case (shardings on this process's devices)."""
  make = getattr(case, "jit_kwargs", None)
  return make() if make is not None else {}


def _exporter(producer: str, for_jax: str | None = None) -> _contract.Exporter:
  return _contract.Exporter(
      export=functools.partial(_api.export, producer=producer, for_jax=for_jax),
      symbolic_args_specs=lambda args, shapes, constraints: _api.symbolic_args_specs(
          args, shapes, constraints=constraints, producer=producer))


def export_case(case: _case.Case, producer: str = _api.PRIMARY) -> Any:
  """Export ``case`` now, for its platforms, with ``producer``'s exporter, under the case's
  jax configuration and its extra flags."""
  args, kwargs, _ = case_inputs(case)
  with jax_config({**case_jax_config(case), **dict(case.jax_flags)}):
    return _contract.export_function(
        _exporter(producer, case.for_jax if producer == _api.PRIMARY else None),
        case.fun, args, kwargs, polymorphic_shapes=case.polymorphic_shapes,
        constraints=case.constraints or (), platforms=case.export_platforms(),
        disabled_checks=case.disabled_checks, jit_kwargs=_jit_kwargs(case))


@functools.lru_cache(maxsize=None)
def replay_host(platform: str) -> Host:
  """This process's host for ``platform`` (read once: it does not change while it runs)."""
  return current_host(platform)


def case_jax_config(case: _case.Case) -> dict[str, Any]:
  """The jax configuration a case is recorded and replayed under, as the manifest keeps it:
  64-bit types on or off, and the partitioner where the case chooses one."""
  config: dict[str, Any] = {"jax_enable_x64": case.enable_x64}
  if case.use_shardy is not None:
    config["jax_use_shardy_partitioner"] = case.use_shardy
  return config


def entry_jax_config(m: Manifest) -> dict[str, Any]:
  """The jax configuration to replay an entry under: its own, or the harness's old default."""
  return dict(m.jax_config) if m.jax_config is not None else dict(LEGACY_JAX_CONFIG)


@contextlib.contextmanager
def jax_config(config: Mapping[str, Any]):
  """Apply a case's or an entry's jax configuration, then restore jax's."""
  saved = {name: getattr(jax.config, name) for name in config}
  try:
    for name, value in config.items():
      jax.config.update(name, value)
    yield
  finally:
    for name, value in saved.items():
      jax.config.update(name, value)


def _error_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"[:2000]


@dataclasses.dataclass(frozen=True)
class _Envelope:
  """An entry's envelope that the installed jax refuses as expired, rewritten by
  ``jaxport.upgrade_envelope`` into the layout it reads (the module kept)."""
  blob: bytes
  rewrite: EnvelopeRewrite

  def read(self, error_before: str) -> EnvelopeRead:
    """The record of this rewrite, read after the original envelope was refused."""
    r = self.rewrite
    return EnvelopeRead(r.layout, r.from_version, r.to_version, r.reason, r.producer, error_before)


def expired_envelope(blob: bytes) -> _Envelope | None:
  """The rewritten envelope of ``blob`` when the installed jax refuses it as expired, else
  None (also when the blob is unreadable: the readers' own replays report that)."""
  try:
    if expired_reason(blob) is None:
      return None
    rewritten, rewrite = rewrite_envelope(blob)
  except Exception:  # noqa: BLE001
    return None
  return None if rewrite is None else _Envelope(bytes(rewritten), rewrite)


@dataclasses.dataclass(frozen=True)
class _UpgradedRun:
  """A record upgraded by ``jaxport.upgrade`` and run: refused, nothing to rewrite, failed, or
  its outputs (judged against the outputs the producer recorded)."""

  refused: str | None = None
  report: UpgradeReport | None = None
  arrays: list[Any] | None = None
  error: str | None = None

  def taken(self, failed: ReaderResult) -> tuple[ReaderResult, list[Any] | None]:
    """A reader's result ``failed`` (its record did not run) with what this upgrade did, and
    the outputs to judge (None when the result is complete)."""
    if self.refused is not None:
      return dataclasses.replace(failed, upgrade_refused=self.refused), None
    if self.report is None:
      return failed, None
    upgraded = UpgradedRun(tuple(self.report.rules_applied), failed.error,
                           tuple(r.to_json() for r in self.report.rewrites))
    if self.error is not None:
      return dataclasses.replace(failed, stage=Stage.RUN_UPGRADED, error=self.error,
                                 upgraded=upgraded), None
    return dataclasses.replace(failed, error=None, upgraded=upgraded), self.arrays


def _upgrade_and_run(exp: Any, inputs: list[np.ndarray], watch: _stopwatch.Stopwatch) -> _UpgradedRun:
  """Upgrade a reader's record and call the upgraded record on the stored inputs."""
  try:
    report = upgrade_with_report(exp)
  except (UpgradeError, DeserializationError) as e:
    # A module this jaxlib cannot parse (newer StableHLO than it reads) has nothing to upgrade.
    return _UpgradedRun(refused=_error_line(e))
  if not report.rewrites:
    return _UpgradedRun()
  try:
    with watch.stage(_stopwatch.CALL):
      return _UpgradedRun(report=report, arrays=run_exported_arrays(report.exported, inputs))
  except Exception as e:  # noqa: BLE001
    return _UpgradedRun(report=report, error=_error_line(e))


def _upgrade_ahead(reader: str, blob: bytes, inputs: list[np.ndarray],
                   watch: _stopwatch.Stopwatch) -> _UpgradedRun | None:
  """The reader's upgraded run, started before its record has failed (None: the reader cannot
  read the blob; its own replay reports that)."""
  with _contexts.lowering_for(reader):
    try:
      exp = _api.deserialize(blob, reader=reader)
    except Exception:  # noqa: BLE001
      return None
    return _upgrade_and_run(exp, inputs, watch)


def _upgradable(m: Manifest) -> bool:
  """Whether the entry's recorded targets include ones ``jaxport.upgrade`` rewrites."""
  return not m.lowering_only and bool(
      rewritable_targets() & set(_lowering.targets(m.custom_call_targets)))


def _same_computation(exp: Any, recorded_module: bytes, reads: _ModuleReads | None = None) -> bool:
  """Whether today's module and the recorded one differ at most in their source locations
  (the recorded one's text read through the entry's ``reads``)."""
  today = bytes(exp.mlir_module_serialized)
  if today == recorded_module:
    return True
  reads = reads if reads is not None else _ModuleReads()
  try:
    return _todays_text(today) == reads.text_without_locations(recorded_module)
  except Exception:  # noqa: BLE001  (unparsable: not known to be the same; run it)
    return False


class _ModuleReads:
  """The modules one entry's readers handed back, and what the replay reads from module
  bytes, each read at most once per entry: both readers normally hand back the same module,
  whose signatures (lowering-only entries) and text without locations (the comparison with
  today's lowering) are then parsed once. Each reader still deserializes and calls with its
  own code; only these read-only views are shared."""

  def __init__(self) -> None:
    self.by_reader: dict[str, bytes] = {}
    # Each reader's calling contract of the blob (``_calling``), for today's comparison.
    self.contracts: dict[str, _calling.CallingContract] = {}
    self._lock = threading.Lock()
    self._views: dict[tuple[str, bytes], Any] = {}

  def _once(self, what: str, module: bytes, read: Callable[[bytes], Any]) -> Any:
    key = (what, module)
    with self._lock:
      if key in self._views:
        return self._views[key]
    value = read(module)  # an error is raised to each caller, nothing kept
    with self._lock:
      return self._views.setdefault(key, value)

  def signatures(self, module: bytes) -> tuple[CustomCallSignature, ...]:
    """The module's custom-call signatures (``_lowering.signatures``)."""
    return self._once("signatures", bytes(module), _lowering.signatures)

  def text_without_locations(self, module: bytes) -> str:
    """The module's text without locations (``_mlir.module_text_without_locations``)."""
    return self._once("text", bytes(module), _mlir.module_text_without_locations)


@functools.lru_cache(maxsize=16)
def _todays_text(module: bytes) -> str:
  """Today's module of a case without locations (its entries come one after another)."""
  return _mlir.module_text_without_locations(module)


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
    self.targets = project.targets if project is not None else ProjectTargets()
    # The cases replayed last, newest last: entries come in store order, a case's together,
    # so a few are enough, and the worker's memory stays flat however large the store.
    self._exports: collections.OrderedDict[str, tuple[Any, tuple] | str] = collections.OrderedDict()
    # Each case's comparison settings as a recording of it today would write them.
    self._settings: collections.OrderedDict[str, tuple[str, float, float]] = (
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

  def target_verdicts(self, sigs: Sequence[CustomCallSignature], platforms: Sequence[str],
                      allowed: frozenset[str] = frozenset()) -> dict[str, TargetVerdict]:
    """Per target of an entry's module (the judge's ``_targets``): stable on the platforms it was
    lowered for (by jaxport's table or the project's declarations), allowed by the module's own
    ``disabled_safety_checks`` (``allowed``; ``ALL`` allows every target), or not stable."""
    return {t: _targets.target_verdict(_targets.target_statuses(t, platforms, self.targets,
                                                                allowed))
            for t in _lowering.targets(sigs)}

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
    with _stopwatch.watching(watch), jax_config(entry_jax_config(m)):
      blob = entry.blob()
      inputs = entry.inputs()
      expected = entry.expected_outputs() if run else None
      shardings = entry.shardings()
      names = readers if readers is not None else _api.readers()
      lead = [r for r in names if r == _api.REFERENCE] or list(names[:1])
      rest = [r for r in names if r not in lead]
      reads = _ModuleReads()
      results: dict[str, ReaderResult] = {}
      todays: list[TodayResult] = []

      envelope = expired_envelope(blob)
      readable = blob if envelope is None else envelope.blob
      # An old record whose targets jaxlib dropped will fail to run: its upgraded run starts
      # now, beside the doomed attempt, and is used only if the record indeed fails.
      ahead = ({r: self._ahead(functools.partial(_upgrade_ahead, r, readable, inputs, watch))
                for r in names}
               if self._executor is not None and run and _upgradable(m) else {})

      def read(some: list[str]) -> None:
        for r in some:
          with _contexts.lowering_for(r):
            results[r] = self._read(r, blob, inputs, expected, m, reads, shardings, watch,
                                    ahead.get(r), envelope, run)

      case = self.case_of(m) if today else None

      def compare_today() -> None:
        with watch.stage(_stopwatch.CURRENT):
          todays.append(self._today(case, m, inputs, expected,
                                    reads.by_reader.get(_api.REFERENCE), run, reads))

      alongside = today and _keeps_config(case)

      def early() -> None:
        with watch.stage(_stopwatch.CURRENT):
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
    self._bound_jax_caches()
    host = replay_host(m.platform if run else "cpu").to_json()
    return ReplayAnswer(readers=tuple(results[r] for r in names),
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
            reads: _ModuleReads, shardings: dict[str, Any] | None = None,
            watch: _stopwatch.Stopwatch | None = None, ahead: _Ahead | None = None,
            envelope: _Envelope | None = None, run: bool = True) -> ReaderResult:
    """Deserialize with ``reader`` and, unless lowering-only or not to ``run``, run and judge
    the outputs.

    When the reader refuses the blob and ``envelope`` is its rewrite (an expired envelope),
    the rewrite is read instead and the result says so. When the record does not run, its
    upgrade is run and judged instead; ``ahead`` is that reader's upgraded run started early
    (:func:`_upgrade_ahead`), taken instead of running it again here."""
    watch = watch or _stopwatch.Stopwatch()
    env_read: EnvelopeRead | None = None
    try:
      with watch.stage(_stopwatch.DESERIALIZE):
        try:
          exp = _api.deserialize(blob, reader=reader)
        except Exception as e:  # noqa: BLE001
          if envelope is None:
            raise
          env_read = envelope.read(_error_line(e))
          exp = _api.deserialize(envelope.blob, reader=reader)
      reads.by_reader[reader] = bytes(exp.mlir_module_serialized)
      reads.contracts[reader] = _calling.contract_of(exp)
    except Exception as e:  # noqa: BLE001  (any failure to read is the finding)
      stage = Stage.DESERIALIZE if env_read is None else Stage.DESERIALIZE_REWRITTEN
      return ReaderResult(reader, stage, error=_error_line(e), envelope=env_read)
    # Every entry's targets are judged, run or not: one that runs today may still be one
    # nothing promises to keep working.
    targets = {"platforms": tuple(exp.platforms),
               "target_verdicts": self.target_verdicts(
                   m.custom_call_targets, exp.platforms,
                   disabled_targets(exp.disabled_safety_checks))}
    if m.lowering_only or not run:
      try:
        drift = _lowering.diff(m.custom_call_targets, reads.signatures(reads.by_reader[reader]))
      except Exception as e:  # noqa: BLE001
        return ReaderResult(reader, Stage.MODULE, error=_error_line(e), envelope=env_read)
      return ReaderResult(
          reader, Stage.MODULE, envelope=env_read,
          problems=tuple(f"the module read back differs from the manifest: {d}" for d in drift),
          **targets)
    result = ReaderResult(reader, Stage.COMPARE, envelope=env_read, **targets)
    try:
      with watch.stage(_stopwatch.CALL):
        arrays = run_exported_arrays(exp, inputs)
    except Exception as e:  # noqa: BLE001
      upgraded = ahead.result() if ahead is not None else None
      if upgraded is None:
        upgraded = _upgrade_and_run(exp, inputs, watch)
      result, arrays = upgraded.taken(
          ReaderResult(reader, Stage.RUN, error=_error_line(e), envelope=env_read, **targets))
      if arrays is None:
        return result
      result = dataclasses.replace(result, stage=Stage.COMPARE)
    with watch.stage(_stopwatch.CHECK):
      actual = [storable(o) for o in arrays]
      verdict = self.registry.checkers.check(m.comparison.mode, inputs, expected, actual,
                                             rtol=m.comparison.rtol, atol=m.comparison.atol)
      problems = _shardings.compare(shardings, arrays) if shardings is not None else []
    return dataclasses.replace(result, numerics=Numerics.of(verdict), problems=tuple(problems))

  # --- today's lowering ------------------------------------------------------------------

  def _export_today(self, case: _case.Case) -> tuple[Any, tuple] | str:
    """(Exported, signatures) of the case lowered now, or the error text."""
    with self._today_lock, _contexts.lowering_for(_TODAYS_CONTEXTS):
      if case.case_id not in self._exports:
        try:
          exp = export_case(case)
          found: tuple[Any, tuple] | str = (exp, _lowering.signatures(exp.mlir_module_serialized))
        except Exception as e:  # noqa: BLE001
          found = _error_line(e)
        _keep(self._exports, case.case_id, found)
      self._exports.move_to_end(case.case_id)
      return self._exports[case.case_id]

  def _run_today(self, case: _case.Case, exp: Any,
                 inputs: list[np.ndarray]) -> list[np.ndarray] | str:
    """Outputs of today's lowering (serialized and read back) on ``inputs``, or the error text."""
    key = (case.case_id, _inputs_digest(inputs))
    with self._today_lock, _contexts.lowering_for(_TODAYS_CONTEXTS):
      if key not in self._runs:
        fresh = self._read_back_today(case, exp)
        try:
          found: list[np.ndarray] | str = (fresh if isinstance(fresh, str)
                                           else run_exported(fresh, inputs))
        except Exception as e:  # noqa: BLE001
          found = _error_line(e)
        _keep(self._runs, key, found)
      self._runs.move_to_end(key)
      return self._runs[key]

  def _read_back_today(self, case: _case.Case, exp: Any) -> Any | str:
    """Today's export of ``case`` serialized and read back, as a consumer of today's lowering
    would call it, or the error text; once per case kept (its entries' runs with other
    inputs call the same one)."""
    with self._today_lock:
      if case.case_id not in self._read_backs:
        try:
          found: Any | str = _api.deserialize(exp.serialize(vjp_order=case.vjp_order))
        except Exception as e:  # noqa: BLE001
          found = _error_line(e)
        _keep(self._read_backs, case.case_id, found)
      self._read_backs.move_to_end(case.case_id)
      return self._read_backs[case.case_id]

  def _today_ahead(self, case: _case.Case | None, m: Manifest, inputs: list[np.ndarray],
                   run: bool = True, reads: _ModuleReads | None = None) -> None:
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
    if recorded is not None and _same_computation(exported[0], recorded, reads):
      return
    self._run_today(case, exported[0], inputs)

  def _today(self, case: _case.Case | None, m: Manifest, inputs, expected,
             recorded_module: bytes | None, run: bool = True,
             reads: _ModuleReads | None = None) -> TodayResult:
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
      return self._today_of_case(case, m, inputs, expected, recorded_module, run, reads)

  def _today_of_case(self, case: _case.Case, m: Manifest, inputs, expected,
                     recorded_module: bytes | None, run: bool = True,
                     reads: _ModuleReads | None = None) -> TodayResult:
    exported = self._export_today(case)
    if isinstance(exported, str):
      return TodayResult(available=True, error=f"re-export failed: {exported}")
    exp, sigs = exported
    targets = tuple(_lowering.targets(sigs))
    if m.imported_from is not None:
      # Another function of the same operation: compare the custom calls, not sizes or numerics.
      return TodayResult(available=True, targets=targets, matched_case=case.case_id,
                         signature_diff=tuple(_lowering.diff(_corpus.shape_blind(m.custom_call_targets),
                                                             _corpus.shape_blind(sigs))))
    diff = tuple(_lowering.diff(m.custom_call_targets, sigs))
    contract = _contract_change(self._read_back_today(case, exp), reads)
    diff_kw = {"contract_diff": contract.by_function + self._settings_change(case, m),
               "contract_by_jax": contract.by_jax}
    if m.lowering_only or not run or contract.by_function:
      # A changed contract: the entry's inputs are not today's function's, nothing to run.
      return TodayResult(available=True, targets=targets, signature_diff=diff, **diff_kw)
    if recorded_module is not None and _same_computation(exp, recorded_module, reads):
      # The entry's module up to source locations: its numerics are the readers' numerics.
      return TodayResult(available=True, targets=targets, signature_diff=diff, same_module=True,
                         **diff_kw)
    actual = self._run_today(case, exp, inputs)
    if isinstance(actual, str):
      return TodayResult(available=True, targets=targets, signature_diff=diff,
                         error=f"running the current lowering failed: {actual}", **diff_kw)
    verdict = self.registry.checkers.check(m.comparison.mode, inputs, expected, actual,
                                           rtol=m.comparison.rtol, atol=m.comparison.atol)
    return TodayResult(available=True, targets=targets, signature_diff=diff,
                       numerics=Numerics.of(verdict), **diff_kw)

  def _settings_change(self, case: _case.Case, m: Manifest) -> tuple[str, ...]:
    """How the case's comparison settings (checker, rtol, atol, as a recording of it today
    would write them) differ from the entry's, one line each; a checker the project does not
    know is named with the known ones."""
    if case.case_id not in self._settings:
      _keep(self._settings, case.case_id, _case.comparison_of(case, case_inputs(case)[2]))
    checker, rtol, atol = self._settings[case.case_id]
    rec = m.comparison
    lines = []
    if checker != rec.mode:
      known = "" if checker in self.registry.checkers else (
          f" (not a checker of the project; known: {sorted(self.registry.checkers)})")
      lines.append(f"comparison: checker {rec.mode!r} became {checker!r}{known}")
    for name, old, new in (("rtol", rec.rtol, rtol), ("atol", rec.atol, atol)):
      if float(old) != float(new):
        lines.append(f"comparison: {name} {old:g} became {new:g}")
    return tuple(lines)

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
# clearing costs re-tracing only what the next entries share with the last ones (a case's
# entries come together), and keeps the worker's memory flat however large the store.
JAX_CACHES_CLEARED_EVERY = 64


def _contract_change(today: Any, reads: _ModuleReads) -> _calling.ContractDiff:
  """How the calling contract of today's export, serialized and read back as a consumer reads
  it (``today``; its error text where it does not read back), differs from the entry's as the
  reference reader (else another) read it; no difference when no reader read the entry, or
  today's export does not read back (their failures say why)."""
  recorded = reads.contracts.get(_api.REFERENCE) or next(iter(list(reads.contracts.values())),
                                                          None)
  if recorded is None or isinstance(today, str):
    return _calling.ContractDiff()
  return _calling.diff(recorded, _calling.contract_of(today))


def _keep(memo: collections.OrderedDict, key: Any, value: Any) -> None:
  memo[key] = value
  while len(memo) > TODAY_KEPT:
    memo.popitem(last=False)


def _keeps_config(case: _case.Case | None) -> bool:
  """Whether exporting ``case`` today leaves jax's configuration as it is now (the entry's),
  so that it may run while a reader traces on another thread."""
  if case is None:
    return True
  wanted = {**case_jax_config(case), **dict(case.jax_flags)}
  return all(getattr(jax.config, name, object()) == value for name, value in wanted.items())


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
