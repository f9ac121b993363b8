"""An entry of a golden format before per-output tolerances, whose case sets none, is judged
with today's defaults for each output's dtype (the zero it records was the old default taken
from a PRNG key's dtype, never the case's choice), and its result says so; a case that sets a
tolerance keeps the entry's recorded comparison."""

import dataclasses
import datetime
import json
import textwrap

import numpy as np
import pytest

from jaxport.golden import GoldenStore
from jaxport.golden._manifest import Comparison
from jaxport.harness import Project
from jaxport.harness._judge._entry import EntryContext, RunContext, judge
from jaxport.harness._protocol._requests import ReplayRequest
from jaxport.harness._worker import _engine
from jaxport.harness._worker._recording import record_case

DAY = datetime.date(2026, 6, 1)

CASES = textwrap.dedent('''
    import jax, jax.numpy as jnp, numpy as np
    from jaxport.harness import Case

    def langevin(key, x0):
      return x0 + 0.1 * jax.random.normal(key, x0.shape, x0.dtype)

    def inputs():
      return (jax.random.key_data(jax.random.key(0)), np.linspace(0.5, 2.0, 8, dtype=np.float32)), {}

    def keyed(key, x0):
      return langevin(jax.random.wrap_key_data(key), x0)

    def cases():
      return [Case("langevin", "random", keyed, inputs),
              Case("langevin_exact", "random", keyed, inputs, rtol=0.0, atol=0.0)]
''')


@pytest.fixture(scope="module")
def older_store(tmp_path_factory):
  """The two cases recorded today, then rewritten as golden format 2 would have held them
  (one zero comparison, no per-output tolerances), with each recorded output one ulp off."""
  root = tmp_path_factory.mktemp("older_format")
  (root / "older_cases.py").write_text(CASES)
  project = Project(case_modules=("older_cases",), store=root / "compat_data", paths=(str(root),))
  with pytest.MonkeyPatch.context() as patch:
    patch.syspath_prepend(str(root))
    engine = _engine.ReplayEngine(project)
    store = GoldenStore(project.store)
    for case in engine.registry.by_id.values():
      rec = record_case(case, DAY)
      expected = [np.nextafter(x, np.inf).astype(x.dtype) for x in rec.expected]
      manifest = dataclasses.replace(rec.manifest, format_version=2, tolerances=None,
                                     comparison=Comparison(rec.manifest.comparison.mode, 0.0, 0.0))
      store.write_entry(manifest, rec.blob, rec.inputs, expected, rec.module_text)
    yield engine, store
    engine.close()


def store_root(entry):
  return entry.path.parents[3]


def _judged(engine, entry):
  answer = engine.replay(entry, today=False)
  request = ReplayRequest(root=str(store_root(entry)), entry_id=entry.entry_id,
                          readers=("jaxport", "jax"), current=False)
  return answer, judge(entry.entry_id, answer, request, EntryContext(entry.manifest),
                       RunContext(today=DAY, window_days=180, consumer=None))


def test_an_older_entry_whose_case_sets_no_tolerance_is_judged_with_todays_defaults(older_store):
  engine, store = older_store
  entry = next(e for e in store.entries() if e.manifest.case_id == "langevin")
  assert json.loads((entry.path / "manifest.json").read_text())["format_version"] == 2
  answer, result = _judged(engine, entry)
  assert all(r.numerics is not None and r.numerics.ok for r in answer.readers)
  # Within today's tolerance, not bitwise: drift, which passes.
  assert str(result.status) == "drift" and "numerics_drift" in result.kinds
  (note,) = [s for s in result.skips if s.startswith("comparison:")]
  assert "golden format 2" in note and "case langevin never set" in note
  assert "records one rtol 0, atol 0" in note and "output 0 (float32) rtol 0.0001" in note
  assert "--compat-update" in note


def test_an_older_entry_whose_case_sets_a_tolerance_keeps_the_recorded_one(older_store):
  engine, store = older_store
  entry = next(e for e in store.entries() if e.manifest.case_id == "langevin_exact")
  answer, result = _judged(engine, entry)
  assert answer.comparison_note is None
  assert str(result.status) == "fail"
  assert any("elements differ beyond rtol=0, atol=0" in m for m in result.messages)
