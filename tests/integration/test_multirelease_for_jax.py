"""Artifacts exported with ``for_jax="0.9.2"`` load and compute the same in jax 0.9.2 itself.

Every release case that the consumer can express (``harness/cases/release_cases.py``)
is exported here, under whatever jax runs the test, with
``jaxport.export(..., for_jax=CONSUMER)``, serialized, and then read in the
consumer's own venv by its ``jax.export.deserialize`` and called there with
``Exported.call`` (jax 0.9.2, and the oldest release jaxport writes for, which the release
table names; the release just below it must refuse what is written for it);
the outputs must pass the case's checker and tolerances against the outputs of
this process. Without ``for_jax``, a jax from 0.11.2 on writes modules 0.9.2
cannot read (``harness/expected_status.json``). The release venv is used where it
is built and the test skips, naming the command, where it is not; with
``JAXPORT_BUILD_RELEASE_VENVS=1`` (the nightly workflow) it builds it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

import jaxport  # noqa: E402
from harness.cases import release_cases  # noqa: E402
from jaxport.multirelease import _envs as _venvs  # noqa: E402
from jaxport.multirelease._replay import release_env  # noqa: E402
from jaxport.export import _for_jax, _mlir  # noqa: E402
from jaxport.harness._worker import _contract
from jaxport.releases import _table as release_table  # noqa: E402

OLDEST = _for_jax.oldest_consumer()
_MEASURED = [f.version for f in release_table.releases() if f.measured]
BELOW_OLDEST = _MEASURED[_MEASURED.index(OLDEST) - 1]
CONSUMERS = ("0.9.2", OLDEST)
CONSUMER_SCRIPT = Path(__file__).with_name("_for_jax_consumer.py")
BUILD = os.environ.get("JAXPORT_BUILD_RELEASE_VENVS") == "1"


def _exporter(for_jax: str | None) -> _contract.Exporter:
  return _contract.Exporter(
      export=lambda fun, **kw: jaxport.export(fun, for_jax=for_jax, **kw),
      symbolic_args_specs=lambda args, shapes, constraints: jaxport.symbolic_args_specs(
          args, shapes, constraints=constraints))


def _consumer_cases(consumer: str) -> list:
  """The release cases ``consumer`` records itself (not the legacy-target variants)."""
  return [c for c in release_cases.all_cases()
          if c.recordable_by(consumer) and not c.enable_x64]


def _write_case(folder: Path, case, for_jax: str | None) -> str:
  """Export ``case`` for ``for_jax`` and store what the consumer script reads; the
  StableHLO version the module was written for."""
  args, _ = case.make_inputs()
  inputs = [np.asarray(x) for x in args]
  exp = _contract.export_function(_exporter(for_jax), case.fun, tuple(inputs), {},
                                  polymorphic_shapes=case.polymorphic_shapes,
                                  platforms=case.platforms)
  blob = bytes(exp.serialize(vjp_order=case.vjp_order or 0))
  expected = _contract.run_exported(jaxport.deserialize(blob), inputs)
  folder.mkdir()
  (folder / "exported.bin").write_bytes(blob)
  np.savez(folder / "inputs.npz", *inputs)
  np.savez(folder / "expected.npz", *expected)
  (folder / "comparison.json").write_text(
      json.dumps({"mode": case.checker, "rtol": case.rtol, "atol": case.atol}))
  return _mlir.artifact_version(exp.mlir_module_serialized)


def _needs_venv(consumer: str):
  return pytest.param(consumer, id=consumer, marks=pytest.mark.skipif(
      not BUILD and not _venvs.is_ready(consumer),
      reason=f"the release venv of jax {consumer} is not built; build it with "
             f"jaxport record --with-jax {consumer}, or set "
             "JAXPORT_BUILD_RELEASE_VENVS=1"))


@pytest.mark.slow
@pytest.mark.parametrize("consumer", [_needs_venv(c) for c in CONSUMERS])
def test_artifacts_exported_for_an_older_jax_load_and_match_in_its_own_jax_export(tmp_path, consumer):
  facts = release_table.release_facts(consumer)
  python = _venvs.ensure_venv(consumer)
  cases = _consumer_cases(consumer)
  assert len(cases) >= 16
  written = {c.case_id: _write_case(tmp_path / c.case_id, c, consumer) for c in cases}
  assert set(written.values()) == {facts.stablehlo_writes}, written
  # For contrast (printed, not judged): the same case exported for the installed jax.
  default = "default-" + cases[0].case_id
  default_version = _write_case(tmp_path / default, cases[0], for_jax=None)
  proc = subprocess.run([str(python), str(CONSUMER_SCRIPT), str(tmp_path)], env=release_env(),
                        capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  print(f"\nproducer jax {jax.__version__} -> consumer jax {consumer} "
        f"(StableHLO {facts.stablehlo_writes}):")
  for row in rows:
    print(f"  {row['case']}: {'pass' if row['ok'] else 'FAIL ' + '; '.join(row['problems'])}"
          + (f" (exported without for_jax, StableHLO {default_version})"
             if row["case"] == default else ""))
  rows = [r for r in rows if r["case"] != default]
  assert {r["case"] for r in rows} == set(written)
  assert all(r["jax"] == consumer for r in rows)
  failed = {r["case"]: r["problems"] for r in rows if not r["ok"]}
  assert not failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("consumer", [_needs_venv(BELOW_OLDEST)])
def test_the_release_below_the_oldest_consumer_refuses_what_is_written_for_the_oldest(
    tmp_path, consumer):
  python = _venvs.ensure_venv(consumer)
  case = _consumer_cases(OLDEST)[0]
  _write_case(tmp_path / case.case_id, case, OLDEST)
  proc = subprocess.run([str(python), str(CONSUMER_SCRIPT), str(tmp_path)], env=release_env(),
                        capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
  assert [r["case"] for r in rows] == [case.case_id] and rows[0]["jax"] == consumer
  # Its reader takes the device count from the 16-bit field jaxport does not fill (0 devices),
  # and under a jax whose own envelope is header 12 it reads that header in no case.
  problems = " ".join(rows[0]["problems"])
  assert not rows[0]["ok"] and ("exported for 0 devices" in problems
                                or "unsupported version 12" in problems), rows
