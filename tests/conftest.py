"""Fixtures shared across the suite: the reference (``jax.export``) and jaxport side by side."""

import jax.export
import pytest

import jaxport
from jaxport.cli import _harness_run

EXPORT_APIS = {"jax": jax.export, "jaxport": jaxport}


@pytest.fixture(scope="module", params=sorted(EXPORT_APIS))
def exporter(request):
  """``jax.export`` or ``jaxport`` (``.export``, ``.DisabledSafetyCheck``, ``.symbolic_shape``):
  jaxport calls the records of both."""
  return EXPORT_APIS[request.param]


@pytest.fixture
def fake_harness_run(monkeypatch, tmp_path):
  """Make ``tmp_path`` a jaxport checkout (its release tools present) and record, instead of
  running, the commands ``jaxport record``/``replay`` start. Call it with the exit status the fake run
  reports; it returns the list of ``(command, cwd)`` the CLI ran."""
  def install(returncode: int = 0) -> list:
    calls = []
    monkeypatch.setattr(_harness_run, "run_forwarding_signals",
                        lambda cmd, cwd: calls.append((cmd, cwd)) or returncode)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "jaxport"\n')
    (tmp_path / "harness" / "tools").mkdir(parents=True)
    for tool in ("record_with_jax.py", "replay_with_jax.py"):
      (tmp_path / "harness" / "tools" / tool).write_text("")
    return calls
  return install
