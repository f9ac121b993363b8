"""jaxport's compat harness as a library: cases, checkers and the project configuration.

A project declares its cases in modules exposing ``cases()``, opts in from its
pytest configuration, and collects the golden items of
:mod:`jaxport.harness.testing`; ``docs/downstream.md`` walks through it. The
names are imported on first use, so the pytest side of a run stays free of jax.
"""

import typing as _typing

from jaxport import _lazy

_EXPORTS = {
    "Case": "jaxport.harness._case",
    "default_tolerance": "jaxport.harness._case",
    "random_matrix": "jaxport.harness._case",
    "rng": "jaxport.harness._case",
    "jit_kwargs_from": "jaxport.harness._jit_kwargs",
    "OnChange": "jaxport.harness._project",
    "Project": "jaxport.harness._project",
    "ProjectTargets": "jaxport.harness._project",
    "CaseRegistry": "jaxport.harness._registry",
    "register_preset": "jaxport.harness._controller._settings",
    "Checker": "jaxport.harness.checkers",
    "CheckerRegistry": "jaxport.harness.checkers",
    "Judge": "jaxport.harness.checkers",
    "Verdict": "jaxport.harness.checkers",
    "judged": "jaxport.harness.checkers",
    "register_checker": "jaxport.harness.checkers",
}

if _typing.TYPE_CHECKING:  # the same names, for type checkers and editors
  from jaxport.harness._case import (Case as Case, default_tolerance as default_tolerance,
                                     random_matrix as random_matrix, rng as rng)
  from jaxport.harness._jit_kwargs import jit_kwargs_from as jit_kwargs_from
  from jaxport.harness._project import (OnChange as OnChange, Project as Project,
                                        ProjectTargets as ProjectTargets)
  from jaxport.harness._registry import CaseRegistry as CaseRegistry
  from jaxport.harness._controller._settings import register_preset as register_preset
  from jaxport.harness.checkers import (Checker as Checker, CheckerRegistry as CheckerRegistry,
                                        Judge as Judge, Verdict as Verdict, judged as judged,
                                        register_checker as register_checker)

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy.attach(globals(), _EXPORTS)
