"""The commands that read artifacts' modules in the module parser child (``_parser``):
``audit``, ``import-jax-testdata`` and ``upgrade``. ``_main`` imports this module when one of
them runs; they load jax."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._progress import track
from jaxport.cli import _artifacts, _audit_run, _parser, _project_args, _relower
from jaxport.cli import _audit as auditing
from jaxport.cli import _upgrade as upgrader
from jaxport.cli._project_args import EXIT_OK, EXIT_PROBLEMS
from jaxport.corpus import _import as importer
from jaxport.errors import JaxportError
from jaxport.harness._project import OnChange, Project, ProjectTargets


def audit(args: argparse.Namespace, extra: list[str]) -> int:
  """``jaxport audit``."""
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
    newest = auditing.newest_of(artifacts)
    changes_fail = project is None or project.on_change is OnChange.FAIL
    measured = _project_args.measured_of(project)
    current = auditing.current_jax_entries(artifacts, installed_jax_version())
    runs = _audit_run.run_in_scratch(artifacts) if args.run else {}
    records = [auditing.audit_artifact(art, today=today, window_days=args.window_days,
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
    sys.stdout.write(auditing.format_text(records, args.window_days))
  return EXIT_OK if all(r["ok"] for r in records) else EXIT_PROBLEMS


def _relowerer(args, project: Project | None) -> _relower.Relowerer:
  """The cases to re-lower: the project's case modules (from its paths) and those of --cases."""
  if project is None:
    return _relower.Relowerer(tuple(args.cases or ()))
  modules = tuple(dict.fromkeys([*project.case_modules, *(args.cases or ())]))
  source = _relower.FROM_PROJECT + (" and --cases" if args.cases else "")
  return _relower.Relowerer(modules, project.paths, source)


def import_jax_testdata(args: argparse.Namespace, extra: list[str]) -> int:
  """``jaxport import-jax-testdata``."""
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


def upgrade(args: argparse.Namespace, extra: list[str]) -> int:
  """``jaxport upgrade``."""
  source, output = Path(args.source), Path(args.output)
  with _parser.from_args(args) as parser:
    report = upgrader.upgrade_file(source, output, force=args.force, for_jax=args.for_jax,
                                   parser=parser)
  if args.json:
    _project_args.print_json({"source": str(source), "output": str(output), **report.report})
  else:
    sys.stdout.write(report.text)
  return EXIT_OK
