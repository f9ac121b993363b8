"""``--compat-jax-corpus``: jax's own back-compat corpus, imported for one run and replayed.

The installed jax wheel ships the golden data JAX itself keeps
(``jax/_src/internal_test_util/export_back_compat_test_data/``). A run with
``--compat-jax-corpus`` imports it with ``jaxport import-jax-testdata`` into a
temporary store and replays that store instead of ``compat_data/``. A CPU run
imports every platform's datasets, with the CPU as the host (the others become
lowering-only entries, checked without running); a run on an accelerator imports
only that platform's, since the CPU run checks the rest and device time is
scarce. The import runs in a child process held to the CPU: it imports jax,
which pytest's process never does, and it must not open an accelerator that the
run's worker needs. Nothing of JAX's is copied into the repository, and each jax
the nightly job installs is checked against the data that jax ships.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.errors import CorpusImportError
from jaxport.harness._devices import worker_environment
from jaxport.report._sections import CorpusImport as ReportedImport
from jaxport._platforms import is_host

# How long the import's child process may take (it parses each artifact under its own limit).
IMPORT_TIMEOUT_S = 900
# The command line of the child: jaxport's CLI, whose package has no ``__main__``.
_CLI = "import sys; from jaxport.cli import main; sys.exit(main(sys.argv[1:]))"

CORPUS_PARTS = ("_src", "internal_test_util", "export_back_compat_test_data")


@dataclasses.dataclass(frozen=True)
class CorpusImport:
  """Where the corpus came from, the temporary store it was imported into, and what was left out.

  ``duplicates``: datasets identical to one already imported (same case, date and content).
  """

  source: str
  jax_version: str
  root: Path
  imported: int
  duplicates: tuple[str, ...]
  skipped: tuple[str, ...]
  failed: tuple[str, ...]

  def report_section(self) -> ReportedImport:
    """The import as the report's ``jax_corpus`` section lists it (the store's path is the
    run's own)."""
    return ReportedImport(source=self.source, jax=self.jax_version, imported=self.imported,
                          duplicates=self.duplicates, skipped=self.skipped, failed=self.failed)


def corpus_dir() -> Path:
  """The corpus directory of the installed jax (it may be missing from a stripped install)."""
  spec = importlib.util.find_spec("jax")
  if spec is None or spec.origin is None:
    raise FileNotFoundError("jax is not installed, so there is no back-compat corpus to import")
  return Path(spec.origin).resolve().parent.joinpath(*CORPUS_PARTS)


def import_corpus(host_platform: str) -> CorpusImport:
  """Import the installed jax's corpus (on an accelerator, only its own platform's datasets)
  into a new temporary store, in a child process held to the CPU; the caller removes
  ``root``. ``CorpusImportError`` naming why where it cannot."""
  try:
    source = corpus_dir()
  except FileNotFoundError as e:
    raise CorpusImportError(f"{e}; install jax, or run without --compat-jax-corpus") from None
  if not source.is_dir():
    raise CorpusImportError(
        f"jax {installed_jax_version()} ships no back-compat corpus at {source}; install a "
        "full jax wheel or run without --compat-jax-corpus")
  root = Path(tempfile.mkdtemp(prefix="jaxport-jax-corpus-"))
  only = [] if is_host(host_platform) else ["--platform", host_platform]
  command = [sys.executable, "-c", _CLI, "import-jax-testdata", str(source), "--out", str(root),
             "--host-platform", host_platform, *only, "--json", "--quiet"]
  try:
    done = subprocess.run(command, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S,
                          env=worker_environment("cpu", dict(os.environ)), check=False)
    result = json.loads(done.stdout) if done.returncode == 0 else None
    if not isinstance(result, dict) or not all(
        isinstance(result.get(k), list) for k in ("imported", "exists", "skipped", "failed")):
      raise CorpusImportError(
          f"importing jax's corpus from {source} failed (exit {done.returncode}): "
          f"{(done.stderr or done.stdout).strip()[-2000:]}")
  except (subprocess.TimeoutExpired, ValueError) as e:
    shutil.rmtree(root, ignore_errors=True)
    raise CorpusImportError(f"importing jax's corpus from {source} failed: {e}") from None
  except BaseException:
    shutil.rmtree(root, ignore_errors=True)
    raise
  return CorpusImport(source=str(source), jax_version=installed_jax_version(), root=root,
                      imported=len(result["imported"]), duplicates=tuple(result["exists"]),
                      skipped=tuple(result["skipped"]), failed=tuple(result["failed"]))
