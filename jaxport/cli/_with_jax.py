"""``jaxport record/replay --with-jax VERSION``: the project and its pytest command line.

What runs under the other release is :mod:`jaxport.multirelease._with_jax`'s.
"""

from __future__ import annotations

from pathlib import Path

from jaxport.cli import _harness_run
from jaxport.multirelease import _with_jax


def run_in(action: str, *, version: str, platform: str, report: str | None,
           extra: list[str], project: Path) -> int:
  """``action --with-jax version`` in the project folder ``project``, with the harness's own
  pytest command line."""
  config = _harness_run.read_project(project, f"{action} --with-jax")
  return _with_jax.run(
      action, version=version, platform=platform, report=report, project=project, config=config,
      extra=extra, pytest_command=lambda python, report_path: _harness_run.pytest_command(
          action, platform=platform, report=report_path, project=project, extra=extra,
          python=python))


def run_project(action: str, *, version: str, platform: str, report: str | None,
                extra: list[str], project: str | None) -> int:
  """``action --with-jax version`` in the project the command line names (default: the working
  directory)."""
  return run_in(action, version=version, platform=platform, report=report, extra=extra,
                project=_harness_run.project_dir(project))
