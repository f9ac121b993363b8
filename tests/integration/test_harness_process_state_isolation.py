"""Each entry starts from the same worker process, whatever the case before it left behind:
jax's configuration contexts entered and never left, Python's warnings filters, timers and
signal handlers are put back after each entry, with a warning naming each change in the
entry that made it, and a case that reads stdin gets end of file, never the next request.
Later entries keep their verdicts, in replay and in record.

One downstream project serves the whole module: recorded once, then replayed and recorded
again with the hostile cases turned on (the switch ``CASE_LEAKS``; the recording with the
crashing case's ``CASE_CRASHES`` too), each run's report read by the tests.
"""

import json
import textwrap
from pathlib import Path

import jax
import pytest
from jax._src import config as jax_config

from _downstream_project import CASE_PRELUDE, GOLDEN_TESTS, pyproject, switch, switched_on
from _sessions import SessionResult, session_here

pytestmark = pytest.mark.slow

CASES = CASE_PRELUDE + """
import signal
import sys
import warnings

import jax
from jax._src import config as jax_config

LEAKS = SWITCH_LEAKS


def context_states():
  \"\"\"jax's configuration contexts as jax offers them: every attribute of the jax module
  that is one of its configuration states.\"\"\"
  return {name: getattr(jax, name) for name in sorted(dir(jax))
          if isinstance(getattr(jax, name, None), jax_config.State)}


def other_value(state):
  \"\"\"A value of ``state`` other than the one it has, from the option's description.\"\"\"
  kind, _, meta = jax.config.meta[state.name]
  now = state.value
  if kind is bool:
    return not now
  if kind == "enum":
    return next(v for v in meta["enum_values"] if v != now)
  if kind == "enum_class":
    return next(v for v in meta["enum_class"] if v != now)
  if kind in (int, float):
    return now + 1
  if kind is str:
    return "cpu"  # the default device's platform
  raise TypeError(f"no other value known for {state.name} of kind {kind}")


# What jax's contexts are when the case module is imported (before any entry): the case after
# the leaking one must see the same.
AT_IMPORT = {name: repr(state.value) for name, state in context_states().items()}


def a_warnings(a):
  if LEAKS:
    warnings.simplefilter("error")
  return jnp.exp(a)


def b_float64(a):
  # Without 64-bit types jax warns that float64 is not available.
  return a.astype(jnp.float64) * 2


def _handler(signum, frame):
  pass


def c_timers(a):
  if LEAKS:
    signal.alarm(30)
    signal.setitimer(signal.ITIMER_VIRTUAL, 60.0)
    try:  # only the main thread sets handlers: a recording's, not a replay's reader thread
      signal.signal(signal.SIGUSR1, _handler)
      signal.signal(signal.SIGSEGV, _handler)
    except ValueError:
      pass
  return jnp.abs(a)


def d_after_timers(a):
  armed = [w for w in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
           if any(signal.getitimer(getattr(signal, w)))]
  handled = [s.name for s in (signal.SIGUSR1, signal.SIGSEGV)
             if signal.getsignal(s) is not signal.SIG_DFL]
  if armed or handled:
    raise ValueError(f"timers armed: {armed}; signals handled: {handled}")
  return jnp.floor(a)


def e_crashes(a):
  if SWITCH_CRASHES:
    os.kill(os.getpid(), signal.SIGSEGV)
  return jnp.ceil(a)


def f_reads_stdin(a):
  if LEAKS:
    sys.stdin.readline()
    try:
      input()
    except EOFError:
      pass
  return jnp.tanh(a)


def g_after_stdin(a):
  return jnp.sinh(a)


def x_contexts(a):
  out = jnp.cos(a)
  if LEAKS:
    for state in context_states().values():
      state(other_value(state)).__enter__()
  return out


def y_after_contexts(a):
  differ = {k: (v, AT_IMPORT[k]) for k, v in context_states().items()
            if repr(v.value) != AT_IMPORT[k]}
  if differ:
    raise ValueError(f"jax's contexts changed since the case module was imported: {differ}")
  return a + jnp.ones((3,), a.dtype)  # rank promotion: an error under "raise"


def cases():
  # In this order: each hostile case is followed by the fine one it would fail, and the ones
  # whose harm would reach every later entry come last.
  names = ("a_warnings", "b_float64", "c_timers", "d_after_timers", "e_crashes",
           "f_reads_stdin", "g_after_stdin", "x_contexts", "y_after_contexts")
  return [Case(n, "mine", globals()[n], square) for n in names]
""".replace("SWITCH_LEAKS", switched_on("CASE_LEAKS")).replace("SWITCH_CRASHES",
                                                                switched_on("CASE_CRASHES"))

# A case that waited for input it never gets would fail as a time-out, after 60 s.
RUN = ("-p", "no:cacheprovider", "--compat-today=2026-12-01", "-p", "no:xdist",
       "--compat-worker-timeout=60")
FINE = ("b_float64", "d_after_timers", "g_after_stdin", "y_after_contexts")


def _context_state_names() -> list[str]:
  """The configuration states the installed jax offers as contexts, read from jax now."""
  return sorted(getattr(jax, name).name for name in dir(jax)
                if isinstance(getattr(jax, name, None), jax_config.State))


def _pytest(project: Path, *args: str) -> SessionResult:
  return session_here(project, *RUN, *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """The project recorded clean, then replayed and recorded again with the hostile cases on
  (the recording with the crashing case too): each run's report by name."""
  project = tmp_path_factory.mktemp("process_state")
  (project / "pyproject.toml").write_text(pyproject())
  (project / "test_golden.py").write_text(GOLDEN_TESTS)
  (project / "mycases.py").write_text(textwrap.dedent(CASES))
  first = _pytest(project, "--compat-record")
  assert first.returncode == 0, first.stdout[-3000:]
  switch(project, "CASE_LEAKS")
  replay = _pytest(project, f"--compat-report={project / 'replay.json'}")
  switch(project, "CASE_CRASHES")
  record = _pytest(project, "--compat-record", f"--compat-report={project / 'record.json'}")
  replayed = {e["case_id"]: e for e in
              json.loads((project / "replay.json").read_text())["entries"]}
  recorded = {r["case_id"]: r for r in
              json.loads((project / "record.json").read_text())["recorded"]}
  return {"replayed": replayed, "recorded": recorded, "replay_output": replay.stdout,
          "record_output": record.stdout}


def _messages(entry: dict) -> str:
  return "\n".join(entry["messages"])


def _kept_its_verdict(runs: dict, case_id: str) -> None:
  """``case_id`` passed in the replay and was recorded unchanged."""
  replayed, recorded = runs["replayed"][case_id], runs["recorded"][case_id]
  assert replayed["status"] == "pass", (replayed, runs["replay_output"][-3000:])
  assert recorded["action"] == "unchanged", (recorded, runs["record_output"][-3000:])


def test_the_entries_after_a_hostile_case_keep_their_verdicts_in_replay_and_record(runs):
  for case_id in FINE:
    _kept_its_verdict(runs, case_id)


def test_every_context_jax_offers_entered_and_left_open_is_put_back_and_named(runs):
  names = _context_state_names()
  assert {"jax_numpy_rank_promotion", "jax_numpy_dtype_promotion", "jax_debug_nans",
          "jax_default_matmul_precision", "jax_default_device"} <= set(names)
  leaking = runs["replayed"]["x_contexts"]
  assert "jax_config_changed" in leaking["kinds"], leaking
  text = _messages(leaking)
  missing = [n for n in names if f"jax's configuration context {n} " not in text]
  assert not missing, (missing, text[-3000:])
  # The next entry started from jax's defaults (y_after_contexts compares every context's
  # value with the one it had when the case module was imported), in replay and in record.
  _kept_its_verdict(runs, "y_after_contexts")


def test_a_case_reading_stdin_gets_end_of_file_and_the_next_entry_its_own_request(runs):
  _kept_its_verdict(runs, "f_reads_stdin")
  _kept_its_verdict(runs, "g_after_stdin")


def test_a_warnings_filter_set_by_one_case_is_put_back_and_named(runs):
  for leg, text in (("replayed", _messages(runs["replayed"]["a_warnings"])),
                    ("recorded", runs["recorded"]["a_warnings"]["message"])):
    assert "the case changed Python's warnings filters" in text, (leg, text)
    assert "error for Warning" in text, (leg, text)
  _kept_its_verdict(runs, "b_float64")


def test_timers_and_signal_handlers_a_case_left_are_put_back_and_named(runs):
  replayed, recorded = (_messages(runs["replayed"]["c_timers"]),
                        runs["recorded"]["c_timers"]["message"])
  for leg, text, named in (("replayed", replayed, ("ITIMER_REAL", "ITIMER_VIRTUAL")),
                           ("recorded", recorded, ("ITIMER_REAL", "ITIMER_VIRTUAL",
                                                   "handler of SIGUSR1", "handler of SIGSEGV"))):
    for name in named:
      assert name in text, (leg, name, text)
  _kept_its_verdict(runs, "d_after_timers")


def test_a_crash_after_a_handler_was_put_back_still_writes_the_stacks(runs):
  crashed = runs["recorded"]["e_crashes"]
  assert crashed["action"] == "error", crashed
  # faulthandler's report, with the frame of the case that crashed.
  assert "Fatal Python error: Segmentation fault" in crashed["message"], crashed["message"]
  assert "in e_crashes" in crashed["message"], crashed["message"]
