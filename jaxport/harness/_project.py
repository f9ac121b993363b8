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
from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport._vocabulary import ANY_PLATFORM, PLATFORMS
from jaxport.errors import GoldenDataError, SettingsError

# What a stable-targets file holds, as its errors say.
_SHAPE = 'It must look like {"cpu": ["my_target"], "unreachable": {"other": "why"}}.'

class OnChange(enum.Enum):
  """What a replay does when today's lowering or numerics of a case differ from its entry."""

  FAIL = "fail"  # a golden test: a changed function fails (the default for a project)
  WARN = "warn"  # a drift monitor: warn, fail only under --compat-strict


def _target_names(s: Strict, value: Any, where: str) -> tuple[str, ...]:
  """A platform's declared targets: names, none empty, sorted, each once."""
  names = s.strs(value, where)
  if "" in names:
    raise s.fail(where, "a target name is empty")
  return tuple(sorted(set(names)))


def _targets_strict(where: str) -> Strict:
  """The reader of the stable-targets file ``where``."""
  return Strict(lambda at, what: GoldenDataError(f"{where}: {at}: {what}. {_SHAPE}"))


@json_record(_targets_strict("stable targets"))
@dataclasses.dataclass(frozen=True)
class ProjectTargets:
  """The custom-call targets a project guarantees, per platform, and those it cannot reach.

  Read from a JSON file ``{"cpu": ["my_target", ...], "any": [...], "unreachable":
  {"target": "why"}}``. Coverage requires an entry for each declared target;
  ``audit`` and the replay judge a target stable if jaxport's table or this
  declaration lists it.
  """

  # Platform (or ``any``) -> its targets, each platform a key of the file itself.
  by_platform: Mapping[str, tuple[str, ...]] = key(
      inline=(*PLATFORMS, ANY_PLATFORM), read=_target_names, write=list, default_factory=dict)
  unreachable: Mapping[str, str] = key(optional=True, default_factory=dict)

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
    data = _json.load_file(path, f"stable-targets file {path}", GoldenDataError, _SHAPE)
    return cls.from_json(data, "stable targets", _targets_strict(str(path)))


@json_record(Strict.raising(SettingsError), where="project")
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
  ``release_case_modules``: modules whose ``cases()`` each release's own ``jax.export``
  records (``record --with-jax``). ``effect_modules``: modules of the effect types the
  project's functions use, which a release's replayer imports before reading an entry.
  ``shipped_expired_fails``: an imported artifact whose envelope the installed jax refuses as
  expired fails (``jaxport_shipped_expired = "fail"``) rather than warns.
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
  release_case_modules: tuple[str, ...] = ()
  effect_modules: tuple[str, ...] = ()
  # An imported artifact the installed jax refuses as expired fails (True) or warns.
  shipped_expired_fails: bool = True

  def module_file(self, name: str, key: str) -> Path:
    """The source file of the project's module ``name`` (listed under ``key``), found on the
    project's paths without importing it: a release's own interpreter loads it by path."""
    parts = name.split(".")
    for base in (*self.paths, *([str(self.root)] if self.root else [])):
      for candidate in (Path(base, *parts).with_suffix(".py"), Path(base, *parts, "__init__.py")):
        if candidate.is_file():
          return candidate.resolve()
    raise GoldenDataError(f"{key}: no module {name!r} on the project's paths "
                          f"({', '.join(self.paths) or self.root}); list a module file of the "
                          "project, importable from its configuration's folder or pythonpath")

  def effect_files(self) -> dict[str, str]:
    """Each effect module of the project and its file, as a release's replayer takes them."""
    return {name: str(self.module_file(name, "jaxport_effect_modules"))
            for name in self.effect_modules}


def module_names(value: Sequence[str] | str, key: str = "jaxport_cases") -> tuple[str, ...]:
  """Module names from the ini value of ``key`` (a list, or names separated by spaces or
  commas)."""
  if isinstance(value, str):
    value = [value]
  names = tuple(n for item in value for n in item.replace(",", " ").split())
  for n in names:
    if not all(part.isidentifier() for part in n.split(".")):
      raise GoldenDataError(f"{key}: {n!r} is not a module name; list importable "
                            "modules such as mypkg.golden_cases")
  return names
