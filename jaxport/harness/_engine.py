"""Recording and replaying single golden entries; runs inside the isolated worker process.

Everything here may execute native code (XLA compilation, LAPACK), so the
session never calls it directly: it goes through ``jaxport.harness._worker``.
The worker names the project whose cases are re-exported (:func:`use_project`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import difflib
import functools
import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from jaxport.harness import _reference as _api, _classify, _contract, _corpus, _lowering
from jaxport.harness import _contexts, _executables, _shardings, _stopwatch, checkers
from jaxport.harness import _case
from jaxport.harness._project import Project, ProjectTargets
from jaxport.harness._registry import CaseRegistry
from jaxport import _versions
from jaxport._jaxcompat import _lapack as jax_lapack
from jaxport.custom_calls import _registry
from jaxport.errors import DeserializationError, UpgradeError
from jaxport.export import _mlir
from jaxport.export._checks import ALL_TARGETS, disabled_targets
from jaxport.golden._host import Host, current_host
from jaxport.golden._manifest import Comparison, CustomCallSignature, Manifest, Producer
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


def configure_jax(compile_cache_dir: str | None = None, share_executables: bool = False) -> None:
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
  """
  for name, value in _JAX_CONFIG:
    jax.config.update(name, value)
  jax.config.update("jax_traceback_filtering", "off")
  if share_executables:
    # Each stays off where jax's function is not the one it was written for; the worker's
    # answers then say so (replacement_notices).
    _executables.share_within_process()
    _contexts.reuse_within_process()
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


_REGISTRY = CaseRegistry(())
_TARGETS = ProjectTargets()


def use_project(project: Project) -> None:
  """Look cases up in ``project``'s case modules, and judge targets also by its declarations,
  from now on."""
  global _REGISTRY, _TARGETS
  _REGISTRY = CaseRegistry(project.case_modules)
  _TARGETS = project.targets


def load_cases() -> None:
  """Import the project's case modules now (they may register checkers the replay needs)."""
  _REGISTRY.by_id  # noqa: B018  (imports and checks every module)


def lookup_case(case_id: str) -> _case.Case | None:
  """The registered case ``case_id`` of the project in use, or None."""
  return _REGISTRY.case(case_id)


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


def _exporter(producer: str) -> _contract.Exporter:
  return _contract.Exporter(
      export=functools.partial(_api.export, producer=producer),
      symbolic_args_specs=lambda args, shapes, constraints: _api.symbolic_args_specs(
          args, shapes, constraints=constraints, producer=producer))


def export_case(case: _case.Case, producer: str = _api.PRIMARY) -> Any:
  """Export ``case`` now, for its platforms, with ``producer``'s exporter, under the case's
  jax configuration and its extra flags."""
  args, kwargs, _ = case_inputs(case)
  with jax_config({**case_jax_config(case), **dict(case.jax_flags)}):
    return _contract.export_function(
        _exporter(producer), case.fun, args, kwargs, polymorphic_shapes=case.polymorphic_shapes,
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


@dataclasses.dataclass(frozen=True)
class Recording:
  """Everything the store needs to write one entry."""

  manifest: Manifest
  blob: bytes
  inputs: list[np.ndarray]
  expected: list[np.ndarray] | None
  module_text: str
  shardings: dict[str, Any] | None = None


def record_case(case: _case.Case, today: datetime.date) -> Recording:
  """Export, serialize and (unless lowering-only) run ``case`` under its jax configuration;
  the entry to write."""
  config = case_jax_config(case)
  with jax_config(config):
    return _record_case(case, today, config)


def _record_case(case: _case.Case, today: datetime.date, config: dict[str, Any]) -> Recording:
  if case.checker not in checkers.CHECKERS:
    # An entry is immutable: a checker named wrong would fail only at every later replay.
    near = difflib.get_close_matches(case.checker, list(checkers.CHECKERS), n=1)
    raise ValueError(
        f"case {case.case_id}: checker={case.checker!r} is not a registered checker"
        + (f" (did you mean {near[0]!r}?)" if near else "") + f"; the built-in ones are "
        f"{sorted(checkers.CHECKERS)}, and a project adds its own with "
        "jaxport.harness.register_checker(name, fn) in a case module. Nothing was recorded.")
  exp = export_case(case)
  blob = bytes(exp.serialize(vjp_order=case.vjp_order))
  sigs = _lowering.signatures(exp.mlir_module_serialized)
  missing = sorted(set(case.targets) - set(_lowering.targets(sigs)))
  if missing:
    raise ValueError(
        f"case {case.case_id}: its lowering does not emit {missing} (emits "
        f"{_lowering.targets(sigs)}); fix the case's function or its targets= in harness/cases/.")
  _, _, inputs = case_inputs(case)
  expected = shardings = None
  if not case.lowering_only:
    outs = run_exported_arrays(_api.deserialize(blob), inputs)
    expected = [storable(o) for o in outs]
    if _shardings.num_devices(exp) > 1:
      shardings = _shardings.record(exp, outs)
      _check_shardings_against_jit(case, exp, inputs, shardings)
  rtol, atol = case.rtol, case.atol
  if rtol is None or atol is None:
    rtol, atol = _case.default_tolerance(inputs[0].dtype if inputs else np.float32)
  manifest = Manifest(
      case_id=case.case_id, family=case.family, platform=case.host_platform, record_date=today,
      producer=Producer.current(), host=replay_host(case.host_platform),
      calling_convention_version=exp.calling_convention_version,
      serialization_version=_versions.serialization_layout_version(), custom_call_targets=sigs,
      polymorphic_shapes=case.polymorphic_shapes, constraints=case.constraints,
      lowering_only=case.lowering_only, comparison=Comparison(case.checker, rtol, atol),
      jax_config=config, min_consumer=getattr(case, "min_consumer", None))
  return Recording(manifest, blob, inputs, expected, exp.mlir_module(), shardings)


def _check_shardings_against_jit(case: _case.Case, exp: Any, inputs: list[np.ndarray],
                                 shardings: dict[str, Any]) -> None:
  """Refuse to record output shardings that differ from those of ``jax.jit`` of the case."""
  placed, context = _shardings.placed_call_args(exp, callable_leaves(inputs, exp.in_avals))
  args, kwargs = exp.in_tree.unflatten(placed)
  with context:
    direct = jax.tree.leaves(jax.jit(case.fun, **_jit_kwargs(case))(*args, **kwargs))
  primal = {"outputs": shardings["outputs"][:len(direct)]}
  problems = _shardings.compare(primal, direct)
  if problems:
    raise ValueError(f"case {case.case_id}: the exported function's outputs are sharded "
                     f"differently from jax.jit of the case: {problems}")


def _error_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"[:2000]


@dataclasses.dataclass(frozen=True)
class _Envelope:
  """An entry's envelope that the installed jax refuses as expired, rewritten by
  ``jaxport.upgrade_envelope`` into the layout it reads (the module kept)."""
  blob: bytes
  rewrite: EnvelopeRewrite

  def to_json(self, error_before: str) -> dict[str, Any]:
    return {**self.rewrite.to_json(), "error_before": error_before}


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


def _replay_with(reader: str, blob: bytes, inputs, expected, m: Manifest,
                 modules: dict[str, bytes], shardings: dict[str, Any] | None = None,
                 watch: _stopwatch.Stopwatch | None = None,
                 ahead: _Ahead | None = None, envelope: _Envelope | None = None,
                 run: bool = True) -> dict:
  """Deserialize with ``reader`` and, unless lowering-only or not to ``run``, run and judge
  the outputs.

  When the reader refuses the blob and ``envelope`` is its rewrite (an expired envelope),
  the rewrite is read instead and the answer says so. When the record does not run, its
  upgrade is run and judged instead; ``ahead`` is that reader's upgraded run started early
  (:func:`_upgrade_ahead`), taken instead of running it again here."""
  out: dict[str, Any] = {"reader": reader}
  watch = watch or _stopwatch.Stopwatch()
  try:
    with watch.stage(_stopwatch.DESERIALIZE):
      try:
        exp = _api.deserialize(blob, reader=reader)
      except Exception as e:  # noqa: BLE001
        if envelope is None:
          raise
        out["envelope"] = envelope.to_json(_error_line(e))
        exp = _api.deserialize(envelope.blob, reader=reader)
    modules[reader] = bytes(exp.mlir_module_serialized)
  except Exception as e:  # noqa: BLE001  (any failure to read is the finding)
    stage = "deserialize after the envelope upgrade" if "envelope" in out else "deserialize"
    out.update(ok=False, stage=stage, error=_error_line(e))
    return out
  if m.lowering_only or not run:
    try:
      drift = _lowering.diff(m.custom_call_targets, _lowering.signatures(exp.mlir_module_serialized))
    except Exception as e:  # noqa: BLE001
      out.update(ok=False, stage="module", error=_error_line(e))
      return out
    problems = [f"the module read back differs from the manifest: {d}" for d in drift]
    out.update(ok=not problems, stage="module", problems=problems, platforms=list(exp.platforms),
               target_verdicts=target_verdicts(m.custom_call_targets, exp.platforms,
                                               disabled_targets(exp.disabled_safety_checks)))
    return out
  try:
    with watch.stage(_stopwatch.CALL):
      arrays = run_exported_arrays(exp, inputs)
  except Exception as e:  # noqa: BLE001
    upgraded = ahead.result() if ahead is not None else None
    if upgraded is None:
      upgraded = _upgrade_and_run(exp, inputs, watch)
    if upgraded.take(_error_line(e), out) is None:
      return out
    arrays = upgraded.arrays
  with watch.stage(_stopwatch.CHECK):
    actual = [storable(o) for o in arrays]
    verdict = checkers.check(m.comparison.mode, inputs, expected, actual,
                             rtol=m.comparison.rtol, atol=m.comparison.atol)
    out.update(stage="compare", **verdict.to_json())
    if shardings is not None:
      problems = _shardings.compare(shardings, arrays)
      if problems:
        out.update(ok=False, problems=[*out["problems"], *problems])
  return out


def target_verdicts(sigs: Sequence[CustomCallSignature], platforms: Sequence[str],
                    allowed: frozenset[str] = frozenset()) -> dict[str, str]:
  """Per target of a lowering-only module: stable on the platforms it was lowered for (by
  jaxport's table or the project's declarations), allowed by the module's own
  ``disabled_safety_checks`` (``allowed``; ``ALL`` allows every target), or not stable."""
  stable = set(_registry.stable_targets(_registry.ANY_PLATFORM)) | _TARGETS.stable("any")
  for p in platforms:
    if p in _case.PLATFORMS:
      stable |= _registry.stable_targets(p) | _TARGETS.stable(p)

  def verdict(t: str) -> str:
    if t in stable:
      return _classify.TARGET_STABLE
    if t in allowed or ALL_TARGETS in allowed:
      return _classify.TARGET_ALLOWED
    return _classify.TARGET_NOT_STABLE

  return {t: verdict(t) for t in _lowering.targets(sigs)}


@dataclasses.dataclass(frozen=True)
class _UpgradedRun:
  """A record upgraded by ``jaxport.upgrade`` and run: refused, nothing to rewrite, failed, or
  its outputs (judged against the outputs the producer recorded)."""

  refused: str | None = None
  report: UpgradeReport | None = None
  arrays: list[Any] | None = None
  error: str | None = None

  def take(self, error_before: str, out: dict[str, Any]) -> list[Any] | None:
    """Write what happened into a reader's answer ``out`` after the record failed to run with
    ``error_before``; the outputs to judge, or None when the answer is complete."""
    out.update(ok=False, stage="run", error=error_before)
    if self.refused is not None:
      out["upgrade_refused"] = self.refused
      return None
    if self.report is None:
      return None
    del out["ok"], out["error"]
    out["upgraded"] = {"rules": list(self.report.rules_applied), "error_before": error_before,
                       "rewrites": [r.to_json() for r in self.report.rewrites]}
    if self.error is not None:
      out.update(ok=False, stage="run after upgrade", error=self.error)
      return None
    return self.arrays


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


# Today's lowering of a case does not change within a process; entries of the
# same case from several producers share one export and, for equal inputs, one run.
_EXPORTS: dict[str, tuple[Any, tuple] | str] = {}
_RUNS: dict[tuple[str, str], list[np.ndarray] | str] = {}
# Held while either is computed, so that the reader thread's early start and the entry's
# own comparison never do the same export or run twice.
_TODAY = threading.RLock()
# Today's lowering builds its IR in contexts of its own, apart from the readers'.
_TODAYS_CONTEXTS = "today"


def _current_export(case: _case.Case) -> tuple[Any, tuple] | str:
  """(Exported, signatures) of the case lowered now, or the error text."""
  with _TODAY, _contexts.lowering_for(_TODAYS_CONTEXTS):
    if case.case_id not in _EXPORTS:
      try:
        exp = export_case(case)
        _EXPORTS[case.case_id] = (exp, _lowering.signatures(exp.mlir_module_serialized))
      except Exception as e:  # noqa: BLE001
        _EXPORTS[case.case_id] = _error_line(e)
    return _EXPORTS[case.case_id]


def _current_run(case: _case.Case, exp: Any, inputs: list[np.ndarray]) -> list[np.ndarray] | str:
  """Outputs of today's lowering (serialized and read back) on ``inputs``, or the error text."""
  digest = hashlib.sha256(b"".join(
      f"{a.dtype.str}{a.shape}".encode() + np.ascontiguousarray(a).tobytes() for a in inputs)).hexdigest()
  key = (case.case_id, digest)
  with _TODAY, _contexts.lowering_for(_TODAYS_CONTEXTS):
    if key not in _RUNS:
      try:
        fresh = _api.deserialize(exp.serialize(vjp_order=case.vjp_order))
        _RUNS[key] = run_exported(fresh, inputs)
      except Exception as e:  # noqa: BLE001
        _RUNS[key] = _error_line(e)
    return _RUNS[key]


def _today_ahead(case: _case.Case | None, m: Manifest, inputs: list[np.ndarray],
                 run: bool = True) -> None:
  """Export the case today, and (to ``run`` it) run that export when the entry comes from
  another jax (its module then differs, mostly), before the entry's comparison asks for them."""
  if case is None or m.imported_from is not None:
    return
  exported = _current_export(case)
  if isinstance(exported, str) or m.lowering_only or not run or m.producer.jax == jax.__version__:
    return
  _current_run(case, exported[0], inputs)


def _same_computation(exp: Any, recorded_module: bytes) -> bool:
  """Whether today's module and the recorded one differ at most in their source locations."""
  today = bytes(exp.mlir_module_serialized)
  if today == recorded_module:
    return True
  try:
    return _todays_text(today) == _mlir.module_text_without_locations(recorded_module)
  except Exception:  # noqa: BLE001  (unparsable: not known to be the same; run it)
    return False


@functools.lru_cache(maxsize=16)
def _todays_text(module: bytes) -> str:
  """Today's module of a case without locations (its entries come one after another)."""
  return _mlir.module_text_without_locations(module)


def _current(case: _case.Case | None, m: Manifest, inputs, expected, recorded_module: bytes | None,
             run: bool = True) -> dict:
  """Re-export the case now: targets, signature drift and (if runnable and to ``run``)
  numerics drift."""
  if case is None and _corpus.is_corpus_dataset(m):
    d = m.imported_from.details
    return {"available": False,
            "reason": (f"imported from {m.imported_from.source}; no registered case computes "
                       f"{d.get('dataset_op')} for {d.get('dataset_platform')} "
                       f"(tried {_corpus.candidate_ids(d) or 'none: the operation is unknown'})")}
  if case is None:
    return {"available": False,
            "reason": f"case {m.case_id} is no longer registered by the project's case modules"}
  with jax_config(case_jax_config(case)):
    return _current_of_case(case, m, inputs, expected, recorded_module, run)


def _current_of_case(case: _case.Case, m: Manifest, inputs, expected,
                     recorded_module: bytes | None, run: bool = True) -> dict:
  out: dict[str, Any] = {"available": True}
  exported = _current_export(case)
  if isinstance(exported, str):
    out.update(error=f"re-export failed: {exported}")
    return out
  exp, sigs = exported
  out["targets"] = _lowering.targets(sigs)
  if m.imported_from is not None:
    # Another function of the same operation: compare the custom calls, not sizes or numerics.
    out["matched_case"] = case.case_id
    out["signature_diff"] = _lowering.diff(_corpus.shape_blind(m.custom_call_targets),
                                           _corpus.shape_blind(sigs))
    return out
  out["signature_diff"] = _lowering.diff(m.custom_call_targets, sigs)
  if m.lowering_only or not run:
    return out
  if recorded_module is not None and _same_computation(exp, recorded_module):
    # The entry's module up to source locations: its numerics are the readers' numerics.
    out["same_module"] = True
    return out
  actual = _current_run(case, exp, inputs)
  if isinstance(actual, str):
    out.update(error=f"running the current lowering failed: {actual}")
    return out
  verdict = checkers.check(m.comparison.mode, inputs, expected, actual,
                           rtol=m.comparison.rtol, atol=m.comparison.atol)
  out["numerics"] = verdict.to_json()
  return out


def _case_of(m: Manifest) -> _case.Case | None:
  """The registered case of an entry: its own, or for one imported from jax's corpus, the match."""
  if _corpus.is_corpus_dataset(m):
    return _corpus.matching_case(m.imported_from.details, lookup_case)
  return lookup_case(m.case_id)


def replay_entry(entry, readers: tuple[str, ...] | None = None, current: bool = True,
                 watch: _stopwatch.Stopwatch | None = None, run: bool = True) -> dict:
  """Replay one verified entry with ``readers`` (default: every reader) and, if ``current``,
  against today's lowering of its case. The answer carries ``timings`` per part.

  Without ``run`` (an accelerator's entry in a CPU run) the entry is checked as a
  lowering-only one: both readers deserialize it and its module's custom-call signatures
  and targets are judged, today's lowering is compared, nothing is run.

  The readers are independent, so with :func:`use_threads` the reference reader (then
  today's lowering) and the other readers run side by side: XLA compiles one while
  Python lowers the other. Today's lowering waits for the readers when it needs a jax
  configuration other than the entry's.
  """
  start = time.perf_counter()
  watch = watch or _stopwatch.Stopwatch()
  with _stopwatch.watching(watch), jax_config(entry_jax_config(entry.manifest)):
    m = entry.manifest
    blob = entry.blob()
    inputs = entry.inputs()
    expected = entry.expected_outputs() if run else None
    modules: dict[str, bytes] = {}
    shardings = entry.shardings()
    names = readers if readers is not None else _api.readers()
    lead = [r for r in names if r == _api.REFERENCE] or list(names[:1])
    rest = [r for r in names if r not in lead]
    answers: dict[str, dict] = {}
    result: dict[str, Any] = {}

    envelope = expired_envelope(blob)
    readable = blob if envelope is None else envelope.blob
    # An old record whose targets jaxlib dropped will fail to run: its upgraded run starts
    # now, beside the doomed attempt, and is used only if the record indeed fails.
    ahead = ({r: _Ahead(functools.partial(_upgrade_ahead, r, readable, inputs, watch))
              for r in names} if _threads is not None and run and _upgradable(m) else {})

    def read(some: list[str]) -> None:
      for r in some:
        with _contexts.lowering_for(r):
          answers[r] = _replay_with(r, blob, inputs, expected, m, modules, shardings, watch,
                                    ahead.get(r), envelope, run)

    case = _case_of(m) if current else None

    def today() -> None:
      with watch.stage(_stopwatch.CURRENT):
        result["current"] = _current(case, m, inputs, expected, modules.get(_api.REFERENCE), run)

    alongside = current and _today_keeps_config(case)

    def early() -> None:
      with watch.stage(_stopwatch.CURRENT):
        _today_ahead(case, m, inputs, run)

    try:
      _side_by_side(lambda: (read(lead), today() if alongside else None),
                    lambda: (early() if alongside and _threads is not None else None, read(rest)))
    finally:
      for task in ahead.values():
        task.settle()
    if current and not alongside:
      today()
    result["readers"] = [answers[r] for r in names]
  result["host"] = replay_host(entry.manifest.platform if run else "cpu").to_json()
  result["seconds"] = time.perf_counter() - start
  result["timings"] = watch.seconds
  return result


def _today_keeps_config(case: _case.Case | None) -> bool:
  """Whether exporting ``case`` today leaves jax's configuration as it is now (the entry's),
  so that it may run while a reader traces on another thread."""
  if case is None:
    return True
  wanted = {**case_jax_config(case), **dict(case.jax_flags)}
  return all(getattr(jax.config, name, object()) == value for name, value in wanted.items())


_threads: concurrent.futures.ThreadPoolExecutor | None = None


def use_threads(on: bool) -> None:
  """Run an entry's independent parts on two threads (on), or one after another."""
  global _threads
  if on and _threads is None:
    _threads = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jaxport-reader")
  elif not on and _threads is not None:
    _threads.shutdown()
    _threads = None


def _side_by_side(first: Callable[[], Any], second: Callable[[], Any]) -> None:
  """Run ``first`` here and ``second`` on the reader thread (here too, after ``first``, when
  the reader thread has not started it or there is none)."""
  other = _Ahead(second)
  try:
    first()
  finally:
    other.result()


class _Ahead:
  """Work queued on the reader thread before it is needed. Whoever needs it and finds it not
  started runs it in place, so no thread ever waits for work queued behind itself."""

  def __init__(self, work: Callable[[], Any]) -> None:
    self._work = work
    self._future = _threads.submit(work) if _threads is not None else None

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
