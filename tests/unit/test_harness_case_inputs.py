"""Every case's inputs are its golden entries' inputs, and come from seeds the case declares.

The store's newest entry of a case holds the inputs it was recorded with; today's
``make_inputs`` must give the same arrays bit for bit, or the entry no longer replays
against its case. Seeds are written per case, so a new row in a case table changes no
other case's inputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from harness.cases import _lapack, all_cases  # noqa: E402
from jaxport.golden._entry import Entry, entry_sort_key  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402
from jaxport.harness._worker import _contract, _corpus

COMPAT_DATA = ROOT / "compat_data"


def _leaves(case) -> list[np.ndarray]:
  """The flat stored form of the case's inputs, made under its 64-bit setting."""
  previous = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", case.enable_x64)
  try:
    args, kwargs = case.make_inputs()
    return [_contract.storable(x) for x in jax.tree.leaves((args, kwargs))]
  finally:
    jax.config.update("jax_enable_x64", previous)


def _newest_entries() -> dict[str, Entry]:
  """Each case's newest entry recorded from the case itself (not imported from jax's corpus)."""
  newest: dict[str, Entry] = {}
  for entry in GoldenStore(COMPAT_DATA).entries():
    m = entry.manifest
    if _corpus.is_corpus_dataset(m):
      continue
    key = entry_sort_key(entry.entry_id)
    held = newest.get(m.case_id)
    if held is None or entry_sort_key(held.entry_id)[3:] < key[3:]:
      newest[m.case_id] = entry
  return newest


def _same_arrays(want: list[np.ndarray], got: list[np.ndarray]) -> str | None:
  if len(want) != len(got):
    return f"{len(got)} input arrays, the entry holds {len(want)}"
  for i, (w, g) in enumerate(zip(want, got)):
    if (w.shape, w.dtype) != (g.shape, g.dtype) or w.tobytes() != g.tobytes():
      return f"input {i}: {g.dtype}{list(g.shape)} differs from the entry's {w.dtype}{list(w.shape)}"
  return None


def test_every_case_makes_the_inputs_of_its_newest_golden_entry():
  cases = all_cases()
  entries = _newest_entries()
  compared, wrong = 0, {}
  for case_id, entry in entries.items():
    case = cases.get(case_id)
    if case is None or entry.manifest.platform != case.host_platform:
      continue
    problem = _same_arrays(entry.inputs(), _leaves(case))
    if problem is not None:
      wrong[entry.entry_id] = problem
    compared += 1
  assert not wrong, f"inputs differ from the golden entries: {wrong}"
  # The store has an entry of every CPU case, those older releases recorded among them.
  assert compared >= len([c for c in cases.values() if c.host_platform == "cpu"])


def test_a_row_inserted_into_a_case_table_changes_no_other_case_inputs(monkeypatch):
  before = {c.case_id: _leaves(c) for c in _lapack.cases()}
  first = _lapack._ROUTINES[0]
  made_up = ("made_up_op", 4242, "lapack_potrf", first[3], first[4], first[5], first[6])
  monkeypatch.setattr(_lapack, "_ROUTINES", (made_up, *_lapack._ROUTINES))
  after = {c.case_id: _leaves(c) for c in _lapack.cases()}
  assert set(after) - set(before) == {f"made_up_op_{name}" for name in _lapack.DTYPES}
  for case_id, leaves in before.items():
    assert _same_arrays(leaves, after[case_id]) is None, case_id


def test_each_lapack_row_declares_a_seed_of_its_own():
  seeds = [row[1] for row in _lapack._ROUTINES]
  assert all(isinstance(s, int) for s in seeds)
  assert len(set(seeds)) == len(seeds)
