"""The repository's own variables (fuzzing, the conformance run) are read in one place, and a
bad value is refused naming the variable and the fix."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness import _environment as env  # noqa: E402
from jaxport.errors import SettingsError  # noqa: E402


def test_the_fuzz_budget_takes_a_positive_number_or_the_default(monkeypatch):
  monkeypatch.delenv(env.FUZZ_EXAMPLES_ENV, raising=False)
  assert env.fuzz_examples(1000) == 1000
  monkeypatch.setenv(env.FUZZ_EXAMPLES_ENV, "25")
  assert env.fuzz_examples(1000) == 25
  for bad in ("lots", "0", "-3"):
    monkeypatch.setenv(env.FUZZ_EXAMPLES_ENV, bad)
    with pytest.raises(SettingsError, match=f"{env.FUZZ_EXAMPLES_ENV}='{bad}'.*positive whole"):
      env.fuzz_examples(1000)


def test_the_findings_file_is_named_or_absent(monkeypatch, tmp_path):
  monkeypatch.setenv(env.JAX_FINDINGS_ENV, "")
  assert env.jax_findings_file() is None
  monkeypatch.setenv(env.JAX_FINDINGS_ENV, str(tmp_path / "f.jsonl"))
  assert env.jax_findings_file() == tmp_path / "f.jsonl"


def test_the_conformance_settings_name_what_is_missing(monkeypatch, tmp_path):
  monkeypatch.setenv(env.CONFORMANCE_MODE_ENV, "both")
  with pytest.raises(SettingsError, match=f"{env.CONFORMANCE_MODE_ENV} must be one of jax"):
    env.conformance_settings()
  monkeypatch.setenv(env.CONFORMANCE_MODE_ENV, "jaxport")
  monkeypatch.delenv(env.CONFORMANCE_OUT_ENV, raising=False)
  with pytest.raises(SettingsError, match=f"{env.CONFORMANCE_OUT_ENV} is unset"):
    env.conformance_settings()
  monkeypatch.setenv(env.CONFORMANCE_OUT_ENV, str(tmp_path / "out.json"))
  monkeypatch.setenv(env.CONFORMANCE_UTIL_ENV, str(tmp_path / "util.py"))
  got = env.conformance_settings()
  assert (got.mode, got.out, got.util) == ("jaxport", tmp_path / "out.json", tmp_path / "util.py")
