"""``--compat-jax-corpus``: jax's own back-compat corpus, imported for one run and replayed.

The installed jax wheel ships the golden data JAX itself keeps
(``jax/_src/internal_test_util/export_back_compat_test_data/``). A run with
``--compat-jax-corpus`` imports it with ``jaxport import-jax-testdata`` into a
temporary store, with this run's platform as the host (datasets of other
platforms become lowering-only entries), and replays that store instead of
``compat_data/``. Nothing of JAX's is copied into the repository, and each jax
the nightly job installs is checked against the data that jax ships.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import tempfile
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version

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

  def to_json(self) -> dict:
    return {"source": self.source, "jax": self.jax_version, "imported": self.imported,
            "duplicates": list(self.duplicates), "skipped": list(self.skipped), "failed": list(self.failed)}


def corpus_dir() -> Path:
  """The corpus directory of the installed jax (it may be missing from a stripped install)."""
  spec = importlib.util.find_spec("jax")
  if spec is None or spec.origin is None:
    raise FileNotFoundError("jax is not installed, so there is no back-compat corpus to import")
  return Path(spec.origin).resolve().parent.joinpath(*CORPUS_PARTS)


def import_corpus(host_platform: str) -> CorpusImport:
  """Import the installed jax's corpus into a new temporary store; the caller removes ``root``."""
  from jaxport.corpus import _import  # the import runs jax; the plugin's side does not

  source = corpus_dir()
  if not source.is_dir():
    raise FileNotFoundError(
        f"jax {installed_jax_version()} ships no back-compat corpus at {source}; install a "
        "full jax wheel or run without --compat-jax-corpus")
  root = Path(tempfile.mkdtemp(prefix="jaxport-jax-corpus-"))
  try:
    result = _import.run_import([str(source)], str(root), host_platform=host_platform)
  except BaseException:
    shutil.rmtree(root, ignore_errors=True)
    raise
  return CorpusImport(source=str(source), jax_version=installed_jax_version(), root=root,
                      imported=len(result["imported"]), duplicates=tuple(result["exists"]),
                      skipped=tuple(result["skipped"]), failed=tuple(result["failed"]))
