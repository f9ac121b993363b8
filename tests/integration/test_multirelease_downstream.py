"""Outside any jaxport checkout, a project asks other jax releases about its own entries:
``examples/downstream`` copied to a temporary folder records with the running jax, replays with
jax 0.11.2 in an environment jaxport builds (its harness, its findings), and bisects one entry
over 0.11.0..0.12.0.1; a bisection of one of jaxport's jax 0.4.30 entries (from a copy of the
store) names 0.11.1, the first release whose own ``jax.export`` refuses it; a case exported
``for_jax`` the oldest consumer replays under that release and is refused by the one below, and
its runs_on starts at that release.

The environments are built in the machine's cache (``JAXPORT_RELEASE_ENVS`` or
``~/.cache/jaxport/release-envs``). The test runs where they are built already, or with
``JAXPORT_BUILD_RELEASE_VENVS=1`` (the nightly), which builds them; it skips naming that
otherwise, and when no Python 3.12 or newer is on the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxport.multirelease import _envs

ROOT = Path(__file__).resolve().parents[2]
RANGE = ("0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.12.0.1")
# A jax 0.4.30 entry without custom calls: its only limit is the envelope's age.
OLD_ENTRY = "cpu/feature_vjp/release_vjp_tanh_f32/2026-11-29_jax-0.4.30"
BUILD = os.environ.get("JAXPORT_BUILD_RELEASE_VENVS") == "1"


def _python_312() -> str | None:
  try:
    return _envs.find_python("0.11.2")
  except _envs.VenvError:
    return None


pytestmark = pytest.mark.slow
needs_the_range = pytest.mark.skipif(
    not BUILD and not all(_envs.is_ready(v) for v in RANGE) or _python_312() is None,
    reason="the release environments of jax 0.11.0 to 0.12.0.1 are not built in this machine's "
           "cache (set JAXPORT_BUILD_RELEASE_VENVS=1 to build them), or no Python 3.12 or newer, "
           "which they need, is on this machine")


def _jaxport(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  proc = subprocess.run(
      [sys.executable, "-c", "import sys; from jaxport.cli import main; sys.exit(main())", *argv],
      cwd=cwd, capture_output=True, text=True, timeout=1800, env=env)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return proc


@needs_the_range
def test_a_downstream_project_replays_and_bisects_under_other_releases(tmp_path):
  project = tmp_path / "downstream"
  shutil.copytree(ROOT / "examples" / "downstream", project,
                  ignore=shutil.ignore_patterns("golden", "__pycache__"))
  _jaxport(project, "record", "--project", ".")
  report = tmp_path / "with-0.11.2.json"
  _jaxport(project, "replay", "--with-jax", "0.11.2", "--project", ".", "--compat-report",
           str(report))
  replayed = json.loads(report.read_text())
  assert replayed["versions"]["jax"] == "0.11.2"
  statuses = [e["status"] for e in replayed["entries"]]
  assert statuses and set(statuses) == {"pass"}, statuses
  entry = replayed["entries"][0]["entry_id"]
  out = _jaxport(project, "bisect", entry, "--releases", "0.11.0..0.12.0.1", "--project", ".",
                 "--json").stdout
  result = json.loads(out)
  assert result["releases"] == list(RANGE) and result["first_bad"] is None


@needs_the_range
def test_bisecting_a_jax_0_4_30_entry_names_the_release_whose_own_export_refuses_it(tmp_path):
  store = tmp_path / "store"
  source = ROOT / "compat_data" / OLD_ENTRY
  shutil.copytree(source, store / OLD_ENTRY)
  out = _jaxport(tmp_path, "bisect", OLD_ENTRY, "--releases", "0.11.0..0.12.0.1", "--root",
                 str(store), "--json").stdout
  result = json.loads(out)
  assert (result["last_good"], result["first_bad"]["release"]) == ("0.11.0", "0.11.1")
  assert result["first_bad"]["stage"] == "deserialize"
  assert "backward-compatibility window" in result["first_bad"]["error"]


def _oldest_and_below() -> tuple[str, str]:
  """The oldest consumer ``for_jax`` writes for (from the release table), and the release below."""
  from jaxport.export import _for_jax
  from jaxport.harness._judge._consumers import measured_releases
  oldest = _for_jax.oldest_consumer()
  table = measured_releases()
  return oldest, table[table.index(oldest) - 1]


@pytest.mark.skipif(not BUILD and not all(_envs.is_ready(v) for v in _oldest_and_below()),
                    reason="the release environments of the oldest consumer and the release below "
                           "are not built; set JAXPORT_BUILD_RELEASE_VENVS=1 to build them")
def test_the_oldest_consumer_of_for_jax_replays_and_the_release_below_refuses(tmp_path):
  """A project's case exported ``for_jax`` the oldest consumer the release table names: that
  release replays it with its own jax.export, the release just below refuses it, and the
  entry's runs_on names that release as its oldest."""
  from jaxport.releases import read_measured
  oldest, below = _oldest_and_below()
  project = tmp_path / "old-consumers"
  (project / "tests").mkdir(parents=True)
  (project / "pyproject.toml").write_text(
      '[project]\nname = "old-consumers"\nversion = "0"\n\n[tool.pytest.ini_options]\n'
      'pythonpath = ["."]\njaxport_cases = ["cases"]\njaxport_store = "golden"\n'
      'jaxport_tests = ["tests/test_golden.py"]\n')
  (project / "tests" / "test_golden.py").write_text(
      "from jaxport.harness.testing import test_record, test_replay  # noqa: F401\n")
  (project / "cases.py").write_text(
      "import jax.numpy as jnp\nimport numpy as np\nfrom jaxport.harness import Case\n\n\n"
      "def cases():\n"
      "  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)\n"
      f"  return [Case('tanh_sum', 'old', lambda a: jnp.tanh(a).sum(0), lambda: ((x,), {{}}),\n"
      f"               for_jax={oldest!r}, min_consumer={oldest!r})]\n")
  _jaxport(project, "record", "--project", ".")
  _jaxport(project, "replay", "--with-jax", oldest, "--project", ".")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  refused = subprocess.run(
      [sys.executable, "-c", "import sys; from jaxport.cli import main; sys.exit(main())",
       "replay", "--with-jax", below, "--project", "."],
      cwd=project, capture_output=True, text=True, timeout=1800, env=env)
  assert refused.returncode == 1, refused.stdout[-2000:] + refused.stderr[-2000:]
  assert f"jax {below}: fail" in refused.stdout
  (entry_id, runs), = read_measured(project).entries.items()
  assert (runs[oldest].runs, runs[below].runs) == (True, False)
  report = tmp_path / "here.json"
  _jaxport(project, "replay", "--project", ".", "--compat-report", str(report))
  (entry,) = json.loads(report.read_text())["entries"]
  assert entry["runs_on"]["cpu"][0] == oldest, entry["runs_on"]
