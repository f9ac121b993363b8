"""What several ``jaxport`` commands share: the project ``--project`` names, its store and
measurements, its case modules' types, and JSON on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jaxport.cli import _harness_run
from jaxport.errors import GoldenDataError
from jaxport.harness._project import Project
from jaxport.releases import MeasuredRuns, read_measured

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
# The golden store's folder where neither --root nor a project names one.
DEFAULT_ROOT = "compat_data"


def read_project(args) -> Project | None:
  """The project ``--project`` names, or None without it."""
  if args.project is None:
    return None
  return _harness_run.read_project(args.project, "--project")


def measured_of(project: Project | None) -> MeasuredRuns | None:
  """What the project's replays under other releases measured; None without a project."""
  return None if project is None or project.root is None else read_measured(project.root)


def print_json(obj: Any) -> None:
  """``obj`` as indented JSON with sorted keys on stdout."""
  sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def store_of(project: Project, option: str) -> Path:
  """The project's golden store, for ``option`` left out; one not recorded yet says how."""
  if not project.store.is_dir():
    raise GoldenDataError(
        f"no golden store yet: jaxport_store of the project in {project.root} names "
        f"{project.store}, which is not a directory. Record the cases first (jaxport record "
        f"--project {project.root}), or pass {option}.")
  return project.store


def import_project_types(project: Project, parser: Any) -> None:
  """Import the project's case modules here and in ``parser``'s child: they register the
  pytree and effect types its entries need to deserialize (only when an artifact needs one,
  so that inspecting other artifacts runs none of the project's code)."""
  from jaxport.cli import _relower  # local: it loads jax, which commands without artifacts skip
  cases = _relower.Relowerer(tuple(project.case_modules), project.paths, _relower.FROM_PROJECT)
  cases.load()
  if cases.registry is not None:
    parser.import_modules(cases.registry.modules, cases.paths)
