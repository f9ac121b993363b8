"""Every function of jax the harness replaces at run time is checked first: against another
signature (or none) the replacement stays off, jax's function stays in place, and the reason
reaches the log and the report; against the signature it was written for it turns on and off
cleanly."""

import datetime
import json
import logging
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.fuzz import shape_impls as fuzz  # noqa: E402
from jaxport.golden import EntryId
from jaxport.harness._worker import _contexts, _executables, _jax_setup  # noqa: E402
from jaxport.harness._controller import _reporter as reporter  # noqa: E402
from jaxport.harness._protocol._answers import (  # noqa: E402
    FailureKind, ReplayAnswer, WorkerFailure)
from jaxport.harness._worker._replacement import Replacement, spelling  # noqa: E402
from jaxport.harness._controller._session import HarnessSession  # noqa: E402
from jaxport.harness._controller._settings import Options, Settings  # noqa: E402
from jaxport.harness._controller._worker_client import Reply  # noqa: E402
from jaxport.harness._project import OnChange, Project  # noqa: E402


def _fake_module(name: str, fn) -> types.ModuleType:
  """A module standing for jax's, holding ``fn`` as ``name``."""
  module = types.ModuleType("fake_jax_module")
  setattr(module, name, fn)
  return module


def _compile_or_get_cached(backend, computation, devices, compile_options, host_callbacks,
                           executable_devices, pgle_profiler=None):
  return ("compiled", computation)


def _compile_renamed(backend, computation, devices, compile_options, host_callbacks,
                     executable_devices, profiler=None):
  return ("compiled", computation)


def _compile_longer(backend, computation, devices, compile_options, host_callbacks,
                    executable_devices, pgle_profiler=None, *, donated=()):
  return ("compiled", computation)


def _make_ir_context_with_arg(dialects=()):
  return object()


@pytest.fixture
def no_sharing():
  """The memo and the pool off again after the test, their reasons forgotten."""
  yield
  _executables.stop_sharing()
  _contexts.stop_reusing()


# --- the helper --------------------------------------------------------------------------

def test_the_spelling_has_names_kinds_and_defaults_but_no_annotations():
  def f(a: int, /, b: "x.Y", *rest, c=None, **kw) -> "z":
    pass
  assert spelling(f) == "(a, /, b, *rest, c=None, **kw)"


def test_a_replacement_must_name_the_signatures_it_was_written_for():
  with pytest.raises(AssertionError, match="must name the signatures"):
    Replacement(types.ModuleType("m"), "f", lambda: None, written_for=(), what="x")


def test_each_replacement_was_written_for_the_installed_jax():
  for replacement in (_executables.COMPILE, _contexts.MAKE_CONTEXT, fuzz.static_check_off()):
    assert replacement.mismatch() is None, replacement.mismatch()


def test_an_inherited_method_is_uncovered_again_when_turned_off():
  class Base:
    def check(self, eval):
      return "jax's"

  class Derived(Base):
    pass

  r = Replacement(Derived, "check", lambda self, eval: "ours", written_for=("(self, eval)",),
                  what="check bypass")
  assert r.on() and Derived().check(None) == "ours" and Base().check(None) == "jax's"
  r.off()
  assert "check" not in vars(Derived) and Derived().check(None) == "jax's"


# --- the compile memo --------------------------------------------------------------------

@pytest.mark.parametrize("other", [_compile_renamed, _compile_longer], ids=["renamed", "longer"])
def test_the_compile_memo_stays_off_over_another_signature(monkeypatch, caplog, no_sharing,
                                                           other):
  fake = _fake_module("compile_or_get_cached", other)
  monkeypatch.setattr(_executables.COMPILE, "owner", fake)
  with caplog.at_level(logging.WARNING, logger="jaxport.harness._worker._replacement"):
    assert _executables.share_within_process() is False
  assert fake.compile_or_get_cached is other
  status = _executables.COMPILE.status
  assert not status.on and status.reason is not None
  assert f"has signature {spelling(other)}" in status.reason
  assert f"written for {_executables.COMPILE_SIGNATURES[0]}" in status.reason
  assert status.notice.startswith("compile memo off: jax's compile_or_get_cached has signature")
  assert [r.getMessage() for r in caplog.records] == [f"compile memo stays off: {status.reason}"]


def test_the_compile_memo_stays_off_where_jax_has_no_compile_step(monkeypatch, no_sharing):
  fake = types.ModuleType("fake_jax_module")
  monkeypatch.setattr(_executables.COMPILE, "owner", fake)
  assert _executables.share_within_process() is False
  assert not hasattr(fake, "compile_or_get_cached")
  assert "jax has no fake_jax_module.compile_or_get_cached" in _executables.COMPILE.status.reason


def test_the_compile_memo_turns_on_and_off_over_its_signature(monkeypatch, no_sharing):
  fake = _fake_module("compile_or_get_cached", _compile_or_get_cached)
  monkeypatch.setattr(_executables.COMPILE, "owner", fake)
  assert _executables.share_within_process() is True
  assert _executables.share_within_process() is True  # idempotent
  assert fake.compile_or_get_cached is _executables._compile_once
  assert _executables.COMPILE.original is _compile_or_get_cached
  assert _executables.COMPILE.status.on and _executables.COMPILE.status.notice is None
  # A module with host callbacks is never shared: it goes straight to jax's function.
  assert fake.compile_or_get_cached("b", "module", "d", "o", ["cb"], "e") == ("compiled", "module")
  _executables.stop_sharing()
  assert fake.compile_or_get_cached is _compile_or_get_cached
  assert not _executables.COMPILE.status.on


# --- the reused MLIR contexts ------------------------------------------------------------

def test_the_context_pool_stays_off_over_another_signature(monkeypatch, caplog, no_sharing):
  fake = _fake_module("make_ir_context", _make_ir_context_with_arg)
  monkeypatch.setattr(_contexts.MAKE_CONTEXT, "owner", fake)
  with caplog.at_level(logging.WARNING, logger="jaxport.harness._worker._replacement"):
    assert _contexts.reuse_within_process() is False
  assert fake.make_ir_context is _make_ir_context_with_arg
  reason = _contexts.MAKE_CONTEXT.status.reason
  assert "jax's make_ir_context has signature (dialects=()), written for ()" in reason
  assert _contexts.MAKE_CONTEXT.status.notice == f"reused MLIR contexts off: {reason}"
  assert len(caplog.records) == 1 and reason in caplog.records[0].getMessage()


def test_the_context_pool_turns_on_and_off_over_its_signature(monkeypatch, no_sharing):
  made = []

  def make_ir_context():
    made.append(object())
    return made[-1]

  fake = _fake_module("make_ir_context", make_ir_context)
  monkeypatch.setattr(_contexts.MAKE_CONTEXT, "owner", fake)
  assert _contexts.reuse_within_process() is True
  with _contexts.lowering_for("reader"):
    first, second = fake.make_ir_context(), fake.make_ir_context()
  assert first is second and made == [first]
  _contexts.stop_reusing()
  assert fake.make_ir_context is make_ir_context
  assert fake.make_ir_context() is not first


# --- the fuzz suite's static-check bypass ------------------------------------------------

class _Constraints:
  """Stands for jax's ShapeConstraints: its static check refuses everything."""

  def check_statically(self, eval):
    raise AssertionError("jax's static check ran")


class _ConstraintsOtherSignature:
  def check_statically(self, eval, is_inconclusive=None):
    raise AssertionError("jax's static check ran")


def test_the_static_check_bypass_stays_off_over_another_signature(monkeypatch):
  bypass = fuzz.static_check_off()
  original = _ConstraintsOtherSignature.check_statically
  monkeypatch.setattr(bypass, "owner", _ConstraintsOtherSignature)
  try:
    assert bypass.on() is False
    assert _ConstraintsOtherSignature.check_statically is original
    assert "has signature (self, eval, is_inconclusive=None), written for (self, eval)" in (
        bypass.status.reason)

    class NeverSerialized:
      def serialize(self):
        raise AssertionError("the module ran although jax's check could not be turned off")

    # The fuzz suite fails (a pytest outcome, not an Exception a caller takes for a refusal).
    with pytest.raises(pytest.fail.Exception, match="has signature") as failed:
      fuzz.call_through_module(NeverSerialized(), [])
    assert not isinstance(failed.value, Exception)
  finally:
    bypass.off()


def test_the_static_check_bypass_turns_on_and_off_over_its_signature(monkeypatch):
  bypass = fuzz.static_check_off()
  monkeypatch.setattr(bypass, "owner", _Constraints)
  original = _Constraints.__dict__["check_statically"]
  try:
    assert bypass.on() is True
    assert _Constraints().check_statically(None) is None
  finally:
    bypass.off()
  assert _Constraints.__dict__["check_statically"] is original
  with pytest.raises(AssertionError, match="static check ran"):
    _Constraints().check_statically(None)


# --- the report ----------------------------------------------------------------------------

def test_the_engine_names_each_memo_that_stays_off(monkeypatch, no_sharing):
  assert _jax_setup.replacement_notices() == []
  monkeypatch.setattr(_executables.COMPILE, "owner",
                      _fake_module("compile_or_get_cached", _compile_renamed))
  _executables.share_within_process()
  notice, = _jax_setup.replacement_notices()
  assert notice == _executables.COMPILE.status.notice
  assert notice.startswith("compile memo off: jax's compile_or_get_cached has signature")
  _executables.stop_sharing()
  assert _jax_setup.replacement_notices() == []


def _session(root: Path) -> HarnessSession:
  project = Project(case_modules=(), store=root, on_change=OnChange.WARN, root=root)
  return HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date(2026, 11, 29)),
      golden_root=root, partial=True), project)


NOTICE = ("compile memo off: jax's compile_or_get_cached has signature (backend, computation), "
          "written for (backend, computation, devices, compile_options, host_callbacks, "
          "executable_devices, pgle_profiler=None) (jax._src.compiler.compile_or_get_cached)")


def test_the_report_carries_a_workers_notice_once(tmp_path):
  worker = _session(tmp_path)
  worker.pool.answer(Reply(WorkerFailure(FailureKind.HARNESS, "x"), (NOTICE,)), ReplayAnswer)
  # A crashed worker's answer has no notices.
  worker.pool.answer(Reply(WorkerFailure(FailureKind.CRASHED, "the worker exited"), ()), ReplayAnswer)
  controller = _session(tmp_path)
  controller.merge(worker.worker_output())  # as an xdist worker sends its results
  controller.merge(worker.worker_output())
  report = controller.build_report()
  assert report.session_warnings == (NOTICE,)
  assert f"session warning: {NOTICE}" in reporter.text_lines(report)
  assert json.loads(json.dumps(report.to_json()))["session_warnings"] == [NOTICE]


def test_a_replay_answer_with_a_notice_reaches_the_report(tmp_path, monkeypatch):
  import shutil
  entry_id = "cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
  shutil.copytree(ROOT / "compat_data" / entry_id, tmp_path / entry_id)
  hs = _session(tmp_path)

  class Worker:
    def send_ahead(self, request, most=1):
      return False  # taken by ``request`` only

    def holds_ahead(self, entry_id):
      return False

    def request(self, request):
      return Reply(WorkerFailure(FailureKind.HARNESS, "not replayed in this test"), (NOTICE,))

  monkeypatch.setattr(hs.pool, "worker", lambda num_devices=1: Worker())
  hs.replay(EntryId.parse(entry_id))
  assert hs.build_report().session_warnings == (NOTICE,)


def test_a_worker_sharing_executables_answers_with_its_notices_and_has_none_on_this_jax(tmp_path):
  from jaxport.harness._protocol._answers import ProjectCases
  from jaxport.harness._protocol._requests import CasesRequest
  from jaxport.harness._controller._worker_client import WorkerClient
  client = WorkerClient(_session(tmp_path).project, timeout_s=120, share_executables=True)
  try:
    answer, notices, _ = client.request(CasesRequest())
  finally:
    client.close()
  assert isinstance(answer, ProjectCases), answer
  assert notices == ()
