"""What one replay reads or computes once: a module's signatures for both readers, today's export
read back once per case, and jax's caches cleared between entries so that a worker does not grow
with the store, the harness's executables kept."""

import dataclasses
import json

import jax
import numpy as np
import pytest
from _harness_paths import ROOT, repo_project
from _python_child import run_python

from jaxport.errors import DeserializationError
from jaxport.golden import EntryId, GoldenStore
from jaxport.harness._worker import (_case_runs, _engine, _executables, _jax_setup, _kept_reads,
                                     _module_reads)
from jaxport.harness._protocol._answers import Stage

ENTRY = "cpu/feature_pytrees/kwargs_pytree/2026-11-29_jax-0.10.2"
OTHERS = ("cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2",
          "cpu/lapack_potrf/cholesky_f64/2026-11-29_jax-0.10.2",
          "cpu/lapack_potrf/cholesky_c64/2026-11-29_jax-0.10.2")


@pytest.fixture(scope="module")
def engine():
  engine = _engine.ReplayEngine(repo_project())
  yield engine
  engine.close()


@pytest.fixture(scope="module")
def store():
  return GoldenStore(ROOT / "compat_data")


def test_both_readers_of_a_lowering_only_replay_parse_the_module_for_signatures_once(
    engine, store, monkeypatch):
  entry = store.entry(EntryId.parse(ENTRY))
  parsed: list[bytes] = []
  signatures = _kept_reads.read_signatures

  def counted(module):
    parsed.append(bytes(module))
    return signatures(module)

  # Parsed, not taken from an earlier run's kept reads.
  monkeypatch.setattr(_kept_reads, "_kept", None)
  monkeypatch.setitem(_kept_reads._READERS, _kept_reads.SIGNATURES, counted)
  answer = engine.replay(entry, today=False, run=False)
  assert [r.reader for r in answer.readers] == ["jaxport", "jax"]
  assert all(r.stage is Stage.MODULE and r.error is None and not r.problems
             for r in answer.readers)
  assert len(parsed) == 1


def test_a_module_that_cannot_be_read_raises_for_each_caller_and_nothing_is_kept():
  reads = _module_reads.ModuleReads()
  for _ in range(2):
    with pytest.raises(DeserializationError):
      reads.signatures(b"not a module")
  assert not reads._views


def test_todays_export_is_read_back_once_for_runs_on_other_inputs(engine, store, monkeypatch):
  m = store.entry(EntryId.parse(ENTRY)).manifest
  case = engine.case_of(m)
  exported = engine._export_today(case)
  assert not isinstance(exported, str), exported
  exp = exported[0]
  _, _, leaves = _case_runs.case_inputs(case)
  read_back = []
  deserialize = _engine._api.deserialize

  def counted(*args, **kwargs):
    read_back.append(1)
    return deserialize(*args, **kwargs)

  monkeypatch.setattr(_engine._api, "deserialize", counted)
  with _jax_setup.jax_config(_jax_setup.case_jax_config(case)):
    first = engine._run_today(case, exp, leaves, 0)
    doubled = [x * 2 if np.issubdtype(x.dtype, np.floating) else x for x in leaves]
    second = engine._run_today(case, exp, doubled, 0)
    direct = _case_runs.run_exported(exp, doubled)
  assert not isinstance(first, str) and not isinstance(second, str)
  assert len(read_back) == 1
  for got, want in zip(second, direct):
    np.testing.assert_array_equal(got, want)


def test_jax_caches_are_cleared_every_so_many_entries_between_entries(engine, store, monkeypatch):
  cleared = []
  monkeypatch.setattr(_engine, "JAX_CACHES_CLEARED_EVERY", 2)
  monkeypatch.setattr(engine, "_since_cleared", 0)
  monkeypatch.setattr(_engine.jax, "clear_caches", lambda: cleared.append(1))
  for entry_id in (ENTRY, *OTHERS, ENTRY):
    engine.replay(store.entry(EntryId.parse(entry_id)), today=False, run=False)
  assert len(cleared) == 2


def test_clearing_jax_caches_keeps_the_executables_memo():
  _executables.share_within_process()
  try:
    x = np.ones(4, np.float32)
    jax.jit(lambda x: x * 7 + 1)(x)
    kept = dict(_executables._memo)
    assert kept
    jax.clear_caches()
    assert dict(_executables._memo) == kept
  finally:
    _executables.stop_sharing()


CONFIGURED = '''
import json, sys
import jax
from jaxport.harness._worker import _jax_setup
_jax_setup.configure_jax(sys.argv[1] or None, share_executables=True, own_process=sys.argv[2] == "1")
print(json.dumps([jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir]))
'''


@pytest.mark.parametrize("cache_dir, own_process, expected", [
    ("", "1", [False, None]),
    ("DIR", "1", [True, "DIR"]),
    ("", "0", [True, None]),
])
def test_a_worker_without_a_cache_directory_turns_jax_compilation_cache_off(
    tmp_path, cache_dir, own_process, expected):
  where = str(tmp_path / "cache") if cache_dir else ""
  # A child of its own (forked from a parent that imported jax): the worker's setting is made
  # once per process.
  out = run_python(f"import sys\nsys.argv[1:] = {[where, own_process]!r}\n{CONFIGURED}",
                   cwd=ROOT, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  got = json.loads(out.stdout.strip().splitlines()[-1])
  assert got == [expected[0], where if cache_dir else None]


def _from_another_jax(m):
  return dataclasses.replace(m, producer=dataclasses.replace(m.producer, jax="0.0.1"))


@pytest.mark.parametrize("read_first, runs", [("today's", 0), ("another", 1), (None, 1)])
def test_todays_early_run_is_left_out_when_the_entry_is_todays_module_up_to_locations(
    engine, store, monkeypatch, read_first, runs):
  m = _from_another_jax(store.entry(EntryId.parse(ENTRY)).manifest)
  case = engine.case_of(m)
  exported = engine._export_today(case)
  assert not isinstance(exported, str), exported
  reads = _module_reads.ModuleReads()
  if read_first == "today's":
    reads.by_reader[_engine._api.REFERENCE] = bytes(exported[0].mlir_module_serialized)
  elif read_first == "another":
    reads.by_reader[_engine._api.REFERENCE] = b"a module other than today's"
  ran = []
  monkeypatch.setattr(engine, "_run_today", lambda *args: ran.append(args))
  _, _, leaves = _case_runs.case_inputs(case)
  engine._today_ahead(case, m, leaves, True, reads)
  assert len(ran) == runs
