"""Where a LAPACK-calling artifact's range names a release before jax registered its LAPACK
kernels eagerly, the range says what a process must do first; nowhere else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jaxport.golden import EntryId, GoldenStore
from jaxport.releases._version_text import parse_version
from jaxport.releases._features import features_of_blob, runs_on_record
from jaxport.releases._runs_on import EAGER_LAPACK_FROM, lazy_lapack_caveat

STORE = GoldenStore(Path(__file__).resolve().parents[2] / "compat_data")
LAPACK = EntryId.parse("cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2")


def _record(entry_id: EntryId):
  entry = STORE.entry(entry_id)
  return entry, runs_on_record(entry.blob(), entry.manifest)


def test_a_lapack_range_reaching_below_the_eager_release_carries_the_caveat():
  _, record = _record(LAPACK)
  oldest = record.runs_on["cpu"][0]
  assert parse_version(oldest) < parse_version(EAGER_LAPACK_FROM)
  assert f"before {EAGER_LAPACK_FROM} jax registers its LAPACK kernels" in record.summary["cpu"]


def test_an_artifact_without_lapack_calls_carries_no_caveat():
  entry = next(e for e in STORE.entries("cpu", "feature_prng"))
  record = runs_on_record(entry.blob(), entry.manifest)
  assert record.runs_on["cpu"] and "LAPACK" not in record.summary["cpu"]


def test_a_range_from_the_eager_release_on_carries_no_caveat():
  entry, record = _record(LAPACK)
  features = features_of_blob(entry.blob(), entry.manifest)
  from_eager = tuple(r for r in record.runs_on["cpu"]
                     if parse_version(r) >= parse_version(EAGER_LAPACK_FROM))
  assert from_eager and lazy_lapack_caveat(features, "cpu", from_eager) is None
  assert lazy_lapack_caveat(features, "cpu", record.runs_on["cpu"]) is not None
  assert lazy_lapack_caveat(dataclasses.replace(features, custom_calls=()), "cpu",
                            record.runs_on["cpu"]) is None


def test_a_min_consumer_failure_naming_a_release_before_the_eager_one_carries_the_caveat():
  from jaxport.harness._judge._consumers import measured_releases, min_consumer_findings
  from jaxport.releases import runs_on
  entry, record = _record(LAPACK)
  features = features_of_blob(entry.blob(), entry.manifest)
  measured = measured_releases()
  oldest = record.runs_on["cpu"][0]
  below = measured[measured.index(oldest) - 1]
  (found,) = min_consumer_findings(below, "cpu", runs_on(features), measured, "0.10.2",
                                   features=features)
  assert found.kind == "below_min_consumer"
  assert f"before {EAGER_LAPACK_FROM} jax registers its LAPACK kernels" in found.message
