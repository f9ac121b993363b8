"""Which jax release first fails to load, run or reproduce a golden entry, by bisection.

The candidate consumers are the installable releases of jaxport's release table in a range
(both ends included), in version order. Each probe replays the entry with that release's own
``jax.export`` in its environment (:mod:`jaxport.multirelease._envs` builds it when missing;
``available_only`` keeps the releases already built, plus this interpreter's jax). Bisection
assumes that once a release breaks the entry later ones do too, and so probes
ceil(log2(n + 1)) releases, each the midpoint of those still in doubt. The answer names the last release that passed, the
first that failed, and that release's stage (deserialize, run, compare) and message.

A blob with its inputs and expected outputs (``np.savez`` positional arrays) becomes a
temporary golden entry first (:func:`entry_from_blob`). A range of one release checks that
release alone.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.multirelease import _envs
from jaxport._vocabulary import Status
from jaxport.harness._judge._release_runs import ReleaseRun, judge_row
from jaxport.multirelease._replay import replay_with
from jaxport.releases import parse_version, releases
from jaxport.upgrades import read_any_envelope
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.golden._signatures import signatures
from jaxport.golden._store import GoldenStore

logger = logging.getLogger(__name__)


class BisectError(JaxportError, ValueError):
  """A bisection that cannot start: an unknown range or entry, or too few releases."""


_record = json_record(Strict.raising(BisectError))


@_record
@dataclasses.dataclass(frozen=True)
class Probe:
  """One release's replay of the entry."""
  release: str
  status: Status        # the judge's status of the release replayer's row
  stage: str | None
  error: str | None

  @classmethod
  def of(cls, release: str, run: ReleaseRun) -> Probe:
    """The probe of ``release`` from the judge's outcome of its replayer row."""
    return cls(release, run.status, run.stage, run.error or (None if run.passed else run.detail))

  @property
  def ok(self) -> bool:
    """It loaded and ran there (and reproduced, unless the entry's checker is the project's
    own, which the release replayer does not have): the judge passed it."""
    return self.status is Status.PASS


@_record
@dataclasses.dataclass(frozen=True)
class Bisection:
  """The answer: the first failing release (None when every release passes) and the probes."""
  entry_id: EntryId
  releases: tuple[str, ...]
  last_good: str | None
  first_bad: Probe | None
  probes: tuple[Probe, ...]

  @property
  def ok(self) -> bool:
    """Every probed release loads, runs and reproduces the entry."""
    return self.first_bad is None

  def text(self, label: str | None = None) -> str:
    """The answer in lines; ``label`` names the subject (default: the entry id)."""
    label = label or str(self.entry_id)
    if len(self.releases) == 1:
      (p,) = self.probes
      verdict = (f"{p.status}: it loads, runs and reproduces its outputs" if p.ok
                 else f"{p.status} at {p.stage}: {p.error}")
      return f"{label}: checked under jax {p.release}: {verdict}\n"
    lines = [f"{label}: bisected over {len(self.releases)} releases "
             f"({self.releases[0]} .. {self.releases[-1]}), {len(self.probes)} probed"]
    for p in self.probes:
      lines.append(f"  jax {p.release}: {p.status}" + (f" at {p.stage}: {p.error}" if not p.ok else ""))
    if self.first_bad is None:
      lines.append("no break: every probed release loads, runs and reproduces the entry")
    elif self.last_good is None:
      lines.append(f"already broken at the first release, jax {self.first_bad.release}")
    else:
      b = self.first_bad
      lines.append(f"first break: jax {b.release} (last good: jax {self.last_good}); "
                   f"it fails at {b.stage}: {b.error}")
    return "\n".join(lines) + "\n"


def releases_in(spec: str) -> list[str]:
  """``"A..B"`` -> the installable releases of the release table from A to B inclusive, in
  version order."""
  lo, sep, hi = spec.partition("..")
  if not sep or not lo or not hi:
    raise BisectError(f"--releases {spec!r}: expected FIRST..LAST, e.g. 0.11.0..0.12.0.1")
  known = {f.version: f for f in releases()}
  for v in (lo, hi):
    if v not in known:
      raise BisectError(f"--releases {spec!r}: {v} is not a release of jaxport's release table "
                        f"(it knows {', '.join(known)})")
  first, last = parse_version(lo), parse_version(hi)
  found = [v for v, f in known.items() if f.installable and first <= parse_version(v) <= last]
  return sorted(found, key=parse_version)


def bisect(releases: list[str], probe: Callable[[str], Probe]) -> tuple[str | None, Probe | None,
                                                                      list[Probe]]:
  """(last good, first bad probe, probes in order) over ``releases``, probing ~log2(n) of them."""
  probes: dict[str, Probe] = {}

  def at(i: int) -> Probe:
    v = releases[i]
    if v not in probes:
      probes[v] = probe(v)
      logger.info("jax %s: %s", v, probes[v].status)
    return probes[v]

  # The first failing index lies in [lo, hi] (hi == n: none fails); each probe halves that
  # range, so n releases take ceil(log2(n + 1)) probes, the ends included only when reached.
  lo, hi = 0, len(releases)
  while lo < hi:
    mid = (lo + hi) // 2
    if at(mid).ok:
      lo = mid + 1
    else:
      hi = mid
  ordered = [probes[v] for v in releases if v in probes]
  # Both sides of the answer were probed: lo - 1 passed (lo > 0), lo failed (lo < n).
  return (releases[lo - 1] if lo else None, at(lo) if lo < len(releases) else None, ordered)


def consumers(versions: list[str], *, available_only: bool, venvs: Path | None) -> dict[str, str]:
  """Release -> python that replays with it (this interpreter for its own jax); with
  ``available_only``, only the releases whose environment is built already."""
  current = installed_jax_version()
  out = {}
  for v in versions:
    if v == current:
      out[v] = sys.executable
    elif not available_only:
      out[v] = str(_envs.ensure_venv(v, venvs))
    elif _envs.is_ready(v, venvs):
      out[v] = str(_envs.venv_python(v, venvs))
  return out


def run_bisect(entry_id: EntryId, versions: list[str], *, store: Path, available_only: bool = False,
               venvs: Path | None = None, effects: Mapping[str, str] | None = None) -> Bisection:
  """Bisect ``entry_id`` of ``store`` over ``versions``, building the environments it probes
  (in ``venvs``, default: the machine's cache) unless ``available_only``; one release is
  checked alone."""
  manifest = store / str(require_entry_id(entry_id, "run_bisect")) / "manifest.json"
  if not manifest.is_file():
    raise BisectError(f"no golden entry {str(entry_id)!r} under {store} (expected "
                      f"{manifest}); name an entry id of that store "
                      "or the entry's directory")
  if available_only:
    built = consumers(versions, available_only=True, venvs=venvs)
    versions = [v for v in versions if v in built]
  if not versions:
    raise BisectError("no release to check in the range; widen --releases, or drop "
                      "--available-only to build their environments")

  def probe(version: str) -> Probe:
    python = consumers([version], available_only=False, venvs=venvs)[version]
    with tempfile.TemporaryDirectory(prefix=f"jaxport-bisect-{version}-") as tmp:
      row = replay_with(python, store, [entry_id], Path(tmp), effects=effects)[0]
    run = judge_row(row, version)
    if run.status is None:
      raise BisectError(f"{entry_id} cannot be bisected: jax {version}'s replayer cannot replay "
                        f"it ({run.detail})")
    return Probe.of(version, run)

  last_good, first_bad, probes = bisect(versions, probe)
  return Bisection(entry_id, tuple(versions), last_good, first_bad, tuple(probes))


def entry_from_blob(blob: Path, inputs: Path, expected: Path, store: Path, *, rtol: float,
                    atol: float) -> EntryId:
  """Write ``blob`` with its inputs and outputs as a golden entry of ``store``; its id."""
  data = blob.read_bytes()
  exp, _ = read_any_envelope(data)  # any age: the releases it is bisected over may read it
  unknown = Producer(jax=None, jaxlib=None, jaxport=None, numpy=None, scipy=None, python=None)
  manifest = Manifest(
      case_id="blob", family="bisect", platform=exp.platforms[0], record_date=datetime.date.today(),
      producer=unknown, calling_convention_version=exp.calling_convention_version,
      serialization_version=0, custom_call_targets=signatures(exp.mlir_module_serialized),
      polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison("allclose", rtol, atol))
  entry = GoldenStore(store, scratch=True).write_entry(
      manifest, data, load_arrays(inputs), load_arrays(expected), exp.mlir_module())
  return entry.entry_id


def load_arrays(path: Path) -> list[np.ndarray]:
  """The arrays ``arr_0``, ``arr_1``... of an npz file, never unpickling."""
  try:
    with np.load(path, allow_pickle=False) as npz:
      names = list(npz.files)
      want = [f"arr_{i}" for i in range(len(names))]
      if sorted(names) != sorted(want):
        raise GoldenDataError(f"{path}: expected members {want}, got {names}.")
      return [npz[n] for n in want]
  except ValueError as e:
    raise GoldenDataError(f"{path}: cannot be read without unpickling ({e}).") from None
