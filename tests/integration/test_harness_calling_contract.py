"""A downstream project's calling contract is part of its golden: a renamed params key, a changed
input dtype, a changed output shape and reordered outputs each fail the case's newest entry
naming the case and the path; ``--compat-update`` accepts each, after which the replay is green
(the older entries judged by their readers only, "earlier contract"); a change reverted the
same day is recorded as the day's next revision."""

import json
import textwrap

import pytest

from _downstream_project import write_project
from jaxport.golden import EntryId
from jaxport.golden._entry import entry_sort_key

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

KEY, DTYPE, COLUMN, SWAP = {key!r}, np.{dtype}, {column!r}, {swap!r}


def params():
  return ({{KEY: random_matrix(0, (3,), np.float32)}}, random_matrix(1, (3,), np.float32)), {{}}


def mlp(p, x):
  return jnp.tanh(p[KEY] * x)


def cast_inputs():
  return (random_matrix(2, (3,), np.float32).astype(DTYPE),), {{}}


def cast(x):
  return jnp.sin(x.astype(np.float32))


def vector():
  return (random_matrix(3, (3,), np.float32),), {{}}


def column(x):
  y = jnp.cos(x)
  return (y.reshape(-1, 1) if COLUMN else y), jnp.sum(x)


def pair(x):
  outputs = (jnp.cos(x), jnp.sum(x))
  return outputs[::-1] if SWAP else outputs


def cases():
  return [Case("pair", "mine", pair, vector),
          Case("mlp", "mine", mlp, params),
          Case("cast", "mine", cast, cast_inputs),
          Case("column", "mine", column, vector)]
"""


def _cases(key="w1", dtype="float32", column=False, swap=False):
  return textwrap.dedent(CASES.format(key=key, dtype=dtype, column=column, swap=swap))


def _run(pytester, tmp_path, name, *args):
  report_file = tmp_path / f"{name}.json"
  result = pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}",
                                         f"--compat-report={report_file}", *args)
  return result, json.loads(report_file.read_text())


def _by_case(report, newest_only=True):
  out = {}
  for e in sorted(report["entries"],
                  key=lambda e: entry_sort_key(EntryId.parse(e["entry_id"]))):
    out.setdefault(e["case_id"], []).append(e)
  return {c: (es[-1] if newest_only else es) for c, es in out.items()}


def test_a_changed_calling_contract_fails_names_the_path_and_is_accepted_by_update(
    pytester, tmp_path):
  store = write_project(pytester, _cases())
  assert pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}",
                                       "--compat-record").ret == 0
  assert len(store.entries()) == 4

  # The params key renamed, the input cast to float16, the output made a column, the outputs
  # reordered.
  (pytester.path / "mycases.py").write_text(_cases(key="w1x", dtype="float16", column=True,
                                                   swap=True))
  result, report = _run(pytester, tmp_path, "changed")
  assert result.ret != 0
  newest = _by_case(report)
  named = {"mlp": ["input args[0]['w1'] (float32[3]) removed",
                   "input args[0]['w1x'] (float32[3]) added"],
           "cast": ["input args[0]: float32[3] became float16[3]"],
           "column": ["output[0]: float32[3] became float32[3, 1]"],
           "pair": ["output[0]: float32[3] became float32[]",
                    "output[1]: float32[] became float32[3]"]}
  for case_id, lines in named.items():
    entry = newest[case_id]
    assert entry["status"] == "fail", entry
    assert "signature_change" in entry["kinds"] and "export_error" not in entry["kinds"], entry
    text = "\n".join(entry["messages"])
    for line in lines:
      assert f"calling contract of case {case_id}: {line}" in text, text
  assert "mlp changed since this entry was recorded" in result.stdout.str()

  # Accepted: one new entry per case, and the replay after it is green.
  result, report = _run(pytester, tmp_path, "update", "--compat-update")
  assert [u["action"] for u in report["updated"]] == ["written"] * 4, report["updated"]
  assert any("signature: input args[0]['w1x'] (float32[3]) added" in line
             for line in result.stdout.lines), result.stdout.str()
  result, report = _run(pytester, tmp_path, "accepted")
  assert result.ret == 0, result.stdout.str()
  for case_id, (old, new) in _by_case(report, newest_only=False).items():
    assert new["status"] == "pass" and old["status"] == "pass", (old, new)
    assert any(s["what"] == old["entry_id"] and s["why"].startswith("earlier contract")
               for s in report["skips"]), report["skips"]

  # Reverted the same day: the newest revision differs, and update records the next one.
  (pytester.path / "mycases.py").write_text(_cases(key="w1", dtype="float16", column=True,
                                                   swap=True))
  result, report = _run(pytester, tmp_path, "reverted")
  assert _by_case(report)["mlp"]["status"] == "fail"
  result, report = _run(pytester, tmp_path, "revert-update", "--compat-update")
  (mlp,) = [u for u in report["updated"] if u["case_id"] == "mlp"]
  assert mlp["action"] == "written" and "2026-12-01.3_jax-" in mlp["entry_id"], mlp
  result, report = _run(pytester, tmp_path, "after-revert")
  assert result.ret == 0, result.stdout.str()


SETTINGS = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix


def vector():
  return (random_matrix(3, (3,), np.float32),), {{}}


def cases():
  return [Case("sines", "mine", jnp.sin, vector{settings})]
"""


def test_changed_comparison_settings_are_a_case_change_and_a_checker_typo_names_the_known_ones(
    pytester, tmp_path):
  write_project(pytester, textwrap.dedent(SETTINGS.format(settings="")))
  assert pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}",
                                       "--compat-record").ret == 0
  for settings, named in ((", rtol=1e-2, atol=1e-3", ["comparison: rtol 0.0001 became 0.01",
                                                       "comparison: atol 1e-05 became 0.001"]),
                          (', checker="allclse"', ["comparison: checker 'allclose' became "
                                                   "'allclse' (not a checker of the project; "
                                                   "known: ["])):
    (pytester.path / "mycases.py").write_text(textwrap.dedent(SETTINGS.format(settings=settings)))
    result, report = _run(pytester, tmp_path, "settings")
    assert result.ret != 0
    (entry,) = report["entries"]
    assert entry["status"] == "fail" and entry["kinds"] == ["signature_change"], entry
    for line in named:
      assert any(line in m for m in entry["messages"]), (line, entry["messages"])
  # A changed tolerance is accepted by --compat-update; the new entry holds it.
  (pytester.path / "mycases.py").write_text(
      textwrap.dedent(SETTINGS.format(settings=", rtol=1e-2, atol=1e-3")))
  result, report = _run(pytester, tmp_path, "update", "--compat-update")
  assert [u["action"] for u in report["updated"]] == ["written"], report["updated"]
  result, report = _run(pytester, tmp_path, "after")
  assert result.ret == 0, result.stdout.str()
