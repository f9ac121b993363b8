"""``jaxport bisect`` and ``jaxport record/replay --with-jax`` run the release-venv tools of a
jaxport source checkout; in any other project they refuse with a message, exit 2, and no
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jaxport.cli import _checkout
from jaxport.errors import CheckoutError, JaxportError

COMMANDS = {
    "bisect": ["bisect", "cpu/f/c/2026-01-01_jax-0.5.3", "--releases", "0.5.3..0.10.2"],
    "record --with-jax": ["record", "--with-jax", "0.9.2"],
    "replay --with-jax": ["replay", "--with-jax", "0.8.3"],
}


def _downstream_project(root: Path) -> Path:
  """A project that is not a jaxport checkout, even with a file where a checkout has its tools."""
  (root / "pyproject.toml").write_text('[project]\nname = "downstream"\n\n'
                                       '[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n')
  tools = root.joinpath(*_checkout.RELEASE_TOOLS)
  tools.mkdir(parents=True)
  for name in ("bisect_release.py", "record_with_jax.py", "replay_with_jax.py"):
    (tools / name).write_text("raise SystemExit('must not run')\n")
  return root


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_release_tool_command_outside_a_checkout_refuses_naming_no_path(tmp_path, command):
  project = _downstream_project(tmp_path)
  proc = subprocess.run(
      [sys.executable, "-c", "import sys; from jaxport.cli import main; sys.exit(main())",
       *COMMANDS[command]], cwd=project, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 2, proc.stderr
  assert "needs a jaxport source checkout" in proc.stderr
  assert "Traceback" not in proc.stderr and "must not run" not in proc.stderr
  assert "harness" not in proc.stderr and "tools/" not in proc.stderr and str(tmp_path) not in proc.stderr


def test_a_checkout_is_recognised_by_its_distribution_name(tmp_path):
  project = _downstream_project(tmp_path)
  assert not _checkout.is_checkout(project)
  with pytest.raises(CheckoutError, match="^bisect needs a jaxport source checkout") as e:
    _checkout.require_tool(project, "bisect_release.py", "bisect")
  assert isinstance(e.value, JaxportError)
  (project / "pyproject.toml").write_text('[project]\nname = "jaxport"\n')
  assert _checkout.require_tool(project, "bisect_release.py", "bisect") == str(
      Path(*_checkout.RELEASE_TOOLS, "bisect_release.py"))
  with pytest.raises(CheckoutError):
    _checkout.require_tool(project, "no_such_tool.py", "bisect")


def test_the_repository_itself_is_a_checkout():
  root = Path(__file__).resolve().parents[2]
  assert _checkout.is_checkout(root)
  for name in ("bisect_release.py", "record_with_jax.py", "replay_with_jax.py"):
    assert (root / _checkout.require_tool(root, name, "bisect")).is_file()
