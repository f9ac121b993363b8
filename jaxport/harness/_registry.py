"""The registry of a project's cases and checkers, gathered from its case modules."""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from jaxport._vocabulary import PLATFORMS
from jaxport.errors import GoldenDataError
from jaxport.harness import checkers as _checkers
from jaxport.harness._case import Case
from jaxport.harness._protocol._answers import CaseFacts, ProjectCases


class CaseRegistry:
  """Every case of the listed modules, keyed by id (ids must be unique across modules)."""

  def __init__(self, modules: tuple[str, ...]):
    self.modules = tuple(modules)
    self._prefetch: threading.Thread | None = None

  def prefetch(self) -> None:
    """Start importing the case modules on a background thread; the first use waits for it.

    A pytest process that only routes entries to workers needs the cases at the
    end of the run; importing them (and jax) while the workers replay keeps that
    wait off the end.
    """
    if self._prefetch is None:
      self._prefetch = threading.Thread(target=self._prefetch_quietly, name="jaxport-case-modules",
                                        daemon=True)
      self._prefetch.start()

  def _prefetch_quietly(self) -> None:
    try:
      self.by_id
    except Exception:  # noqa: BLE001  (the first use imports again and raises it there)
      pass

  @functools.cached_property
  def _loaded(self) -> list:
    if self._prefetch is not None and self._prefetch is not threading.current_thread():
      self._prefetch.join()
    out = []
    for name in self.modules:
      try:
        module = importlib.import_module(name)
      except ImportError as e:
        raise GoldenDataError(
            f"case module {name!r} cannot be imported ({e}); check jaxport_cases in the "
            "pytest configuration and that the module is on the path (pytest's pythonpath "
            "option or an installed package)") from e
      except KeyboardInterrupt:
        raise
      except BaseException as e:  # noqa: BLE001 - the module's own code failed (or exited)
        raise GoldenDataError(
            f"case module {name!r} {_failed(e)} while being imported{_frames(e)}\nFix the module "
            "(or build what it needs, such as a native library) and run again") from None
      if not callable(getattr(module, "cases", None)):
        raise GoldenDataError(f"case module {name!r} has no cases() function returning its "
                              "jaxport.harness.Case objects")
      out.append(module)
    return out

  @functools.cached_property
  def by_id(self) -> Mapping[str, Case]:
    out: dict[str, Case] = {}
    for module in self._loaded:
      for case in _cases_of(module):
        if not isinstance(case, Case):
          raise GoldenDataError(f"{module.__name__}.cases() yielded {type(case).__name__}, "
                                "not a jaxport.harness.Case")
        if case.case_id in out:
          raise GoldenDataError(f"case id {case.case_id!r} is registered twice (second in "
                                f"{module.__name__}); case ids must be unique")
        _check_platforms(case, module.__name__)
        out[case.case_id] = case
    return out

  @functools.cached_property
  def checkers(self) -> _checkers.CheckerRegistry:
    """The project's checkers: the built-in ones, those added with ``register_checker``, and
    each case module's ``CHECKERS`` (a mapping of names to checkers)."""
    registry = _checkers.project_registry()
    for module in self._loaded:
      declared = getattr(module, "CHECKERS", None)
      if declared is None:
        continue
      if not isinstance(declared, Mapping):
        raise GoldenDataError(f"case module {module.__name__!r}: CHECKERS is a "
                              f"{type(declared).__name__}; make it a dict of checker names to "
                              "checkers (functions (inputs, expected, actual, *, rtol, atol) -> "
                              "Verdict, or jaxport.harness.judged(fn))")
      for name, checker in declared.items():
        try:
          registry.register(name, checker)
        except ValueError as e:
          raise GoldenDataError(f"case module {module.__name__!r}, CHECKERS[{name!r}]: {e}") from e
    return registry

  def case(self, case_id: str) -> Case | None:
    """The case ``case_id``, or None if no module registers it any more."""
    return self.by_id.get(case_id)

  def cases_for(self, host_platform: str) -> list[Case]:
    """The cases recorded and replayed on machines of ``host_platform``, sorted by id."""
    return sorted((c for c in self.by_id.values() if c.host_platform == host_platform),
                  key=lambda c: c.case_id)

  def unreachable(self) -> dict[str, str]:
    """Targets the modules declare they cannot reach (``UNREACHABLE``), with why."""
    out: dict[str, str] = {}
    for module in self._loaded:
      out.update(getattr(module, "UNREACHABLE", {}))
    return out

  def facts(self) -> ProjectCases:
    """What a process that does not run the cases needs of them, as data (imports the
    modules here; ``GoldenDataError`` when they fail to load)."""
    return ProjectCases(
        tuple(CaseFacts(c.case_id, c.host_platform, tuple(c.export_platforms()), c.lowering_only,
                        c.min_consumer, c.lowering_twin)
              for c in sorted(self.by_id.values(), key=lambda c: c.case_id)),
        self.unreachable())


def _failed(e: BaseException) -> str:
  """``raised ValueError: why``, or ``exited (SystemExit(0))``: what the case code did."""
  if isinstance(e, SystemExit):
    return f"exited (SystemExit({e.code!r})): a case module must not end the process"
  return f"raised {type(e).__name__}: {e}"


def project_frames(e: BaseException) -> str:
  """The frames of ``e``'s traceback in the project's own code, innermost last (jaxport's,
  the import machinery's and the standard library's left out), as text to quote ("" when
  none is the project's)."""
  own = [f for f in traceback.extract_tb(e.__traceback__)
         if not f.filename.startswith(_NOT_THE_PROJECTS)]
  return "".join(traceback.format_list(own)).rstrip()


def _frames(e: BaseException) -> str:
  """:func:`project_frames` after a colon, for a message that quotes them."""
  own = project_frames(e)
  return f":\n{own}" if own else ""


# Where frames that are not the project's own come from: jaxport, the import machinery, and
# the standard library.
_NOT_THE_PROJECTS = (str(Path(__file__).resolve().parents[1]), "<frozen ",
                     str(Path(traceback.__file__).resolve().parent))


def _cases_of(module) -> list:
  """What ``module.cases()`` returns, which must be a list (or tuple) of Case objects; a
  ``GoldenDataError`` naming the module and the error (its own frames) for anything else."""
  try:
    listed = module.cases()
  except KeyboardInterrupt:
    raise
  except BaseException as e:  # noqa: BLE001 - the module's own code failed (or exited)
    raise GoldenDataError(f"case module {module.__name__!r}: cases() {_failed(e)}{_frames(e)}"
                          "\nFix the module (or build what it needs, such as a native "
                          "library) and run again") from None
  if not isinstance(listed, (list, tuple)):
    raise GoldenDataError(f"case module {module.__name__!r}: cases() returned "
                          f"{type(listed).__name__}; return a list of jaxport.harness.Case "
                          "objects")
  return list(listed)


def _check_platforms(case: Case, module: str) -> None:
  """Refuse a case whose host or export platforms are not the harness's platform names."""
  for p in (case.host_platform, *(case.platforms or ())):
    if p not in PLATFORMS:
      raise GoldenDataError(f"case {case.case_id} of {module}: unknown platform {p!r}; expected "
                            f"one of {PLATFORMS}")


def missing_modules(modules: Sequence[str], paths: Sequence[str]) -> list[str]:
  """The case modules whose top-level package is found neither on ``paths`` (the project's)
  nor on ``sys.path``; found without importing anything."""
  search = [*paths, *sys.path]
  return [name for name in modules if name not in sys.modules and not _findable(name, search)]


def _findable(name: str, search: list[str]) -> bool:
  """Whether module ``name`` exists on ``search``: each package of its dotted name is looked
  up in the folders of the one before it, executing none of them."""
  parts = name.split(".")
  try:
    spec = (importlib.machinery.PathFinder.find_spec(parts[0], search)
            or importlib.util.find_spec(parts[0]))
    for i in range(1, len(parts)):
      locations = spec.submodule_search_locations if spec is not None else None
      if locations is None:
        return False
      spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]), list(locations))
  except (ImportError, ValueError):
    return False
  return spec is not None
