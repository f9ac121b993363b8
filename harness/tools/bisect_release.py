"""Find the first jax release that no longer loads, runs or reproduces a golden entry.

    python harness/tools/bisect_release.py cpu/lapack_trsm/release_triangular_solve_f32/2026-11-29_jax-0.5.3 \\
        --releases 0.5.3..0.10.2 [--available-only] [--json]
    python harness/tools/bisect_release.py --blob f.bin --inputs in.npz --expected out.npz \\
        --releases 0.4.30..0.10.2

A blob with its inputs and expected outputs (``np.savez`` positional arrays)
becomes a temporary golden entry first, compared with ``allclose`` at the
given tolerances.

The candidate consumers are the releases of the release table (``RELEASE_DATES``) in the
range (both ends included), in version order. Each probe replays the entry
with ``_replayer.py`` in that release's venv (``_venvs.ensure_venv`` creates
it when missing; ``--available-only`` keeps the releases whose venv is ready,
plus this interpreter's jax); the jax of this interpreter replays in-process
tooling the same way. Bisection assumes that once a release breaks the entry,
later ones do too, and so probes about log2(n) releases: the two ends, then
midpoints. The answer names the last release that passed, the first that
failed, and that release's stage (deserialize, run, compare) and message.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata as md
import json
import logging
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _venvs
from jaxport.harness import _releases  # noqa: E402
from harness.tools.replay_with_jax import replay_with  # noqa: E402

logger = logging.getLogger(__name__)
PASS = "pass"


@dataclasses.dataclass(frozen=True)
class Probe:
  """One release's replay of the entry."""
  release: str
  outcome: str          # "pass", "fail", "error", "crash", "skip"
  stage: str | None
  error: str | None

  @property
  def ok(self) -> bool:
    return self.outcome == PASS


@dataclasses.dataclass(frozen=True)
class Bisection:
  """The answer: the first failing release (None when every release passes) and the probes."""
  entry_id: str
  releases: tuple[str, ...]
  last_good: str | None
  first_bad: Probe | None
  probes: tuple[Probe, ...]

  def to_json(self) -> dict:
    return {"entry_id": self.entry_id, "releases": list(self.releases),
            "last_good": self.last_good,
            "first_bad": None if self.first_bad is None else dataclasses.asdict(self.first_bad),
            "probes": [dataclasses.asdict(p) for p in self.probes]}

  def text(self) -> str:
    lines = [f"{self.entry_id}: bisected over {len(self.releases)} releases "
             f"({self.releases[0]} .. {self.releases[-1]}), {len(self.probes)} probed"]
    for p in self.probes:
      lines.append(f"  jax {p.release}: {p.outcome}" + (f" at {p.stage}: {p.error}" if not p.ok else ""))
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
  """``"A..B"`` -> the known releases from A to B inclusive, in version order."""
  lo, sep, hi = spec.partition("..")
  if not sep or not lo or not hi:
    raise ValueError(f"--releases {spec!r}: expected FIRST..LAST, e.g. 0.5.3..0.10.2")
  first, last = _releases.parse_version(lo), _releases.parse_version(hi)
  for v in (lo, hi):
    _releases.release_date(v)  # a clear error for an unknown release
  found = [v for v in _releases.RELEASE_DATES if first <= _releases.parse_version(v) <= last]
  return sorted(found, key=_releases.parse_version)


def bisect(releases: list[str], probe: Callable[[str], Probe]) -> tuple[str | None, Probe | None,
                                                                      list[Probe]]:
  """(last good, first bad probe, probes in order) over ``releases``, probing ~log2(n) of them."""
  probes: dict[str, Probe] = {}

  def at(i: int) -> Probe:
    v = releases[i]
    if v not in probes:
      probes[v] = probe(v)
      logger.info("jax %s: %s", v, probes[v].outcome)
    return probes[v]

  ordered = lambda: [probes[v] for v in releases if v in probes]  # noqa: E731
  if not at(0).ok:
    return None, at(0), ordered()
  if at(len(releases) - 1).ok:
    return releases[-1], None, ordered()
  good, bad = 0, len(releases) - 1
  while bad - good > 1:
    mid = (good + bad) // 2
    if at(mid).ok:
      good = mid
    else:
      bad = mid
  return releases[good], at(bad), ordered()


def consumers(releases: list[str], *, available_only: bool, venvs: Path | None) -> dict[str, str]:
  """Release -> python that replays with it (this interpreter for its own jax)."""
  current = md.version("jax")
  out = {}
  for v in releases:
    if v == current:
      out[v] = sys.executable
    elif not available_only:
      out[v] = str(_venvs.ensure_venv(v, venvs))
    elif _venvs.is_ready(v, venvs):
      out[v] = str(_venvs.venv_python(v, venvs))
  return out


def run_bisect(entry_id: str, releases: list[str], *, store: Path, available_only: bool = False,
               venvs: Path | None = None) -> Bisection:
  """Bisect ``entry_id`` of ``store`` over ``releases``."""
  if not (store / entry_id / "manifest.json").is_file():
    raise ValueError(f"no golden entry {entry_id!r} under {store} (expected "
                     f"{store / entry_id / 'manifest.json'})")
  pythons: dict[str, str] = {}
  if not available_only:
    pythons = consumers(releases, available_only=False, venvs=venvs)
  else:
    pythons = consumers(releases, available_only=True, venvs=venvs)
    releases = [v for v in releases if v in pythons]
  if len(releases) < 2:
    raise ValueError(f"fewer than two releases to bisect over ({releases}); build venvs with "
                     "python harness/tools/record_with_jax.py or drop --available-only")

  def probe(version: str) -> Probe:
    python = pythons.get(version) or str(_venvs.ensure_venv(version, venvs))
    with tempfile.TemporaryDirectory(prefix=f"jaxport-bisect-{version}-") as tmp:
      row = replay_with(python, store, [entry_id], Path(tmp))[0]
    return Probe(version, row.get("outcome", "error"), row.get("stage"), row.get("error"))

  last_good, first_bad, probes = bisect(releases, probe)
  return Bisection(entry_id, tuple(releases), last_good, first_bad, tuple(probes))


def entry_from_blob(blob: Path, inputs: Path, expected: Path, store: Path, *, rtol: float,
                    atol: float) -> str:
  """Write ``blob`` with its inputs and outputs as a golden entry of ``store``; its id."""
  from jaxport.upgrades import read_any_envelope
  from jaxport.golden._manifest import Comparison, Manifest, Producer
  from jaxport.golden._signatures import signatures
  from jaxport.golden._store import GoldenStore
  from harness.tools.staging import load_arrays
  data = blob.read_bytes()
  exp, _ = read_any_envelope(data)  # any age: the releases it is bisected over may read it
  unknown = Producer(jax=None, jaxlib=None, jaxport=None, numpy=None, scipy=None, python=None)
  manifest = Manifest(
      case_id="blob", family="bisect", platform=exp.platforms[0], record_date=datetime.date.today(),
      producer=unknown, calling_convention_version=exp.calling_convention_version,
      serialization_version=0, custom_call_targets=signatures(exp.mlir_module_serialized),
      polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison("allclose", rtol, atol))
  entry = GoldenStore(store).write_entry(manifest, data, load_arrays(inputs), load_arrays(expected),
                                         exp.mlir_module())
  return entry.entry_id


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("entry", nargs="?", default=None,
                      help="entry id (platform/family/case/date_producer) or its directory")
  parser.add_argument("--blob", default=None, help="a serialized Exported instead of an entry")
  parser.add_argument("--inputs", default=None, help="with --blob: npz of the inputs (arr_0, ...)")
  parser.add_argument("--expected", default=None, help="with --blob: npz of the expected outputs")
  parser.add_argument("--rtol", type=float, default=1e-5, help="with --blob (default 1e-5)")
  parser.add_argument("--atol", type=float, default=1e-5, help="with --blob (default 1e-5)")
  parser.add_argument("--releases", required=True, help="FIRST..LAST, e.g. 0.5.3..0.10.2")
  parser.add_argument("--store", default=str(_venvs.REPO_ROOT / "compat_data"))
  parser.add_argument("--venvs", default=None, help="folder of release venvs (.jax-venvs)")
  parser.add_argument("--available-only", action="store_true",
                      help="only releases whose venv is already built (and this jax)")
  parser.add_argument("--json", action="store_true", help="print JSON")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
  if (args.entry is None) == (args.blob is None):
    parser.error("name either an ENTRY or --blob (with --inputs and --expected)")
  if args.blob is not None and (args.inputs is None or args.expected is None):
    parser.error("--blob needs --inputs and --expected")
  store = Path(args.store).resolve()
  with tempfile.TemporaryDirectory(prefix="jaxport-bisect-store-") as tmp:
    try:
      if args.blob is not None:
        store = Path(tmp)
        entry_id = entry_from_blob(Path(args.blob), Path(args.inputs), Path(args.expected), store,
                                   rtol=args.rtol, atol=args.atol)
      elif Path(args.entry).is_dir() and (Path(args.entry) / "manifest.json").is_file():
        entry = Path(args.entry).resolve()
        entry_id, store = "/".join(entry.parts[-4:]), entry.parents[3]
      else:
        entry_id = args.entry.strip("/")
      releases = releases_in(args.releases)
      result = run_bisect(entry_id, releases, store=store, available_only=args.available_only,
                          venvs=Path(args.venvs) if args.venvs else None)
    except (ValueError, OSError, _venvs.VenvError) as e:
      print(f"bisect: error: {e}", file=sys.stderr)
      return 2
  print(json.dumps(result.to_json(), indent=2) if args.json else result.text(), end="\n" if args.json else "")
  return 0


if __name__ == "__main__":
  sys.exit(main())
