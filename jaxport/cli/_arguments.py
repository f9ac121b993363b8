"""The ``jaxport`` command line's grammar: every command, its arguments and their checks.

Only the standard library and the modules that name jaxport's settings, platforms, limits and
releases are imported here, none of which loads jax: a command that needs no jax (``record``,
``replay``, ``prune``, ``report``) starts without it, and ``--help`` and a usage error come
at once. What each command does lives in its own module, which ``_main`` imports when the
command runs.
"""

from __future__ import annotations

import argparse
import functools
import math
from typing import Any

from jaxport import _limits
from jaxport._jaxcompat._version import MIN_JAX, distribution_version
from jaxport._vocabulary import ANY_PLATFORM, PLATFORMS
from jaxport.cli import _with_tf
from jaxport.harness._controller import _settings
from jaxport.releases import releases

# The commands whose names other modules spell.
IMPORT_ARTIFACTS = "import-artifacts"
REPORT = "report"
# ``report render --markdown``'s name for standard output.
STDOUT = "-"
# The options of the commands whose native reads run in the module parser child.
TIMEOUT_OPTION = "--parse-timeout"
MEMORY_OPTION = "--parse-memory-mb"


def _non_negative(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    value = -1
  if value < 0:
    raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
  return value


def _installable_release(text: str) -> str:
  """A jax release the release table lists as installable (what ``--with-jax`` builds a venv
  for); anything else is refused naming them, before any venv is made."""
  known = [f.version for f in releases() if f.installable]
  if text not in known:
    raise argparse.ArgumentTypeError(f"{text!r} is not a jax release jaxport knows how to "
                                     f"install; one of {', '.join(known)}")
  return text


def _seconds(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = math.nan
  if not (math.isfinite(value) and value > 0):
    raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
  return value


# Bounds of --parse-memory-mb: below the lower one the child cannot even import jax.
_MIN_MEMORY_MB, _MAX_MEMORY_MB = 64, 2**30


def _megabytes(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    value = -1
  if not _MIN_MEMORY_MB <= value <= _MAX_MEMORY_MB:
    raise argparse.ArgumentTypeError(
        f"expected a whole number of MiB from {_MIN_MEMORY_MB} to {_MAX_MEMORY_MB}, got {text!r}")
  return value


def parse_limit_options(p: Any) -> None:
  """The options of a command whose native reads run in the module parser child."""
  p.add_argument(TIMEOUT_OPTION, dest="parse_timeout", type=_seconds, default=None,
                 metavar="SECONDS",
                 help="time the module parser may spend on one artifact before it is killed and "
                      "the artifact reported as timed out (default "
                      f"jaxport._limits.MODULE_PARSE_TIMEOUT_S = {_limits.MODULE_PARSE_TIMEOUT_S:g})")
  p.add_argument(MEMORY_OPTION, dest="parse_memory_mb", type=_megabytes, default=None,
                 metavar="MB",
                 help="resident memory the module parser may reach before it is killed and the "
                      "artifact reported (default jaxport._limits.MAX_PARSER_RSS_BYTES = "
                      f"{_limits.MAX_PARSER_RSS_BYTES // 2**20} MiB)")


def _dims(text: str) -> tuple[str, int]:
  name, sep, value = text.partition("=")
  if not sep or not name.isidentifier() or not value.isdigit() or int(value) < 1:
    raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=SIZE, a dimension name and a "
                                     "positive size, e.g. b=4")
  return name, int(value)


def build_parser() -> argparse.ArgumentParser:
  """The ``jaxport`` parser: every command and its arguments."""
  parser = argparse.ArgumentParser(
      prog="jaxport", description="Work with serialized JAX programs and jaxport's golden data.",
      epilog="Exit status: 0 ok, 1 problems found, 2 usage error or unreadable input, "
             "130 interrupted.")
  parser.add_argument("--version", action="version", version=f"jaxport {_version()}",
                      help="print jaxport's version (and the jax it runs on) and exit")
  common = argparse.ArgumentParser(add_help=False)
  common.add_argument("-v", "--verbose", action="store_true", help="more progress detail on stderr")
  common.add_argument("-q", "--quiet", action="store_true", help="only warnings on stderr")
  sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
  add = functools.partial(sub.add_parser, parents=[common])

  p = add("audit", help="custom-call stability, signature drift and expiry of artifacts",
                     description="Audit serialized artifacts: a blob, a directory of *.bin blobs, "
                                 "a golden entry, or a golden store (compat_data); with --project "
                                 "and no PATH, the project's store.")
  p.add_argument("paths", nargs="*", metavar="PATH")
  _add_project(p, "audit its store when no PATH is given, re-lower its case modules "
                  "(jaxport_cases, imported from the project's root and pytest pythonpath, as "
                  "the harness does) and count its jaxport_stable_targets as stable")
  p.add_argument("--window-days", **_settings.command_line_option("window_days", "--window-days"))
  p.add_argument("--today", **_settings.command_line_option("today", "--today"))
  p.add_argument("--cases", action="append", default=None, metavar="MODULE",
                 help="re-lower the cases of this case module (repeatable) to check signature "
                      "drift; this imports and runs the project's code, which audit never does "
                      "otherwise; the module must be importable (installed or on PYTHONPATH; "
                      "with --project, also from the project's paths); adds to the project's")
  p.add_argument("--run", action="store_true",
                 help="also run the artifacts with sample inputs at hand (a store entry's, or "
                      "NAME.inputs.npz and NAME.expected.npz beside NAME.bin) with the installed "
                      "jax, in a process of their own, and judge their outputs")
  p.add_argument("--no-drift", action="store_true",
                 help="do not re-lower cases to compare custom-call signatures")
  _stable_targets_option(p, "they count as stable besides jaxport's table (and the "
                            "--project's jaxport_stable_targets), and the project registers them")
  p.add_argument("--compat-strict", dest="strict",
                 **_settings.command_line_option("strict", "--compat-strict"))
  p.add_argument("--json", action="store_true", help="print JSON")
  parse_limit_options(p)

  p = add("inspect", help="versions, platforms, shapes, targets, effects, shardings",
                     description="Describe a serialized Exported: a blob file, a golden entry "
                                 "directory, or an entry id under --root.")
  p.add_argument("artifact", metavar="BLOB_OR_ENTRY")
  p.add_argument("--root", default=None,
                 help="golden store for entry ids (default: the jaxport_store of --project, "
                      "else compat_data)")
  p.add_argument("--mlir", action="store_true", help="also print the StableHLO text")
  _stable_targets_option(p, "the project registers them itself, so the releases the artifact "
                            "runs on are not limited by them")
  _add_project(p, "entry ids are looked up in its jaxport_store, its case modules are "
                  "imported (they register its pytree types; this runs the project's code), "
                  "its jaxport_stable_targets count as with --stable-targets, and what its "
                  "replays under other releases measured for the entry takes precedence in "
                  "the releases it runs on")
  p.add_argument("--json", action="store_true", help="print JSON")
  parse_limit_options(p)

  p = add("import-jax-testdata", help="convert jax's golden Python files into entries",
                     description="Read jax's back-compat test data files without executing them "
                                 "and write one golden entry per dataset.")
  p.add_argument("sources", nargs="+", metavar="SRC", help=".py files or directories of them")
  p.add_argument("--out", required=True, help="golden store to write (e.g. compat_data)")
  p.add_argument("--platform", choices=PLATFORMS, default=None, help="only datasets of this platform")
  p.add_argument("--mode", default=None,
                 help="checker name for every manifest (default: chosen per dataset from its "
                      "family and custom-call targets)")
  p.add_argument("--host-platform", choices=PLATFORMS, default=None,
                 help="the platform that will replay the store: other platforms' datasets become "
                      "lowering-only entries under it (default: each dataset under its own platform)")
  _tolerance_options(p)
  p.add_argument("--json", action="store_true", help="print JSON")
  parse_limit_options(p)
  _add_import_artifacts(add)

  p = add("prune", help="remove golden entries: expired, superseded, misdated or of one case "
                        "(dry run unless --yes)")
  p.add_argument("--older-than-days", type=_non_negative, default=None, metavar="DAYS",
                 help="entries recorded more than DAYS days before --today")
  p.add_argument("--case", action="append", default=None, metavar="CASE_ID",
                 help="only entries of this case (repeatable); alone, every entry of it (a case "
                      "the project no longer registers)")
  p.add_argument("--dated-in-future", action="store_true",
                 help="also remove entries whose record date is after --today (a wrong date: "
                      "they would never expire)")
  p.add_argument("--superseded", action="store_true",
                 help="also remove entries that have a newer entry of the same case by the same "
                      "jax release (what --compat-update leaves behind)")
  p.add_argument("--yes", action="store_true", help="really remove them")
  p.add_argument("--root", default=None,
                 help="golden store (default: the --project's jaxport_store, else compat_data)")
  _add_project(p, "prune its store (jaxport_store) unless --root is given")
  p.add_argument("--today", **_settings.command_line_option("today", "--today"))
  p.add_argument("--json", action="store_true", help="print JSON")

  for name, text in (("record", "record golden entries: pytest --compat-only --compat-record"),
                     ("replay", "replay golden entries: pytest --compat-only")):
    p = add(name, help=text, description=text + ", in the project's directory; other "
            "arguments go to pytest.")
    platform = _settings.FIELDS_BY_NAME["platform"]
    p.add_argument("--platform", choices=platform.choices, default=platform.default,
                   help=f"{platform.flag}: {platform.help_text()}")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="the project whose pytest configuration opts into the harness "
                        "(default: the working directory)")
    report = _settings.FIELDS_BY_NAME["report"]
    p.add_argument(report.flag, default=None, metavar="PATH", help=report.help_text())
    p.add_argument("--with-jax", default=None, metavar="VERSION", type=_installable_release,
                   help=f"{name} with another jax release, in an environment of its own that "
                        "jaxport builds and caches on this machine (with jaxport, pytest and the "
                        f"project's requirements from jax {MIN_JAX} on; replay with an older "
                        "release uses that release's own jax.export)")
    p.add_argument("--with-tf", default=None, metavar="VERSION", type=_with_tf.served_release,
                   help="replay with a TensorFlow release's XlaCallModule op alone (how TF "
                        "Serving runs a jax artifact), in an environment of its own that "
                        "jaxport builds and caches; a refused or differing entry fails")
  _add_report(sub, common)
  _add_upgrade(add)
  _add_bisect(add)
  _add_matrix(add)
  return parser


def _tolerance_options(p: argparse.ArgumentParser) -> None:
  """The options of the commands that write entries, overriding their dtype-based tolerances."""
  p.add_argument("--rtol", type=float, default=None, help="override the dtype-based rtol")
  p.add_argument("--atol", type=float, default=None, help="override the dtype-based atol")


def _add_project(p: argparse.ArgumentParser, what: str) -> None:
  p.add_argument("--project", default=None, metavar="DIR",
                 help="the project whose pytest configuration opts into the harness "
                      f"(pyproject.toml, pytest.ini, setup.cfg or tox.ini, read as pytest reads "
                      f"it): {what}")


def _stable_targets_option(p: argparse.ArgumentParser, meaning: str) -> None:
  p.add_argument("--stable-targets", default=None, metavar="FILE",
                 help="JSON file of the custom-call targets the project guarantees "
                      f'({{"cpu": ["my_target"], "{ANY_PLATFORM}": [...]}}); {meaning}')


def _version() -> str:
  versions = {d: _dist_version(d) for d in ("jaxport", "jax", "jaxlib")}
  return f"{versions['jaxport']} (jax {versions['jax']}, jaxlib {versions['jaxlib']})"


def _dist_version(dist: str) -> str:
  return distribution_version(dist) or "not installed"


def _add_import_artifacts(add: Any) -> None:
  p = add(IMPORT_ARTIFACTS, help="import the jax.export artifacts a project ships as golden entries",
          description="Write one golden entry per blob (NAME.bin, the bytes "
                      "Exported.serialize() wrote), its bytes kept as they are, with the "
                      "inputs and outputs of NAME.inputs.npz and NAME.expected.npz beside it "
                      "(np.savez(f, *leaves)); without them, inputs are made from the input "
                      "avals and outputs computed by the installed jax (docs/downstream.md).")
  p.add_argument("paths", nargs="+", metavar="PATH", help="a blob, or a folder of them (*.bin)")
  p.add_argument("--store", default=None, metavar="DIR", help="the golden store to write")
  p.add_argument("--project", default=None, metavar="DIR",
                 help="write into the jaxport_store of the project at DIR")
  p.add_argument("--family", default=None,
                 help="the family of every entry (default: each blob's folder name)")
  p.add_argument("--dims", type=_dims, action="append", default=[], metavar="NAME=SIZE",
                 help="the size of a symbolic dimension, for blobs without NAME.inputs.npz "
                      "(repeat for each)")
  p.add_argument("--host-platform", choices=PLATFORMS, default="cpu",
                 help="the platform that replays the store (default cpu): a blob exported "
                      "for others becomes a lowering-only entry, checked without running")
  _tolerance_options(p)
  p.add_argument("--json", action="store_true", help="print JSON")
  parse_limit_options(p)


def import_artifacts_usage_error(args: Any) -> str | None:
  """What is wrong with the options, for the parser's usage error (None: nothing)."""
  if (args.store is None) == (args.project is None):
    return "name the store to write: either --store DIR or --project DIR (not both)"
  return None


def _add_report(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
  """Register ``report`` and its two actions on the ``jaxport`` parser."""
  # -v/-q belong to the actions (``jaxport report render -q``), so only they take ``common``.
  p = sub.add_parser(REPORT, help="merge shard reports; render reports as HTML and Markdown",
                     description="Work with the harness's JSON compatibility reports "
                                 "(pytest --compat-report=RUN.json).")
  actions = p.add_subparsers(dest="report_action", required=True, metavar="ACTION")
  m = actions.add_parser("merge", parents=[common], help="combine the reports of a run's shards",
                         description="Combine the reports of disjoint shards of one harness run "
                                     "into the report of the whole run.")
  m.add_argument("shards", nargs="+", metavar="SHARD.json")
  m.add_argument("-o", "--output", required=True, metavar="RUN.json", help="the merged report")
  m.add_argument("--project", default=None, metavar="DIR",
                 help="the project the shards ran (its pytest configuration, as jaxport audit "
                      "--project reads it): run the coverage, tripwire and missing-case checks "
                      "on the merged run against its store and case modules; the shards must "
                      "be exactly 1/N..N/N of one run")
  m.add_argument("--store", default=None, metavar="DIR",
                 help="with --project: the golden store the shards replayed (default: the "
                      "project's jaxport_store)")
  r = actions.add_parser("render", parents=[common], help="write the page and the job summary",
                         description="Render a run's report as one self-contained HTML page and as "
                                     "Markdown; earlier runs' reports add the history. Without "
                                     "--html or --markdown the Markdown goes to stdout.")
  r.add_argument("run", metavar="RUN.json", help="the current run's report")
  r.add_argument("earlier", nargs="*", metavar="EARLIER.json", help="earlier runs' reports (any order)")
  r.add_argument("--html", metavar="OUT.html", help="write the HTML page here")
  r.add_argument("--markdown", metavar="OUT.md", help=f"write the Markdown here ({STDOUT}: stdout)")
  r.add_argument("--served-by", action="append", default=[], metavar="TF.json",
                 help="a tf reader's report (jaxport replay --with-tf VERSION --compat-report "
                      "TF.json): a 'served by TF VERSION' column and each entry's verdict "
                      "(repeatable)")


def _add_upgrade(add) -> None:
  p = add("upgrade", help="rewrite expired envelopes and custom calls today's jaxlib no longer "
                          "registers",
          description="Rewrite a serialized Exported (a blob file or a golden entry directory) "
                      "so that the installed jax runs it: an envelope it refuses as expired in "
                      "the layout it reads, legacy custom calls into today's targets; see "
                      "docs/upgrade.md.")
  p.add_argument("source", metavar="IN", help="blob file or golden entry directory")
  p.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the new blob")
  p.add_argument("--for-jax", dest="for_jax", metavar="VERSION", default=None,
                 help="write the artifact for this jax release (default: the installed jax)")
  p.add_argument("--force", action="store_true", help="replace OUT if it exists")
  p.add_argument("--json", action="store_true", help="print JSON")
  parse_limit_options(p)


def _add_bisect(add) -> None:
  p = add("bisect", help="find the first jax release that no longer loads, runs or matches an entry",
          description="Replay one golden entry under the jax releases of a range, by bisection, "
                      "each in its own environment, built when missing (docs/multi-release.md).")
  p.add_argument("entry", metavar="ENTRY", nargs="?", default=None,
                 help="entry id or entry directory (or --blob with --inputs and --expected)")
  p.add_argument("--blob", default=None, help="a serialized Exported instead of an entry")
  p.add_argument("--inputs", default=None, help="with --blob: npz of the inputs (arr_0, ...)")
  p.add_argument("--expected", default=None, help="with --blob: npz of the expected outputs")
  p.add_argument("--rtol", type=float, default=1e-5, help="with --blob: allclose rtol (default 1e-5)")
  p.add_argument("--atol", type=float, default=1e-5, help="with --blob: allclose atol (default 1e-5)")
  p.add_argument("--releases", required=True, metavar="FIRST..LAST",
                 help="e.g. 0.11.0..0.12.0.1; one release (0.12.0.1..0.12.0.1) checks it alone")
  p.add_argument("--available-only", action="store_true",
                 help="only releases whose environment is already built (and this jax)")
  p.add_argument("--root", default=None,
                 help="golden store (default: the --project's jaxport_store)")
  p.add_argument("--envs", default=None, metavar="DIR",
                 help="folder of release environments (default: $JAXPORT_RELEASE_ENVS, else "
                      "the machine's cache, ~/.cache/jaxport/release-envs)")
  p.add_argument("--json", action="store_true", help="print JSON")
  p.add_argument("--project", default=None, metavar="DIR",
                 help="the project whose jaxport_store holds ENTRY (default: the working "
                      "directory)")


def _add_matrix(add) -> None:
  p = add("matrix", help="a project's entries under every jax release of a range",
          description="Replay the project's golden entries under each jax release of a range, "
                      "each in its own environment (as replay --with-jax does); --plan writes "
                      "the cells out as a CI job matrix instead of running them.")
  p.add_argument("--releases", default=None, metavar="FIRST..LAST", help="e.g. 0.11.0..0.12.0.1")
  p.add_argument("--tf-releases", default=None, metavar="A,B",
                 help="TensorFlow releases as consumers too (e.g. 2.19,2.21): each a replay "
                      "--with-tf cell, or with --producers a column of the matrix")
  p.add_argument("--project", default=".", metavar="DIR",
                 help="the project whose pytest configuration opts into the harness (default: "
                      "the working directory); the plan's commands name it as given")
  p.add_argument("--shards", type=int, default=1, metavar="N",
                 help="split each release's replay into N shards (releases jaxport runs on)")
  p.add_argument("--out", default="reports", metavar="DIR",
                 help="where the cells' reports go (default: reports)")
  p.add_argument("--plan", action="store_true", help="print the cells instead of running them")
  p.add_argument("--json", action="store_true",
                 help="with --plan: {\"include\": [...]} for a CI strategy.matrix")
  g = p.add_argument_group("the producer x consumer matrix")
  g.add_argument("--producers", action="store_true",
                 help="replay every cpu entry of the project's store with each release's own "
                      "jax.export and write matrix.json, matrix.md and matrix-summary.json to "
                      "--out; exit 1 when a pair jax's window covers fails")
  g.add_argument("--expected-releases", action="store_true",
                 help="with --producers: also every release of the project's expected-status "
                      "table (jaxport_expectations)")
  g.add_argument("--current", action="store_true",
                 help="with --producers: also the running jax")
  g.add_argument("--current-build-only", action="store_true",
                 help="with --producers: only the entries jaxport recorded (the forward check)")
  g.add_argument("--today", default=None, metavar="YYYY-MM-DD",
                 help="with --producers: the day window ages count to (default: today)")
