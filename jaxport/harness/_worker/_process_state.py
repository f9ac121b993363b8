"""What every entry starts from in the worker, and putting back what one entry's case code
left changed, so that a case cannot change the verdicts of the entries after it.

Taken once the worker is set up (:class:`EntryStart`), put back after each request:

- jax's configuration: the values jax's contexts set on each thread that runs case code
  (the worker's main thread and its reader thread), then the process-wide values that
  ``jax.config.update`` sets (``_jax_setup.ConfigSnapshot``);
- Python's warnings filters and ``warnings.showwarning``;
- timers a case armed (``signal.alarm``, ``signal.setitimer``), which are cancelled;
- the handler of every signal a case changed, and faulthandler's reports of fatal signals,
  which the worker set up when it started (``jaxport._isolation._process``).

Each thing put back is one line naming it, which the answer carries as the case's
configuration changes (a warning of that entry, in replay and in record). Putting back
costs tens of microseconds an entry when nothing changed
(``benchmarks/bench_state_restore.py``).
"""

from __future__ import annotations

import faulthandler
import signal
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from jaxport._isolation._process import FATAL_SIGNALS, report_fatal_signals
from jaxport._jaxcompat import _config_states
from jaxport.harness._worker._jax_setup import ConfigSnapshot

T = TypeVar("T")

# The timers a process has, each with the calls that arm it.
_TIMERS = tuple((getattr(signal, name), how) for name, how in (
    ("ITIMER_REAL", "signal.alarm or signal.setitimer(signal.ITIMER_REAL)"),
    ("ITIMER_VIRTUAL", "signal.setitimer(signal.ITIMER_VIRTUAL)"),
    ("ITIMER_PROF", "signal.setitimer(signal.ITIMER_PROF)"),
) if hasattr(signal, name))
# Every signal whose handler Python can set (SIGKILL's and SIGSTOP's cannot change).
_SIGNALS = tuple(sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}))
_PUT_BACK = "the harness put it back before the next entry"


def _here(work: Callable[[], T]) -> list[T]:
  return [work()]


def _thread_values() -> tuple[int, dict[str, Any]]:
  """The calling thread's id and its own value of each of jax's context states."""
  return threading.get_ident(), _config_states.local_values()


class EntryStart:
  """The worker's state as every entry starts from it, taken when the worker is set up
  (after ``configure_jax`` and before the first request). ``each_thread`` runs a function
  on every thread that runs case code, this one first, and gives their results in that
  order (the engine's ``each_thread``). Take and restore it on the main thread (only it may
  set signal handlers), between requests (no other thread may run jax then)."""

  def __init__(self, each_thread: Callable[[Callable[[], Any]], list[Any]] = _here) -> None:
    self._each_thread = each_thread
    self._local_config = dict(each_thread(_thread_values))
    self._config = ConfigSnapshot()
    self._filters = list(warnings.filters)
    self._showwarning = warnings.showwarning
    self._armed = {which for which, _ in _TIMERS if any(signal.getitimer(which))}
    self._handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    self._faulthandler = faulthandler.is_enabled()

  def restore(self) -> list[str]:
    """Put back everything an entry changed since the snapshot; one line for each thing,
    naming it, what it was and what the case made of it."""
    # Each thread's own values first: jax.config's values read through them.
    lines = [line for changes in self._each_thread(self._put_back_local_config)
             for line in changes]
    lines = list(dict.fromkeys(lines))  # the same context left on two threads: one line
    lines += self._config.restore()
    lines += self._restore_warnings()
    lines += self._cancel_timers()
    lines += self._restore_handlers()
    return lines

  def _put_back_local_config(self) -> list[str]:
    """On the calling thread: its jax context values put back, one line for each (a thread
    started since the snapshot had no value of its own)."""
    lines = []
    for change in _config_states.put_back(self._local_config.get(threading.get_ident(), {})):
      how = (_PUT_BACK if change.error is None
             else f"it could not be put back ({change.error})")
      lines.append(
          f"the case entered jax's configuration context {change.name} with "
          f"{_config_states.value_text(change.now)} and did not leave it (the thread's own "
          f"value had been {_config_states.value_text(change.then)}); {how}. A case sets "
          "jax's configuration through Case(jax_flags=...) or enable_x64, which the manifest "
          "keeps, and leaves every context it enters")
    return lines

  def _restore_warnings(self) -> list[str]:
    lines = []
    now = list(warnings.filters)
    if len(now) != len(self._filters) or any(a is not b and a != b
                                              for a, b in zip(now, self._filters)):
      added = [_filter_text(f) for f in now if f not in self._filters]
      removed = [_filter_text(f) for f in self._filters if f not in now]
      what = "; ".join(filter(None, (added and "added " + ", ".join(added),
                                     removed and "removed " + ", ".join(removed))))
      # resetwarnings tells Python's warning registries that the filters changed.
      warnings.resetwarnings()
      warnings.filters[:] = self._filters
      lines.append(f"the case changed Python's warnings filters while it ran "
                   f"({what or 'reordered them'}); the harness put them back before the next "
                   "entry. A "
                   "case that needs other filters sets them inside warnings.catch_warnings(), "
                   "which puts them back")
    if warnings.showwarning is not self._showwarning:
      warnings.showwarning = self._showwarning
      lines.append(f"the case replaced warnings.showwarning while it ran; {_PUT_BACK}. A case "
                   "that needs it replaced does so inside warnings.catch_warnings()")
    return lines

  def _cancel_timers(self) -> list[str]:
    lines = []
    for which, how in _TIMERS:
      left, interval = signal.getitimer(which)
      if (left or interval) and which not in self._armed:
        signal.setitimer(which, 0)
        every = f", every {interval:g} s after" if interval else ""
        lines.append(f"the case left a timer armed ({how}: {left:.3g} s left{every}); the "
                     "harness cancelled it before the next entry, whose process its signal "
                     "would have stopped. A case that arms a timer cancels it before it "
                     "returns")
    return lines

  def _restore_handlers(self) -> list[str]:
    lines = []
    fatal_touched = False
    for signum, then in self._handlers.items():
      now = signal.getsignal(signum)
      if now is then or now == then:
        continue
      name = _signal_name(signum)
      how = _PUT_BACK
      if then is None:  # set outside Python: nothing to set back
        how = "it could not be put back (the worker's handler was not set from Python)"
      else:
        try:
          signal.signal(signum, then)
          fatal_touched = fatal_touched or signum in FATAL_SIGNALS
        except (OSError, ValueError, RuntimeError) as e:
          how = f"it could not be put back ({type(e).__name__}: {e})"
      lines.append(f"the case changed the handler of {name} from {_handler_text(then)} to "
                   f"{_handler_text(now)} while it ran; {how}. A case that handles a signal "
                   "puts the handler it found back before it returns")
    if self._faulthandler and not faulthandler.is_enabled():
      lines.append("the case turned faulthandler off while it ran; the harness turned it back "
                   "on before the next entry, so that a crash still writes its stacks")
      fatal_touched = True
    if fatal_touched:
      # A handler set back over a fatal signal replaced faulthandler's own: take it back.
      report_fatal_signals()
    return lines


def _filter_text(f: tuple) -> str:
  """A warnings filter as a message shows it: ``error for Warning``, with its message and
  module patterns where it has them."""
  action, message, category, module, lineno = (tuple(f) + (None,) * 5)[:5]
  text = f"{action} for {getattr(category, '__name__', category)}"
  for label, pattern in (("message", message), ("module", module)):
    pattern = getattr(pattern, "pattern", pattern)
    if pattern:
      text += f" {label} {pattern!r}"
  return text + (f" line {lineno}" if lineno else "")


def _signal_name(signum: int) -> str:
  try:
    return signal.Signals(signum).name
  except ValueError:
    return f"signal {signum}"


def _handler_text(handler: Any) -> str:
  if handler is None:
    return "a handler set outside Python"
  if isinstance(handler, signal.Handlers):
    return handler.name
  if handler is signal.default_int_handler:
    return "Python's default_int_handler"
  return getattr(handler, "__qualname__", None) or repr(handler)
