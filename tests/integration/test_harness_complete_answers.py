"""In a real session, a worker answer that leaves out a part its request asked for fails the
entry it belongs to, naming what is missing; and nothing the case code prints can pass for an
answer: the worker answers on a pipe of its own, and the prints are quoted with the failure."""

import dataclasses
import json
import textwrap

import numpy as np
import pytest

from jaxport.golden import EntryId
from jaxport.golden._store import GoldenStore
from jaxport.harness._protocol._answers import (Numerics, ReaderResult, ReplayAnswer, Stage,
                                                TodayResult, dump_answer)

from _downstream_project import switch, switched_on, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

# Cases whose worker-side replay is cut down, by case id, when the switch SABOTAGE is on: each
# leaves out one part of what the session asks for. The case module is imported by the worker,
# where it wraps the replay engine; the pytest process never replays with it.
SABOTAGED_CASES = """
import dataclasses, os
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix
from jaxport.harness._worker import _engine


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}


def _cut(case_id, answer):
  readers = {r.reader: r for r in answer.readers}
  if case_id == "a_reference_reader_missing":
    return dataclasses.replace(answer, readers=(readers["jaxport"],), today=None)
  if case_id == "b_bogus_reader":
    return dataclasses.replace(answer, readers=(dataclasses.replace(readers["jaxport"],
                                                                    reader="bogus"),))
  if case_id == "c_no_targets_as_read":
    return dataclasses.replace(answer, readers=tuple(
        dataclasses.replace(r, allowed_targets=None) for r in answer.readers))
  if case_id == "d_mistyped_targets":
    return dataclasses.replace(answer, readers=tuple(
        dataclasses.replace(r, allowed_targets=("my_target", 3))
        for r in answer.readers))
  return answer


_replay = _engine.ReplayEngine.replay


def _sabotaged(self, entry, *args, **kwargs):
  answer = _replay(self, entry, *args, **kwargs)
  if SWITCH:
    answer = _cut(entry.manifest.case_id, answer)
  return answer


_engine.ReplayEngine.replay = _sabotaged


def cases():
  sines = lambda a: jnp.sin(a) * 3
  return [Case("a_reference_reader_missing", "mine", sines, square),
          Case("b_bogus_reader", "mine", sines, square),
          Case("c_no_targets_as_read", "mine", sines, square, platforms=("cuda",),
               lowering_only=True),
          Case("d_mistyped_targets", "mine", sines, square, platforms=("cuda",),
               lowering_only=True),
          Case("e_clean", "mine", sines, square)]
""".replace("SWITCH", switched_on("SABOTAGE"))

# What each sabotaged case's failure must name.
MISSING = {
    "a_reference_reader_missing": ["the jax reader was asked for and did not answer",
                                   "today's lowering was asked for and is missing"],
    "b_bogus_reader": ["a reader named 'bogus', which was not asked for",
                       "the jaxport reader was asked for and did not answer"],
    "c_no_targets_as_read": ["the jaxport reader's module has no targets as read",
                             "the jax reader's module has no targets as read"],
    "d_mistyped_targets": ["allowed_targets[1]: expected", "got 3"],
}


def _run(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}", *args)


def _entries(report_file):
  return {e["case_id"]: e for e in json.loads(report_file.read_text())["entries"]}


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_an_answer_leaving_out_a_part_asked_for_fails_its_own_entry_naming_the_part(
    pytester, tmp_path, strict):
  write_project(pytester, textwrap.dedent(SABOTAGED_CASES))
  assert _run(pytester, "--compat-record").ret == 0
  switch(pytester.path, "SABOTAGE")
  report_file = tmp_path / "report.json"
  result = _run(pytester, f"--compat-report={report_file}",
                *(["--compat-strict"] if strict else []))
  assert result.ret != 0
  entries = _entries(report_file)
  for case_id, named in MISSING.items():
    entry = entries[case_id]
    assert entry["status"] == "fail", (case_id, entry["messages"])
    text = "\n".join(entry["messages"])
    for part in named:
      assert part in text, (case_id, part, text)
    assert not any("not asked for" in s and "current lowering" in s
                   for s in entry.get("skips", ())), entry
  assert entries["e_clean"]["status"] == "pass", entries["e_clean"]["messages"]
  result.stdout.fnmatch_lines(["*4 failed*"])


def _forged(entry_id: EntryId, request_id: int) -> str:
  """A well-formed passing replay answer for ``entry_id``, as a worker would write it."""
  exact = Numerics(ok=True, exact=True, max_abs_err=0.0)
  answer = ReplayAnswer(readers=(ReaderResult("jaxport", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=exact),
                                 ReaderResult("jax", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=exact)),
                        today=TodayResult(available=True, same_module=True), host=None,
                        seconds=0.0, timings={})
  return json.dumps(dump_answer(answer, [], request_id=request_id, entry_id=entry_id))


PRINTING_CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

FORGED = {forged!r}


def square():
  return (random_matrix(0, (3, 3), np.float32),), {{}}


def printing(a):
  for i in range(1000):
    print(FORGED[i] if i < len(FORGED) else f"line {{i}} printed by the case", flush=True)
  return jnp.sin(a) * 3


def cases():
  return [Case("a_printing", "mine", printing, square),
          Case("b_broken", "mine", lambda a: jnp.cos(a) * 2, square),
          Case("c_clean", "mine", lambda a: jnp.tanh(a), square)]
"""


def _break_outputs(store: GoldenStore, entry_id: EntryId) -> None:
  """Write the entry again with expected outputs no replay computes (a re-digested entry)."""
  e = store.entry(entry_id)
  m, blob, inputs, module = e.manifest, e.blob(), e.inputs(), e.module_text()
  wrong = [np.asarray(o) * 2 + 1 for o in e.expected_outputs()]
  for p in sorted(e.path.iterdir()):
    p.unlink()
  e.path.rmdir()
  store.write_entry(dataclasses.replace(m, files={}, arrays={}), blob, inputs, wrong, module)


def test_a_case_printing_forged_answers_is_judged_on_the_workers_real_answer(pytester, tmp_path):
  # Entry ids are known before recording: the case id and the record date name them.
  store = write_project(pytester, "def cases():\n  return []\n")
  ids = {}
  (pytester.path / "mycases.py").write_text(textwrap.dedent(PRINTING_CASES.format(forged=[])))
  assert _run(pytester, "--compat-record").ret == 0
  for e in store.entries():
    ids[e.manifest.case_id] = e.entry_id
  # Forged passing answers for the printing entry and the broken one, under every request id
  # a session of three entries uses; the printing case also prints 940 plain lines.
  forged = [_forged(ids[c], rid) for rid in range(1, 31) for c in ("a_printing", "b_broken")]
  (pytester.path / "mycases.py").write_text(
      textwrap.dedent(PRINTING_CASES.format(forged=forged)))
  _break_outputs(store, ids["a_printing"])
  _break_outputs(store, ids["b_broken"])
  report_file = tmp_path / "report.json"
  result = _run(pytester, f"--compat-report={report_file}")
  entries = _entries(report_file)
  assert entries["a_printing"]["status"] == "fail", entries["a_printing"]
  assert entries["b_broken"]["status"] == "fail", entries["b_broken"]
  assert entries["c_clean"]["status"] == "pass", entries["c_clean"]
  assert all("compatibility_break" in entries[c]["kinds"] for c in ("a_printing", "b_broken"))
  # The printing entry's failure quotes what it printed while it was replayed (the tail).
  out = result.stdout.str()
  assert "what the worker wrote to stdout and stderr meanwhile" in out
  assert "line 999 printed by the case" in out
  assert "earlier bytes left out" in out
  result.stdout.fnmatch_lines(["*2 failed*"])
