"""Generate ``jaxport/releases/release_table.json``: what each jax release reads, writes and registers.

For every release of the table (or ``--releases``; a release it does not list yet with
``--date``, the day its wheels were first published), in
its own venv (reused from ``.jax-venvs/`` where one exists, else built in a
scratch folder and deleted after measuring unless ``--keep-venvs``), one release
at a time, this measures:

- the StableHLO versions its jaxlib writes and reads (``get_current_version``,
  ``get_minimum_version``) and the VHLO operations its jaxlib defines (the op
  names compiled into its shared libraries);
- the calling conventions it exports and calls (``jax.export``'s or
  ``jax.experimental.export``'s minimum/maximum supported versions);
- which envelope layouts its ``jax.export.deserialize`` reads (one blob per
  layout, as ``harness/tools/reader_policy.py`` always measured), and from that
  the serialization versions it accepts and whether it has an expiry policy;
  which device-count field it takes (a one-device blob with only ``nr_devices``,
  one with only the older ``nr_devices_short``);
- whether its jaxlib reads a StableHLO newer than its own (the newest
  release's export of ``sin``) and a module using the ``sdy`` dialect (the
  oldest release-case module whose bytecode lists it), and whether its reader
  refuses a calling convention above its maximum (its own export of ``sin`` at
  that version, serialized, read back and called);
- the cpu custom-call targets it registers: a minimal module calling each
  target of any release's stable table and of jaxport's upgrade rules is
  compiled on cpu (and, for a typed FFI target, executed without operands, whose
  refusal names the operand count the handler binds); a made-up target must
  fail, or the release is not measured;
- its own stable-target table, split per platform (cuda, rocm and tpu are taken
  from it only, never measured).

A release that shipped no jaxlib of its own number is measured with the jaxlib its
``[cpu]`` extra installs (recorded as ``jaxlib``); a release the package index
serves on none of Python 3.11 to 3.13 is listed with pip's reason. Results are written after each release; a rerun skips releases
already measured (``--force`` measures them again). The sample blobs are this checkout's
``compat_data/`` release cases; :mod:`jaxport.multirelease._table_measure` does the measuring.

    python harness/tools/release_table.py                       # every release, resumably
    python harness/tools/release_table.py --releases 0.9.1 --keep-venvs
    python harness/tools/release_table.py --reader-only --out NEW.json   # reader facts again
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
  sys.path.insert(0, str(CHECKOUT))

from jaxport.multirelease import _table_measure  # noqa: E402

STORE = CHECKOUT / "compat_data"
METHOD = ("harness/tools/release_table.py: in each release's own venv, its jaxlib's StableHLO "
          "versions and VHLO op names, its export module's calling-convention bounds and stable "
          "table, its jax.export.deserialize on one blob per envelope layout (default "
          "configuration) and on one-device blobs with only one device-count field each, its "
          "jaxlib's portable-artifact reader on a newer StableHLO and on a module using the sdy "
          "dialect, a round trip and call of its own export at a calling convention above its "
          "maximum, and a cpu compile (and, for typed FFI targets, a run without operands) of a "
          "minimal custom call per probed target")


def main(argv: list[str] | None = None) -> int:
  """Measure the releases ``argv`` names, on this checkout's store's sample blobs."""
  return _table_measure.main(argv, STORE, METHOD)


if __name__ == "__main__":
  sys.exit(main())
