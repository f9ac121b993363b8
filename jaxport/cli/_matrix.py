"""``jaxport matrix --releases A..B``: a project's entries under every release of a range.

Each cell is one ``jaxport replay --with-jax VERSION`` (one release, one shard of the store):
run here one after another, or written out with ``--plan`` as the cells of a CI job matrix
(``--json``: ``{"include": [...]}`` for a GitHub Actions ``strategy.matrix``), each cell one
job whose shard reports ``jaxport report merge`` joins per release. Releases before the oldest
jaxport runs on replay with their own ``jax.export`` and are not sharded.

``--producers`` asks another question of the same releases: every entry of the project's store
read by each release's own ``jax.export`` (never jaxport), tabulated producer x consumer
(:mod:`jaxport.multirelease._producers`).

``--tf-releases 2.19,2.21`` adds TensorFlow releases as consumers: a cell each that runs
``jaxport replay --with-tf VERSION``, or with ``--producers`` a column each of the matrix, its
cells weighed by the ``tf`` reader's judge (:mod:`jaxport.multirelease._tf_matrix`).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import shlex
import sys
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.cli import _harness_run, _with_jax, _with_tf
from jaxport.harness._judge._expectations import load_table
from jaxport.errors import JaxportError
from jaxport.multirelease._bisect import releases_in
from jaxport.multirelease import _matrix, _producers, _tf_matrix
from jaxport.multirelease._envs import PYTHON_311, python_need
from jaxport.multirelease._with_jax import runs_jaxport
from jaxport.releases._tf_table import TfRelease, TfReleaseError, tf_release

# The Python a CI job of a release sets up: the one the release installs on.
_CI_PYTHON = {PYTHON_311: "3.11"}
_NEWEST_CI_PYTHON = "3.13"


@json_record(Strict.raising(JaxportError))
@dataclasses.dataclass(frozen=True)
class Cell:
  """One job of the matrix: a release, a shard of the store (None: all of it), its report."""
  jax: str
  python: str
  shard: str | None
  report: str

  def argv(self, project: str) -> list[str]:
    """The ``jaxport`` arguments the cell runs."""
    cmd = ["replay", "--with-jax", self.jax, "--project", project, "--compat-report", self.report]
    return cmd + (["--", f"--compat-shard={self.shard}"] if self.shard else [])

  def command(self, project: str) -> str:
    """The command line the cell runs."""
    return shlex.join(["jaxport", *self.argv(project)])


@json_record(Strict.raising(JaxportError))
@dataclasses.dataclass(frozen=True)
class TfCell:
  """One job of the matrix that runs the ``tf`` reader of a TensorFlow release (of the whole
  store: ``shard`` is None, as the JSON of a jax cell without shards says)."""
  tf: str
  python: str
  report: str
  shard: str | None = None

  def argv(self, project: str) -> list[str]:
    """The ``jaxport`` arguments the cell runs."""
    return ["replay", "--with-tf", self.tf, "--project", project, "--compat-report", self.report]

  def command(self, project: str) -> str:
    """The command line the cell runs."""
    return shlex.join(["jaxport", *self.argv(project)])


def tf_releases_of(text: str | None) -> list[TfRelease]:
  """The TensorFlow releases ``--tf-releases`` names (``2.19,2.21``), each one the table serves;
  any other is refused naming the served ones."""
  if text is None:
    return []
  names = [t.strip() for t in text.split(",") if t.strip()]
  if not names:
    raise JaxportError(f"matrix --tf-releases {text!r}: name releases, e.g. 2.19,2.21")
  try:
    found = [tf_release(n) for n in names]
  except TfReleaseError as e:
    raise JaxportError(f"matrix --tf-releases: {e}") from None
  return [r for i, r in enumerate(found) if r.version not in {f.version for f in found[:i]}]


def tf_cells(releases: list[TfRelease], out: str) -> list[TfCell]:
  """A cell per TensorFlow release, on the newest Python it was measured on."""
  return [TfCell(r.version, max(r.pythons, key=lambda v: tuple(map(int, v.split(".")))),
                 f"{out}/tf-{r.version}.json") for r in releases]


def cells(versions: list[str], shards: int, out: str) -> list[Cell]:
  """The matrix's cells: each release, each shard of it where jaxport runs on the release."""
  if shards < 1:
    raise JaxportError(f"matrix --shards {shards}: expected a whole number of 1 or more")
  if not versions:
    raise JaxportError("matrix --releases: the range holds no installable release; name the "
                       "older release first, e.g. 0.11.0..0.12.0.1")
  found = []
  for v in versions:
    python = _CI_PYTHON.get(python_need(v), _NEWEST_CI_PYTHON)
    if shards == 1 or not runs_jaxport(v):
      found.append(Cell(v, python, None, f"{out}/jax-{v}.json"))
      continue
    found += [Cell(v, python, f"{i}/{shards}", f"{out}/jax-{v}-shard-{i}-of-{shards}.json")
              for i in range(1, shards + 1)]
  return found


def run(args, extra) -> int:
  if args.producers:
    return run_producers(args)
  producer_only = [f for f, given in (("--expected-releases", args.expected_releases),
                                      ("--current", args.current),
                                      ("--current-build-only", args.current_build_only),
                                      ("--today", args.today)) if given]
  if producer_only:
    raise JaxportError(f"matrix {' '.join(producer_only)}: only with --producers")
  tf = tf_releases_of(args.tf_releases)
  if args.releases is None and not tf:
    raise JaxportError("matrix: name the releases, --releases FIRST..LAST (e.g. 0.11.0..0.12.0.1)"
                       " or --tf-releases A,B")
  planned: list[Cell | TfCell] = []
  if args.releases is not None:
    planned += cells(releases_in(args.releases), args.shards, args.out)
  planned += tf_cells(tf, args.out)
  if args.plan:
    rows = [{**c.to_json(), "command": c.command(args.project)} for c in planned]
    if args.json:
      sys.stdout.write(json.dumps({"include": rows}) + "\n")
    else:
      sys.stdout.write("".join(f"{r['command']}\n" for r in rows))
    return 0
  project = _harness_run.project_dir(args.project)
  Path(args.out).mkdir(parents=True, exist_ok=True)
  verdicts = {}
  for cell in planned:
    name = (f"TensorFlow {cell.tf}" if isinstance(cell, TfCell)
            else f"jax {cell.jax}{f' shard {cell.shard}' if cell.shard else ''}")
    try:
      if isinstance(cell, TfCell):
        code = _with_tf.run_project(cell.tf, platform="cpu", report=cell.report, extra=[],
                                    project=str(project))
      else:
        extra = [f"--compat-shard={cell.shard}"] if cell.shard else []
        code = _with_jax.run_in("replay", version=cell.jax, platform="cpu", report=cell.report,
                                extra=extra, project=project)
      verdicts[name] = "passed" if code == 0 else f"failed (exit {code})"
    except JaxportError as e:  # this release cannot be set up here; the others still run
      verdicts[name] = f"not run: {e}"
  for name, verdict in verdicts.items():
    sys.stdout.write(f"{name}: {verdict}\n")
  return 0 if all(v == "passed" for v in verdicts.values()) else 1


def producer_consumers(args, config) -> dict[str, str]:
  """The consumer releases of ``--producers`` (version -> python), their environments built."""
  versions = releases_in(args.releases) if args.releases else []
  if args.expected_releases:
    if config.expectations is None:
      raise JaxportError("matrix --expected-releases: the project names no expected-status table "
                         "(jaxport_expectations); name the releases with --releases")
    versions += [v for v in load_table(config.expectations).releases if v not in versions]
  consumers = _producers.consumer_pythons(versions)
  if args.current:
    consumers[installed_jax_version()] = sys.executable
  if not consumers and not args.tf_releases:
    raise JaxportError("matrix --producers: name at least one consumer: --releases FIRST..LAST, "
                       "--expected-releases, --current or --tf-releases A,B")
  return consumers


def run_producers(args) -> int:
  """``matrix --producers``: the project's cpu entries under each release's own jax.export."""
  if args.plan or args.shards != 1:
    raise JaxportError("matrix --producers runs every release here, whole: leave out --plan and "
                       "--shards")
  try:
    today = datetime.date.fromisoformat(args.today) if args.today else datetime.date.today()
  except ValueError:
    raise JaxportError(f"matrix --today {args.today}: expected a date, YYYY-MM-DD") from None
  config = _harness_run.read_project(args.project, "matrix --producers")
  entry_ids = _producers.select_entries(config.store, "cpu", args.current_build_only)
  if not entry_ids:
    raise JaxportError(f"matrix --producers: no {'jaxport-recorded ' if args.current_build_only else ''}"
                       f"entries under {config.store / 'cpu'}; record some first")
  tf = tf_releases_of(args.tf_releases)
  measured = _producers.measure(producer_consumers(args, config), config.store, entry_ids, today,
                                effects=config.effect_files())
  _tf_matrix.add_tf_consumers(measured, config.store, entry_ids, tf)
  json_path, text_path = _matrix.write(measured, args.out)
  sys.stdout.write(text_path.read_text())
  sys.stdout.write(f"wrote {json_path}, {text_path} and {json_path.parent / 'matrix-summary.json'}\n")
  violations = [(p, c) for p in measured["producers"] for c, cell in measured["cells"][p].items()
                if _matrix.violates_policy(cell)]
  return 1 if violations else 0
