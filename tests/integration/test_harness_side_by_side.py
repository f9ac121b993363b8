"""An entry's readers replayed side by side, with an old record's upgraded run started before
its record fails, answer exactly as one reader after the other does."""

import json

import pytest

from _python_child import run_python
from _harness_paths import ROOT

pytestmark = pytest.mark.slow

# A record that runs as recorded, and one whose targets jaxlib dropped (it runs upgraded).
RUNS = "cpu/lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.9.2"
UPGRADED = "cpu/lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.4.30"

SCRIPT = '''
import json, sys
sys.path.insert(0, "tests/integration")
ENTRY_IDS = (RUNS, UPGRADED)
from _harness_paths import repo_project
from jaxport.golden import EntryId, GoldenStore
from jaxport.harness._worker import _engine, _jax_setup
from jaxport.harness._judge._findings import reproduced

_jax_setup.configure_jax(share_executables=True)
_jax_setup.warm_native_kernels()  # as a long-lived worker starts
store = GoldenStore("compat_data")
answers = {}
for threads in (True, False):
  engine = _engine.ReplayEngine(repo_project(), threads=threads)
  for entry_id in ENTRY_IDS:
    answer = engine.replay(store.entry(EntryId.parse(entry_id)))
    d = {k: v for k, v in answer.to_json().items() if k not in ("seconds", "timings")}
    answers[f"{entry_id} {threads}"] = {**d, "ok": [reproduced(r) for r in answer.readers]}
  engine.close()
print(json.dumps(answers))
'''


def test_readers_side_by_side_answer_as_one_after_another():
  out = run_python(f"RUNS, UPGRADED = {RUNS!r}, {UPGRADED!r}\n{SCRIPT}", cwd=ROOT, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  answers = json.loads(out.stdout.strip().splitlines()[-1])
  for entry_id in (RUNS, UPGRADED):
    assert answers[f"{entry_id} True"] == answers[f"{entry_id} False"], entry_id
  upgraded = answers[f"{UPGRADED} True"]["readers"]
  assert [r["reader"] for r in upgraded] == ["jaxport", "jax"]
  assert all(r["upgraded"]["rules"] for r in upgraded)
  assert answers[f"{UPGRADED} True"]["ok"] == [True, True]
  assert all(r["upgraded"] is None for r in answers[f"{RUNS} True"]["readers"])
