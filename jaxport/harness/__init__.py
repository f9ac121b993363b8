"""jaxport's compat harness as a library: cases, checkers and the project configuration.

A project declares its cases in modules exposing ``cases()``, opts in from its
pytest configuration, and collects the golden items of
:mod:`jaxport.harness.testing`; ``docs/downstream.md`` walks through it.
"""

from jaxport.harness._case import Case as Case
from jaxport.harness._case import default_tolerance as default_tolerance
from jaxport.harness._case import random_matrix as random_matrix
from jaxport.harness._case import rng as rng
from jaxport.harness._project import OnChange as OnChange
from jaxport.harness._project import Project as Project
from jaxport.harness._project import ProjectTargets as ProjectTargets
from jaxport.harness._registry import CaseRegistry as CaseRegistry
from jaxport.harness.checkers import Verdict as Verdict
from jaxport.harness.checkers import register_checker as register_checker

__all__ = ["Case", "CaseRegistry", "OnChange", "Project", "ProjectTargets", "Verdict",
           "default_tolerance", "random_matrix", "register_checker", "rng"]
