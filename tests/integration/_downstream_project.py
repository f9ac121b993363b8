"""A downstream project written into a pytester folder, as ``docs/downstream.md`` describes
one: the pytest configuration that opts in, the golden test file and a case module."""

import dataclasses
import json
import shutil
from pathlib import Path

from jaxport.golden import EntryId
from jaxport.golden._manifest import MANIFEST_FILE
from jaxport.golden._store import GoldenStore

from _sessions import SessionResult, session_here

GOLDEN_TESTS = "from jaxport.harness.testing import test_record, test_replay  # noqa: F401\n"
STORE = "golden"


def pyproject(module: str = "mycases", **ini: str) -> str:
  """``[tool.pytest.ini_options]`` naming the case module and the store, plus ``ini`` keys."""
  lines = ["[tool.pytest.ini_options]", f'jaxport_cases = ["{module}"]',
           f'jaxport_store = "{STORE}"', *(f'{k} = "{v}"' for k, v in ini.items())]
  return "\n".join(lines) + "\n"


def write_project(pytester, cases_source: str, *, module: str = "mycases",
                  **ini: str) -> GoldenStore:
  """Write the project into ``pytester.path`` (the case module as ``mycases.py``); its store."""
  pytester.makepyprojecttoml(pyproject(module, **ini))
  pytester.makepyfile(test_golden=GOLDEN_TESTS)
  (Path(pytester.path) / "mycases.py").write_text(cases_source)
  return GoldenStore(Path(pytester.path) / STORE)


def switched_on(name: str) -> str:
  """The case module's test of its switch ``name`` (Python source): whether a file of that
  name lies beside the module, which :func:`switch` puts there. A variable in the
  environment would do as well, but each environment of its own costs the sessions' workers
  a preloading parent of their own, and so an import of jax."""
  return f'os.path.exists(os.path.join(os.path.dirname(__file__), "{name}"))'


def switch(project: Path, name: str, on: bool = True) -> None:
  """Turn the switch ``name`` of the case module in ``project`` on (or off)."""
  flag = Path(project) / name
  if on:
    flag.write_text("")
  else:
    flag.unlink()


def record_once(root: Path, cases_source: str, today: str, **ini: str) -> SessionResult:
  """Write the project into ``root`` and record it once, ``--compat-today=today``, in a
  session of this process (:func:`session_here`)."""
  root.mkdir(parents=True, exist_ok=True)
  (root / "pyproject.toml").write_text(pyproject(**ini))
  (root / "test_golden.py").write_text(GOLDEN_TESTS)
  (root / "mycases.py").write_text(cases_source)
  return session_here(root, "-p", "no:cacheprovider", f"--compat-today={today}",
                      "--compat-record")


def recorded_project(root: Path, cases_source: str, today: str, **ini: str) -> Path:
  """:func:`record_once`, which must succeed; the project's root."""
  done = record_once(root, cases_source, today, **ini)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  return root


def session_with_report(pytester, report_file: Path, today: str, *args: str):
  """A harness session in ``pytester``'s folder writing its report to ``report_file``; the
  session's result and the report as JSON."""
  result = pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={today}",
                              f"--compat-report={report_file}", *args)
  return result, json.loads(report_file.read_text())


# The start of a case module: what cases need, and one 3x3 float32 input.
CASE_PRELUDE = """
import os
import time
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}
"""


def as_another_release(store: GoldenStore, case_id: str, release: str) -> EntryId:
  """Move ``case_id``'s only entry to ``release``'s name, its manifest saying ``release``
  recorded it; its new id."""
  (entry,) = [e for e in store.entries() if e.manifest.case_id == case_id]
  m = entry.manifest
  m = dataclasses.replace(m, producer=dataclasses.replace(m.producer, jax=release, jaxlib=release))
  target = entry.path.parent / m.dir_name
  shutil.move(entry.path, target)
  (target / MANIFEST_FILE).write_text(m.to_json())
  return store.entry(EntryId.parse(str(target.relative_to(store.root)))).entry_id
