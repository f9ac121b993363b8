"""Record a project's release cases with another jax release's own ``jax.export``.

``jaxport record --with-jax VERSION`` in a project that lists release cases
(``jaxport_release_cases``): the release's environment (:mod:`._envs`) runs the recorder of
the ``jaxport_in_release`` package, which loads each case module by its path and records its
cases with that release's public export API into a staging folder; back in this process the
staging folder is imported into the project's store (:mod:`._staging`). Entries already
present are left as they are (the store is append-only).
"""

from __future__ import annotations

import logging
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jaxport.errors import JaxportError
from jaxport.golden._store import GoldenStore
from jaxport.multirelease import _envs
from jaxport.multirelease._replay import IN_RELEASE, release_env
from jaxport.multirelease._staging import ImportResult, import_staging

logger = logging.getLogger(__name__)

RECORDER = IN_RELEASE / "recorder.py"


class RecorderError(JaxportError, RuntimeError):
  """The release's recorder failed; the message holds its command and the end of its output."""


def run_recorder(python: Path, staging: Path, case_files: Sequence[Path], cases: Sequence[str],
                 platform: str, date: str | None) -> None:
  """Run the recorder with ``python`` (a release's interpreter) over ``case_files``."""
  cmd = [str(python), str(RECORDER), "--out", str(staging), "--platform", platform]
  for path in case_files:
    cmd += ["--cases-file", str(path)]
  for c in cases:
    cmd += ["--case", c]
  if date:
    cmd += ["--date", date]
  proc = subprocess.run(cmd, env=release_env(), capture_output=True, text=True)
  if proc.returncode != 0:
    raise RecorderError(f"the recorder failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                        f"{proc.stderr[-4000:]}")


def record(version: str, store_root: Path, case_files: Sequence[Path], *,
           cases: Sequence[str] = (), platform: str = "cpu", venvs: Path | None = None,
           date: str | None = None, keep_staging: Path | None = None) -> ImportResult:
  """Record ``cases`` (all by default) of ``case_files`` with jax ``version`` into
  ``store_root``; ``venvs`` is the folder of release environments (default: the machine's)."""
  python = _envs.ensure_venv(version, venvs)
  with tempfile.TemporaryDirectory(prefix=f"jaxport-staging-{version}-") as tmp:
    staging = Path(keep_staging) if keep_staging else Path(tmp) / "staging"
    run_recorder(python, staging, case_files, cases, platform, date)
    return import_staging(staging, GoldenStore(store_root))


def summary(result: ImportResult) -> str:
  """One line per entry written, already present or skipped (with why)."""
  lines = [f"wrote   {e.entry_id}" for e in result.written]
  lines += [f"exists  {eid}" for eid in result.existing]
  lines += [f"skipped {case_id}: {why}" for case_id, why in sorted(result.skipped.items())]
  return "".join(f"{line}\n" for line in lines)
