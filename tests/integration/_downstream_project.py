"""A downstream project written into a pytester folder, as ``docs/downstream.md`` describes
one: the pytest configuration that opts in, the golden test file and a case module."""

import dataclasses
import shutil
from pathlib import Path

from jaxport.golden import EntryId
from jaxport.golden._manifest import MANIFEST_FILE
from jaxport.golden._store import GoldenStore

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
