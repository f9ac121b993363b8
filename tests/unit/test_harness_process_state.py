"""What one entry leaves changed in the worker process is put back before the next and named:
jax's context values on each thread that runs case code, jax's settings, warnings filters,
timers, signal handlers and faulthandler's reports."""

import concurrent.futures
import faulthandler
import signal
import warnings

import jax
import pytest

from jaxport.harness._worker._process_state import EntryStart


@pytest.fixture
def start():
  """The state of this process taken as an entry's start, put back whatever the test did."""
  taken = EntryStart()
  yield taken
  taken.restore()


def test_an_untouched_process_puts_nothing_back(start):
  assert start.restore() == []


def test_a_context_left_open_on_the_main_thread_is_put_back_and_named(start):
  jax.numpy_dtype_promotion("strict").__enter__()
  (line,) = start.restore()
  assert line.startswith("the case entered jax's configuration context "
                         "jax_numpy_dtype_promotion with <NumpyDtypePromotion.STRICT"), line
  assert str(jax.config.jax_numpy_dtype_promotion) == "standard"


def test_a_context_left_open_on_the_reader_thread_is_put_back_there():
  with concurrent.futures.ThreadPoolExecutor(1) as reader:
    def each_thread(work):
      return [work(), reader.submit(work).result()]

    start = EntryStart(each_thread)
    reader.submit(lambda: jax.debug_nans(True).__enter__()).result()
    (line,) = start.restore()
    assert "jax_debug_nans with True" in line
    assert reader.submit(lambda: jax.config.jax_debug_nans).result() is False


def test_a_setting_changed_with_update_is_still_put_back(start):
  jax.config.update("jax_default_prng_impl", "rbg")
  (line,) = start.restore()
  assert "jax_default_prng_impl" in line and jax.config.jax_default_prng_impl == "threefry2x32"


def test_a_warnings_filter_is_put_back_and_named(start):
  before = list(warnings.filters)
  warnings.simplefilter("error")
  warnings.filterwarnings("ignore", message="noisy", category=DeprecationWarning)
  (line,) = start.restore()
  assert "added ignore for DeprecationWarning message 'noisy', error for Warning" in line, line
  assert warnings.filters == before


def test_a_replaced_showwarning_is_put_back(start):
  shown = warnings.showwarning
  warnings.showwarning = lambda *args, **kwargs: None
  (line,) = start.restore()
  assert "warnings.showwarning" in line and warnings.showwarning is shown


def test_armed_timers_are_cancelled_and_named(start):
  signal.alarm(100)
  signal.setitimer(signal.ITIMER_VIRTUAL, 50.0, 5.0)
  lines = start.restore()
  assert any("signal.alarm" in line and "s left" in line for line in lines), lines
  assert any("ITIMER_VIRTUAL" in line and "every 5 s after" in line for line in lines), lines
  assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
  assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def _handler(signum, frame):
  pass


def test_a_changed_signal_handler_is_put_back_and_faulthandler_keeps_fatal_signals(start):
  usr1, segv = signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGSEGV)
  signal.signal(signal.SIGUSR1, _handler)
  signal.signal(signal.SIGSEGV, _handler)
  lines = start.restore()
  assert any(line.startswith(f"the case changed the handler of SIGUSR1 from {usr1.name} to "
                             "_handler") for line in lines), lines
  assert signal.getsignal(signal.SIGUSR1) is usr1 and signal.getsignal(signal.SIGSEGV) is segv


def test_faulthandler_turned_off_is_turned_back_on():
  was_on = faulthandler.is_enabled()
  faulthandler.enable()
  try:
    start = EntryStart()
    faulthandler.disable()
    (line,) = start.restore()
    assert "turned faulthandler off" in line and faulthandler.is_enabled()
  finally:
    if not was_on:
      faulthandler.disable()
