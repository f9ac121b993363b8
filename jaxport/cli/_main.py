"""The ``jaxport`` command line: audit, inspect, import, prune, record, replay, upgrade, bisect.

Exit status: 0 when all is well, 1 when the command found problems (audit
problems, datasets that failed to import), 2 for usage errors and unreadable
input, 130 when interrupted (Ctrl-C; ``prune --yes`` then says which entries
it removed). Module bytes are parsed in a child process (``cli._parser``): a
module that crashes or hangs it is one audit problem or failed dataset (1),
and unreadable input for ``inspect`` and ``upgrade`` (2). Progress goes to
stderr through logging (``-q`` quiets it, ``-v`` adds detail); results go to
stdout, as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import logging
import os
import sys
from pathlib import Path

from jaxport.cli import _native_logs  # noqa: F401  (first: before anything loads jaxlib)
from jaxport.cli import _artifacts, _bisect, _harness_run, _matrix, _parser, _prune as pruner, _relower
from jaxport.cli import _import_artifacts, _with_jax, _with_tf
from jaxport.cli import _report
from jaxport.cli import _upgrade as upgrader
from jaxport.cli import _inspect, _project_args
from jaxport.cli import _audit as audit
from jaxport.cli import _audit_run
from jaxport.corpus import _import as importer
from jaxport import _progress
from jaxport._progress import track
from jaxport._jaxcompat._version import MIN_JAX, distribution_version, installed_jax_version
from jaxport._vocabulary import ANY_PLATFORM, PLATFORMS
from jaxport.releases import releases
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller import _settings
from jaxport.harness._project import OnChange, Project, ProjectTargets

logger = logging.getLogger("jaxport.cli")

from jaxport.cli._project_args import (DEFAULT_ROOT, EXIT_ERROR, EXIT_INTERRUPTED,  # noqa: E402
                                       EXIT_OK, EXIT_PROBLEMS)


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


def build_parser() -> argparse.ArgumentParser:
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
  _parser.add_options(p)

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
  _parser.add_options(p)

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
  p.add_argument("--rtol", type=float, default=None, help="override the dtype-based rtol")
  p.add_argument("--atol", type=float, default=None, help="override the dtype-based atol")
  p.add_argument("--json", action="store_true", help="print JSON")
  _parser.add_options(p)
  _import_artifacts.add_parser(add)

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
  _report.add_parser(sub, common)
  upgrader.add_parser(add)
  _bisect.add_parser(add)
  _matrix.add_parser(add)
  return parser


def _add_project(p: argparse.ArgumentParser, what: str) -> None:
  p.add_argument("--project", default=None, metavar="DIR",
                 help="the project whose pytest configuration opts into the harness "
                      f"(pyproject.toml, pytest.ini, setup.cfg or tox.ini, read as pytest reads "
                      f"it): {what}")


def _version() -> str:
  versions = {d: _dist_version(d) for d in ("jaxport", "jax", "jaxlib")}
  return f"{versions['jaxport']} (jax {versions['jax']}, jaxlib {versions['jaxlib']})"


def _dist_version(dist: str) -> str:
  return distribution_version(dist) or "not installed"


class _StderrHandler(logging.StreamHandler):
  """Writes to whatever ``sys.stderr`` is at the time of each record."""

  @property
  def stream(self):
    return sys.stderr

  @stream.setter
  def stream(self, value):
    pass

  def emit(self, record):
    # A message in the middle of a progress bar starts on a cleared line; the bar redraws after.
    if _progress.is_terminal(self.stream):
      self.stream.write(_progress.CLEAR_LINE)
    super().emit(record)


def _chosen_parser(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> argparse.ArgumentParser:
  """The parser of the (sub)command ``args`` chose, such as ``jaxport report render``'s: a usage
  error shows that command's usage and name, not the top-level ones."""
  chosen = parser
  while True:
    subcommands = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
    name = getattr(args, subcommands[0].dest, None) if subcommands else None
    if name not in (subcommands[0].choices if subcommands else ()):
      return chosen
    chosen = subcommands[0].choices[name]


def main(argv: list[str] | None = None) -> int:
  """Run the command line; returns the exit status."""
  parser = build_parser()
  args, extra = parser.parse_known_args(argv)
  if extra and args.command not in ("record", "replay"):
    _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
  if args.command == "prune" and (args.older_than_days is None and not args.dated_in_future
                                  and not args.superseded and not args.case):
    _chosen_parser(parser, args).error(
        "say which entries to remove: --older-than-days DAYS (expired), --superseded (older "
        "entries of a case by the same jax release), --dated-in-future, or --case CASE_ID "
        "(every entry of that case); they combine, and --case narrows the others to that case")
  if args.command in ("record", "replay") and _with_tf.usage_error(args):
    _chosen_parser(parser, args).error(_with_tf.usage_error(args))
  if args.command == _import_artifacts.COMMAND and _import_artifacts.usage_error(args):
    _chosen_parser(parser, args).error(_import_artifacts.usage_error(args))
  handler = _StderrHandler()
  handler.setFormatter(logging.Formatter("jaxport: %(message)s"))
  root_logger = logging.getLogger("jaxport")
  old_level = root_logger.level
  root_logger.addHandler(handler)
  root_logger.setLevel(logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO)
  try:
    return _COMMANDS[args.command](args, extra)
  except JaxportError as e:
    prefix = f"jaxport {args.command}: "
    text = str(e)
    # A message that already names the command keeps one prefix, not two.
    sys.stderr.write(f"{prefix}error: {text.removeprefix(prefix)}\n")
    return EXIT_ERROR
  except KeyboardInterrupt:
    sys.stderr.write(f"jaxport {args.command}: interrupted.\n")
    return EXIT_INTERRUPTED
  except BrokenPipeError:
    # The reader of our output went away (``| head``); stop quietly.
    sys.stdout = open(os.devnull, "w")
    return EXIT_OK
  finally:
    root_logger.removeHandler(handler)
    root_logger.setLevel(old_level)


def _audit(args, extra) -> int:
  today = args.today or datetime.date.today()
  project = _project_args.read_project(args)
  paths = args.paths
  if not paths and project is None:
    raise JaxportError("name what to audit: one or more PATHs (a blob, a directory of blobs, a "
                       "golden entry or store), or --project DIR for the project's store.")
  if not paths:
    paths = [str(_project_args.store_of(project, "PATH"))]
  # The case modules are imported and lowered in the module parser child, even with
  # --no-drift (they register the project's pytree and effect types, which its entries need
  # to deserialize); here only when an entry needs one of those types. A module that fails to
  # import stops the audit, before any result.
  cases = _relowerer(args, project)
  artifacts = [a for p in paths for a in _artifacts.find_artifacts(p)]
  if not artifacts:
    raise JaxportError(f"no artifacts found under {', '.join(paths)} (looked for golden "
                       f"entries and *.bin blobs).")
  declared = project.targets if project is not None else None
  if args.stable_targets:
    given = ProjectTargets.read(args.stable_targets)
    declared = given if declared is None else declared.union(given)
  with _parser.from_args(args) as parser:
    in_child = _relower.CasesInChild(cases.modules, cases.paths, cases.source, parser)
    in_child.load()
    relowerer = None if args.no_drift else in_child
    if any(a.problem is None for a in artifacts):
      parser.start()  # one child reads every artifact's module; it imports jax meanwhile
    newest = audit.newest_of(artifacts)
    changes_fail = project is None or project.on_change is OnChange.FAIL
    measured = _project_args.measured_of(project)
    current = audit.current_jax_entries(artifacts, installed_jax_version())
    runs = _audit_run.run_in_scratch(artifacts) if args.run else {}
    records = [audit.audit_artifact(art, today=today, window_days=args.window_days,
                                    relowerer=relowerer, declared=declared, reader=parser,
                                    strict=args.strict, changes_fail=changes_fail,
                                    newest=art.label in newest, measured=measured,
                                    current=current,
                                    shipped_expired_fails=(project is None
                                                           or project.shipped_expired_fails),
                                    run=runs.get(art.label), load_types=cases.load_here)
               for art in track(artifacts, "auditing", lambda a: a.label)]
  if args.json:
    _project_args.print_json({"today": today.isoformat(), "window_days": args.window_days,
                 "strict": args.strict,
                 "artifacts": records, "ok": all(r["ok"] for r in records)})
  else:
    sys.stdout.write(audit.format_text(records, args.window_days))
  return EXIT_OK if all(r["ok"] for r in records) else EXIT_PROBLEMS


def _relowerer(args, project: Project | None) -> _relower.Relowerer:
  """The cases to re-lower: the project's case modules (from its paths) and those of --cases."""
  if project is None:
    return _relower.Relowerer(tuple(args.cases or ()))
  modules = tuple(dict.fromkeys([*project.case_modules, *(args.cases or ())]))
  source = _relower.FROM_PROJECT + (" and --cases" if args.cases else "")
  return _relower.Relowerer(modules, project.paths, source)


def _stable_targets_option(p: argparse.ArgumentParser, meaning: str) -> None:
  p.add_argument("--stable-targets", default=None, metavar="FILE",
                 help="JSON file of the custom-call targets the project guarantees "
                      f'({{"cpu": ["my_target"], "{ANY_PLATFORM}": [...]}}); {meaning}')


def _import(args, extra) -> int:
  with _parser.from_args(args) as parser:
    result = importer.run_import(args.sources, args.out, platform=args.platform, mode=args.mode,
                                 rtol=args.rtol, atol=args.atol, host_platform=args.host_platform,
                                 read_signatures=parser.signatures)
  if args.json:
    _project_args.print_json(result)
  else:
    for status in ("imported", "exists", "skipped", "failed"):
      for msg in result[status]:
        sys.stdout.write(f"{status}: {msg}\n")
    sys.stdout.write(", ".join(f"{len(v)} {k}" for k, v in result.items()) + "\n")
  return EXIT_PROBLEMS if result["failed"] else EXIT_OK


def _prune(args, extra) -> int:
  today = args.today or datetime.date.today()
  project = _project_args.read_project(args)
  if args.root is None and project is not None:
    root = str(_project_args.store_of(project, "--root"))
  else:
    root = args.root or DEFAULT_ROOT
  if not Path(root).is_dir():
    raise GoldenDataError(f"--root {root}: no golden store there (not a directory). Run from "
                          "the repository root, pass --root PATH/TO/compat_data, or pass "
                          "--project DIR for the project's jaxport_store.")
  store = GoldenStore(root)
  expired = store.prune(args.older_than_days, today=today, dry_run=True,
                        dated_in_future=args.dated_in_future, superseded=args.superseded,
                        cases=args.case)
  if args.yes:
    try:
      expired = pruner.remove_entries(store, expired)
    except pruner.Interrupted as stop:
      sys.stderr.write(f"jaxport prune: {stop.message()}\n")
      return EXIT_INTERRUPTED
  future = [] if args.dated_in_future else store.dated_after(today)
  if args.json:
    _project_args.print_json({"removed" if args.yes else "would_remove": [str(e.entry_id) for e in expired],
                 "dry_run": not args.yes, "today": today.isoformat(),
                 "older_than_days": args.older_than_days, "cases": args.case,
                 "dated_in_future": [str(e.entry_id) for e in future]})
  else:
    verb = "removed" if args.yes else "would remove"
    for e in expired:
      sys.stdout.write(f"{verb} {e.entry_id}\n")
    sys.stdout.write(f"{len(expired)} entr{'y' if len(expired) == 1 else 'ies'} "
                     + _pruned_because(args, today)
                     + ("" if args.yes or not expired else "; pass --yes to remove them") + ".\n")
    if future:
      sys.stdout.write(f"{len(future)} entr{'y is' if len(future) == 1 else 'ies are'} dated after "
                       f"{today} ({', '.join(str(e.entry_id) for e in future)}); a record date in the "
                       "future is wrong; pass --dated-in-future to remove them.\n")
  return EXIT_OK


def _pruned_because(args, today: datetime.date) -> str:
  """Which entries prune selected, in words: ``older than 180 days as of 2026-12-03 or
  superseded, of case mlp``."""
  rules = []
  if args.older_than_days is not None:
    rules.append(f"older than {args.older_than_days} days as of {today}")
  if args.superseded:
    rules.append("superseded")
  if args.dated_in_future:
    rules.append(f"dated after {today}")
  of = f"of case {', '.join(args.case)}" if args.case else ""
  return " or ".join(rules) + (", " if rules and of else "") + of


def _harness(args, extra) -> int:
  if getattr(args, "with_tf", None) is not None:
    return _with_tf.run_project(args.with_tf, platform=args.platform, report=args.compat_report,
                                extra=extra, project=args.project)
  if args.with_jax is not None:
    return _with_jax.run_project(args.command, version=args.with_jax, platform=args.platform,
                                 report=args.compat_report, extra=extra, project=args.project)
  return _harness_run.run(args.command, platform=args.platform, report=args.compat_report,
                          extra=extra, project=args.project)


def _upgrade(args, extra) -> int:
  source, output = Path(args.source), Path(args.output)
  with _parser.from_args(args) as parser:
    report = upgrader.upgrade_file(source, output, force=args.force, for_jax=args.for_jax,
                                   parser=parser)
  if args.json:
    _project_args.print_json({"source": str(source), "output": str(output), **report.report})
  else:
    sys.stdout.write(report.text)
  return EXIT_OK


def _bisect_command(args, extra) -> int:
  return _bisect.run(args)


_COMMANDS = {
    "audit": _audit,
    "inspect": _inspect.run,
    "import-jax-testdata": _import,
    _import_artifacts.COMMAND: _import_artifacts.run,
    "prune": _prune,
    "record": _harness,
    "replay": _harness,
    _report.COMMAND: _report.run,
    "upgrade": _upgrade,
    "bisect": _bisect_command,
    "matrix": _matrix.run,
}
