"""Checkers in a downstream project's sessions. Built-in structured checkers (``eigh``,
``cholesky``) of cases with a VJP replay green: they judge the function's outputs, the VJP's
by tolerance. A checker's own error is the case's: record refuses an entry its checker raises
on; a checker that raises on replay is one ``checker_error`` line, never a
``compatibility_break`` or a traceback; once the case's checker accepts the entry's recorded
outputs, ``--compat-update`` records the case anew and the next run is green."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from _downstream_project import STORE, record_once
from jaxport.golden._store import GoldenStore

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, judged, random_matrix

PICKY_RAISES, SINES_CHECKER, WITH_DATA_CASE = {raises!r}, {checker!r}, {data!r}


@judged
def picky(j, inputs, expected, actual):
  if PICKY_RAISES:
    raise ValueError("picky cannot judge these outputs")
  for i, (w, g) in enumerate(zip(expected, actual)):
    j.close(f"output {{i}}", w, g)


CHECKERS = {{"picky": picky}}


def symmetric():
  m = random_matrix(0, (3, 3), np.float32)
  return ((m + m.T) / 2 + 3 * np.eye(3, dtype=np.float32),), {{}}


def data():
  return (random_matrix(1, (3, 2), np.float32),), {{}}


def eigh(a):
  w, v = jnp.linalg.eigh(a)
  return w, v


def cases():
  out = [Case("eigh_vjp", "mine", eigh, symmetric, checker="eigh", vjp_order=1),
         Case("cholesky_vjp", "mine", jnp.linalg.cholesky, symmetric, checker="cholesky",
              vjp_order=1),
         Case("sines", "mine", jnp.sin, symmetric, checker=SINES_CHECKER)]
  if WITH_DATA_CASE:
    # The input is data, not the matrix eigh's checker reconstructs.
    out.append(Case("eigh_of_data", "mine", lambda x: eigh(x @ x.T), data, checker="eigh"))
  return out
"""


def _cases(raises=False, checker="picky", data=False) -> str:
  return textwrap.dedent(CASES.format(raises=raises, checker=checker, data=data))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
  """The project recorded once, with the case whose checker cannot judge its outputs; the
  record session's output (in a session of its own: pytester's sessions are per test)."""
  root = tmp_path_factory.mktemp("checkers")
  done = record_once(root, _cases(data=True), TODAY)
  return root, done.stdout + done.stderr


def _project(recorded, pytester, **cases) -> GoldenStore:
  """The recorded project in this test's pytester folder, its case module written anew."""
  root, _ = recorded
  shutil.copytree(root, pytester.path, dirs_exist_ok=True,
                  ignore=shutil.ignore_patterns("__pycache__", ".jaxport_cache"))
  (Path(pytester.path) / "mycases.py").write_text(_cases(**cases))
  return GoldenStore(Path(pytester.path) / STORE)


def _session(pytester, tmp_path, name, *args):
  """A harness session of the project; its output and its report's entries by id."""
  report_file = tmp_path / f"{name}.json"
  result = pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}",
                              f"--compat-report={report_file}", *args)
  text = result.stdout.str() + result.stderr.str()
  entries = {e["entry_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  return result.ret, text, entries


def test_structured_checkers_of_cases_with_a_vjp_replay_green(recorded, pytester, tmp_path):
  _project(recorded, pytester)
  ret, text, entries = _session(pytester, tmp_path, "replay", "--compat-strict")
  by_case = {e["case_id"]: e for e in entries.values()}
  assert set(by_case) == {"eigh_vjp", "cholesky_vjp", "sines"}, text[-3000:]
  for case_id in ("eigh_vjp", "cholesky_vjp"):
    assert (by_case[case_id]["status"], by_case[case_id]["kinds"]) == ("pass", []), text[-3000:]
  assert ret == 0, text[-3000:]


def test_a_checkers_own_error_is_the_cases_refused_at_record_and_updated_once_fixed(
    recorded, pytester, tmp_path):
  store = _project(recorded, pytester, raises=True)
  # Record refused the entry its own checker raises on, naming the checker and the error.
  _, record_text = recorded
  assert "eigh_of_data" in record_text and "Nothing was recorded" in record_text, record_text
  assert "checker 'eigh' raised ValueError" in record_text, record_text[-3000:]
  assert "on the outputs just recorded" in record_text
  assert not [e for e in store.entries() if e.manifest.case_id == "eigh_of_data"]
  (old,) = [str(e.entry_id) for e in store.entries() if e.manifest.case_id == "sines"]

  # The project's checker now raises, and the case chose another: the update's replay finds
  # the entry's checker_error in one line, never a break, and records the case anew (so the
  # error only warns in that run).
  (Path(pytester.path) / "mycases.py").write_text(_cases(raises=True, checker="allclose"))
  ret, text, entries = _session(pytester, tmp_path, "update", "--compat-update")
  assert ret == 0, text[-3000:]
  sines = entries[old]
  assert (sines["status"], sines["kinds"]) == ("warn", ["checker_error", "signature_change"])
  message = next(m for m in sines["messages"] if m.startswith("[checker_error]"))
  assert message.startswith("[checker_error] checker 'picky' raised ValueError: picky cannot "
                            "judge these outputs judging the ")
  assert "\n" not in message and "accepts the entry's recorded outputs" in message
  assert "compatibility_break" not in text and "Traceback" not in text, text[-3000:]
  assert "updated 1 case(s):" in text and "updated no case" not in text, text[-3000:]
  (new,) = [str(e.entry_id) for e in store.entries()
            if e.manifest.case_id == "sines" and str(e.entry_id) != old]
  assert new in text

  # The new entry passes; the old one, its case's superseded entry, only warns.
  ret, text, entries = _session(pytester, tmp_path, "after")
  assert (entries[new]["status"], entries[old]["status"]) == ("pass", "warn"), text[-3000:]
  assert entries[old]["kinds"] == ["checker_error"]
  assert ret == 0, text[-3000:]


def test_the_release_replayer_judges_structured_checkers_with_a_vjp_alike(recorded):
  """In-process, with the installed jax's export module: the script older releases run."""
  from jaxport_in_release import replayer
  root, _ = recorded
  release = replayer._release
  contract = release.contract()
  store = GoldenStore(root / STORE)
  for case_id in ("eigh_vjp", "cholesky_vjp"):
    (entry,) = [e for e in store.entries() if e.manifest.case_id == case_id]
    result = replayer.replay(str(store.root), str(entry.entry_id),
                             contract.ReleaseExport(release.export_module()), contract,
                             release.checkers())
    assert (result["stage"], result["error"], result.get("matched")) == ("compare", None, True), (
        result)
