"""The TensorFlow releases measured as consumers of jax artifacts, from ``tf_releases.json``.

Each release's ``XlaCallModule`` op takes a range of calling conventions and reads StableHLO up
to one version; the file beside this module keeps what was measured per release (the
environment the ``tf`` reader runs in checks its release's facts against it when it starts).
Its release set is the one ``--with-tf`` serves: any other is refused before an environment
is built.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._records import Strict
from jaxport.errors import ReleaseTableError
from jaxport.releases._version_text import parse_version

FORMAT_VERSION = 1
TF_TABLE_FILE = Path(__file__).with_name("tf_releases.json")
_FIX = "The table ships with jaxport: reinstall jaxport to restore it."


class TfReleaseError(ReleaseTableError):
  """A TensorFlow release the table does not serve, or a malformed table."""


_S = Strict.raising(TfReleaseError)


@dataclasses.dataclass(frozen=True)
class TfRelease:
  """What one TensorFlow release's ``XlaCallModule`` takes, as measured."""
  version: str
  calling_convention: tuple[int, int]   # lowest and highest accepted
  stablehlo: str                        # the StableHLO version it reads
  shardy_argument: bool                 # whether the op takes use_shardy_partitioner
  pythons: tuple[str, ...]              # Python minor versions it was measured on
  cost: Mapping[str, float]             # installed_gb, install_seconds, import_seconds

  @property
  def requirement(self) -> str:
    return f"tensorflow-cpu=={self.version}"

  def takes(self, calling_convention: int) -> bool:
    low, high = self.calling_convention
    return low <= calling_convention <= high

  def reads(self, stablehlo: str) -> bool:
    """Whether an artifact written for StableHLO ``stablehlo`` is no newer than this release."""
    return parse_version(stablehlo) <= parse_version(self.stablehlo)


def _release(value: Any, where: str) -> TfRelease:
  d = _S.record(TfRelease, {("version" if k == "tf" else k): v
                            for k, v in _S.obj(value, where).items()}, where)
  cc = _S.of(d["calling_convention"], list, f"{where}.calling_convention")
  if len(cc) != 2 or not all(isinstance(c, int) and not isinstance(c, bool) for c in cc) \
      or cc[0] > cc[1]:
    raise _S.fail(f"{where}.calling_convention", f"expected [lowest, highest], got {cc!r}")
  version = _S.of(d["version"], str, f"{where}.tf")
  stablehlo = _S.of(d["stablehlo"], str, f"{where}.stablehlo")
  for text, name in ((version, "tf"), (stablehlo, "stablehlo")):
    try:
      parse_version(text)
    except ValueError:
      raise _S.fail(f"{where}.{name}", f"expected a version, got {text!r}") from None
  cost = _S.obj(d["cost"], f"{where}.cost",
                required=("installed_gb", "install_seconds", "import_seconds"), optional=())
  return TfRelease(version, (cc[0], cc[1]), stablehlo,
                   _S.of(d["shardy_argument"], bool, f"{where}.shardy_argument"),
                   _S.strs(d["pythons"], f"{where}.pythons", nonempty=True),
                   {k: _S.number(v, f"{where}.cost.{k}") for k, v in cost.items()})


def read_tf_table(path: Path = TF_TABLE_FILE) -> tuple[TfRelease, ...]:
  """The releases of the table at ``path``, oldest first; :class:`TfReleaseError` naming the
  field that does not read."""
  data = _json.load_file(path, str(path), TfReleaseError, _FIX)
  d = _S.obj(data, str(path), required=("format_version", "about", "releases"), optional=())
  if d["format_version"] != FORMAT_VERSION:
    raise _S.fail(f"{path}: format_version", f"expected {FORMAT_VERSION}, got "
                  f"{d['format_version']!r}; {_FIX}")
  out = [_release(r, f"{path}: releases[{i}]")
         for i, r in enumerate(_S.of(d["releases"], list, f"{path}: releases"))]
  return tuple(sorted(out, key=lambda r: parse_version(r.version)))


@functools.lru_cache(maxsize=1)
def tf_releases() -> tuple[TfRelease, ...]:
  """The measured TensorFlow releases, oldest first."""
  return read_tf_table()


def tf_release(text: str, table: tuple[TfRelease, ...] | None = None) -> TfRelease:
  """The release ``text`` names: ``2.21.0``, or ``2.21`` for the newest measured ``2.21.x``.
  One the table does not hold is refused naming those it does."""
  table = tf_releases() if table is None else table
  exact = [r for r in table if r.version == text]
  minor = [r for r in table if r.version.split(".")[:2] == text.split(".")
           and text.count(".") == 1]
  found = exact or minor
  if not found:
    served = ", ".join(r.version for r in table)
    raise TfReleaseError(f"TensorFlow {text!r} is not a release jaxport serves: the tf reader "
                         f"runs the measured ones, {served} (a major.minor picks its newest)")
  return found[-1]
