"""Per-entry cost of putting the worker's process state back after an entry, in one run.

Run by hand: ``python benchmarks/bench_state_restore.py [--reps N] [--rounds N]``. The
worker takes the state every entry starts from once (``EntryStart``: jax's configuration
and each thread's context values, warnings filters, timers, signal handlers) and puts it
back after each request; this measures that put-back as the worker does it, with a reader
thread, in two cases:

- clean: the entry changed nothing (every entry of a well-behaved project);
- leaky: the entry left a jax context open, a warnings filter and a timer, all put back.

Prints the median and minimum of ``--rounds`` rounds of ``--reps`` restores each, per
entry; the target is under 1 ms on 2 cores. The cost of taking the snapshot (once per
worker) is printed too.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import signal
import statistics
import time
import warnings

import jax

from jaxport.harness._worker._jax_setup import configure_jax
from jaxport.harness._worker._process_state import EntryStart

TARGET_S = 1e-3


def _leak() -> None:
  jax.numpy_rank_promotion("raise").__enter__()
  warnings.simplefilter("error")
  signal.setitimer(signal.ITIMER_VIRTUAL, 60.0)


def _per_restore(start: EntryStart, reps: int, leak: bool) -> float:
  """Seconds a restore takes on average over ``reps`` (leaking before each if ``leak``; the
  leak itself is not timed)."""
  total = 0.0
  for _ in range(reps):
    if leak:
      _leak()
    begin = time.perf_counter()
    start.restore()
    total += time.perf_counter() - begin
  return total / reps


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--reps", type=int, default=200, help="restores per round")
  parser.add_argument("--rounds", type=int, default=7, help="rounds (median and minimum)")
  args = parser.parse_args()
  configure_jax(share_executables=True, own_process=True)
  with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jaxport-reader") as reader:
    def each_thread(work):
      return [work(), reader.submit(work).result()]

    begin = time.perf_counter()
    start = EntryStart(each_thread)
    taken = time.perf_counter() - begin
    print(f"snapshot (once per worker): {taken * 1e6:.0f} us")
    for name, leak in (("clean", False), ("leaky", True)):
      rounds = [_per_restore(start, args.reps, leak) for _ in range(args.rounds)]
      median, best = statistics.median(rounds), min(rounds)
      verdict = "ok" if median < TARGET_S else "OVER"
      print(f"restore per entry, {name}: median {median * 1e6:.0f} us, min {best * 1e6:.0f} us "
            f"({verdict}: target < {TARGET_S * 1e3:.0f} ms)")


if __name__ == "__main__":
  main()
