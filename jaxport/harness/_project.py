"""What a project that uses the harness declares: its case modules, its store, its policies.

A project opts in from its pytest configuration (``jaxport_cases`` and
``jaxport_store`` in ``[tool.pytest.ini_options]``, see ``docs/downstream.md``).
The :class:`Project` built from it crosses into the worker process as JSON, so
the worker imports the same case modules the session lists.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._vocabulary import ANY_PLATFORM, PLATFORMS
from jaxport.errors import GoldenDataError



class OnChange(enum.Enum):
  """What a replay does when today's lowering or numerics of a case differ from its entry."""

  FAIL = "fail"  # a golden test: a changed function fails (the default for a project)
  WARN = "warn"  # a drift monitor: warn, fail only under --compat-strict


@dataclasses.dataclass(frozen=True)
class ProjectTargets:
  """The custom-call targets a project guarantees, per platform, and those it cannot reach.

  Read from a JSON file ``{"cpu": ["my_target", ...], "any": [...], "unreachable":
  {"target": "why"}}``. Coverage requires an entry for each declared target;
  ``audit`` and the replay judge a target stable if jaxport's table or this
  declaration lists it.
  """

  by_platform: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
  unreachable: Mapping[str, str] = dataclasses.field(default_factory=dict)

  def stable(self, platform: str) -> frozenset[str]:
    return frozenset(self.by_platform.get(platform, ())) | frozenset(
        self.by_platform.get(ANY_PLATFORM, ()))

  def all(self) -> frozenset[str]:
    return frozenset(t for targets in self.by_platform.values() for t in targets)

  def union(self, other: ProjectTargets) -> ProjectTargets:
    """The targets either declaration lists (a project's file and one named by hand)."""
    keys = dict.fromkeys([*self.by_platform, *other.by_platform])
    return ProjectTargets(
        {k: tuple(sorted({*self.by_platform.get(k, ()), *other.by_platform.get(k, ())}))
         for k in keys}, {**self.unreachable, **other.unreachable})

  @classmethod
  def read(cls, path: str | Path) -> ProjectTargets:
    """The declarations in the JSON file ``path``; a malformed file names the bad part."""
    path = Path(path)
    fix = 'It must look like {"cpu": ["my_target"], "unreachable": {}}.'
    data = _json.load_file(path, f"stable-targets file {path}", GoldenDataError, fix)
    return cls.from_json(data, where=str(path))

  @classmethod
  def from_json(cls, data: Any, where: str = "stable targets") -> ProjectTargets:
    if not isinstance(data, dict):
      raise GoldenDataError(f"{where}: expected a JSON object of platform -> list of targets, "
                            f"got {type(data).__name__}")
    by_platform: dict[str, tuple[str, ...]] = {}
    unreachable: dict[str, str] = {}
    for key, value in data.items():
      if key == "unreachable":
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
          raise GoldenDataError(f'{where}: "unreachable" must map target names to the reason')
        unreachable = dict(value)
      elif key in (*PLATFORMS, ANY_PLATFORM):
        if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
          raise GoldenDataError(f"{where}: {key!r} must be a list of target names")
        by_platform[key] = tuple(sorted(set(value)))
      else:
        raise GoldenDataError(f"{where}: unknown key {key!r}; expected a platform of "
                              f"{(*PLATFORMS, ANY_PLATFORM)} or 'unreachable'")
    return cls(by_platform, unreachable)

  def to_json(self) -> dict[str, Any]:
    return {**{k: list(v) for k, v in self.by_platform.items()},
            "unreachable": dict(self.unreachable)}


@dataclasses.dataclass(frozen=True)
class Project:
  """One project's harness configuration.

  ``case_modules``: importable modules each exposing ``cases()`` (an iterable of
  :class:`~jaxport.harness.Case`) and optionally ``UNREACHABLE`` (target -> why).
  ``store``: the golden store directory. ``targets``: the project's own stable
  targets. ``require_builtin_targets``: coverage also demands an entry for every
  target of jaxport's own table (jaxport's repository does; a downstream project
  does not). ``expectations``: a table of producer releases' expected failures.
  ``paths``: directories the worker puts on ``sys.path`` to import the case modules.
  ``targets_file``: the file ``targets`` was read from (named in coverage failures).
  """

  case_modules: tuple[str, ...]
  store: Path
  targets: ProjectTargets = dataclasses.field(default_factory=ProjectTargets)
  on_change: OnChange = OnChange.FAIL
  require_builtin_targets: bool = False
  expectations: Path | None = None
  root: Path | None = None
  paths: tuple[str, ...] = ()
  targets_file: Path | None = None

  def to_json(self) -> dict[str, Any]:
    return {"case_modules": list(self.case_modules), "store": str(self.store),
            "targets": self.targets.to_json(), "on_change": self.on_change.value,
            "require_builtin_targets": self.require_builtin_targets,
            "expectations": str(self.expectations) if self.expectations else None,
            "root": str(self.root) if self.root else None, "paths": list(self.paths),
            "targets_file": str(self.targets_file) if self.targets_file else None}

  @classmethod
  def from_json(cls, data: Mapping[str, Any]) -> Project:
    return cls(case_modules=tuple(data["case_modules"]), store=Path(data["store"]),
               targets=ProjectTargets.from_json(data["targets"]),
               on_change=OnChange(data["on_change"]),
               require_builtin_targets=bool(data["require_builtin_targets"]),
               expectations=Path(data["expectations"]) if data["expectations"] else None,
               root=Path(data["root"]) if data["root"] else None, paths=tuple(data["paths"]),
               targets_file=Path(data["targets_file"]) if data.get("targets_file") else None)


def module_names(value: Sequence[str] | str) -> tuple[str, ...]:
  """Case module names from an ini value (a list, or names separated by spaces or commas)."""
  if isinstance(value, str):
    value = [value]
  names = tuple(n for item in value for n in item.replace(",", " ").split())
  for n in names:
    if not all(part.isidentifier() for part in n.split(".")):
      raise GoldenDataError(f"jaxport_cases: {n!r} is not a module name; list importable "
                            "modules such as mypkg.golden_cases")
  return names
