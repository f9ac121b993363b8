"""Each entry starts from the same jax configuration: a setting one case changes with
``jax.config.update`` while it is traced is put back before the next entry, and the case that
changed it gets a warning naming the setting, in replay and in record."""

import json
import textwrap

import pytest

from _downstream_project import CASE_PRELUDE, switch, switched_on, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = CASE_PRELUDE + """
import jax


def leaking(a):
  if SWITCH:
    jax.config.update("jax_numpy_rank_promotion", "raise")
    jax.config.update("jax_default_prng_impl", "rbg")
  return jnp.sin(a)


def promoting(a):
  return a + jnp.ones((3,), a.dtype)  # rank promotion: an error under "raise"


def keyed(a):
  return a + jax.random.uniform(jax.random.key(0), a.shape, a.dtype)


def cases():
  return [Case("a_leaking", "mine", leaking, square),
          Case("b_promoting", "mine", promoting, square),
          Case("c_keyed", "mine", keyed, square)]
""".replace("SWITCH", switched_on("CASE_LEAKS"))

RUN = ("-p", "no:cacheprovider", "--compat-today=2026-12-01", "-p", "no:xdist")


def test_a_setting_changed_by_one_case_leaves_the_later_entries_verdicts_alone(
    pytester, tmp_path):
  write_project(pytester, textwrap.dedent(CASES))
  assert pytester.runpytest(*RUN, "--compat-record").ret == 0
  switch(pytester.path, "CASE_LEAKS")

  report_file = tmp_path / "report.json"
  result = pytester.runpytest(*RUN, f"--compat-report={report_file}")
  entries = {e["case_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  assert entries["b_promoting"]["status"] == "pass", entries["b_promoting"]
  assert entries["c_keyed"]["status"] == "pass", entries["c_keyed"]
  leaking = entries["a_leaking"]
  assert leaking["status"] == "warn" and leaking["kinds"] == ["jax_config_changed"], leaking
  text = "\n".join(leaking["messages"])
  assert "jax_numpy_rank_promotion" in text and "jax_default_prng_impl" in text
  assert result.ret == 0, result.stdout.str()[-3000:]

  # Recording again: the later cases' entries equal the first ones (no leaked PRNG in them),
  # and the case that changed the settings is told so.
  record_report = tmp_path / "record.json"
  recorded = pytester.runpytest(*RUN, "--compat-record",
                                           f"--compat-report={record_report}")
  assert recorded.ret == 0, recorded.stdout.str()[-3000:]
  by_case = {r["case_id"]: r for r in json.loads(record_report.read_text())["recorded"]}
  assert by_case["b_promoting"]["action"] == "unchanged", by_case["b_promoting"]
  assert by_case["c_keyed"]["action"] == "unchanged", by_case["c_keyed"]
  assert "jax_default_prng_impl" in by_case["a_leaking"]["message"]
  assert "jax_default_prng_impl" in recorded.stdout.str()
