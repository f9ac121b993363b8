"""Run-level coverage, computed once for the session and the merge; shard identity of a report."""

from __future__ import annotations

import dataclasses

import pytest

import _report_helpers as helpers
from jaxport.errors import JaxportError, ReportError
from jaxport.golden import EntryId
from jaxport.report import RunReport, ShardRef
from jaxport.report import _coverage as coverage
from jaxport.report._merge import check_complete


@dataclasses.dataclass(frozen=True)
class _Entry:
  entry_id: EntryId
  targets: tuple[str, ...]
  current_targets: tuple[str, ...] | None = None
  lowering_only: bool | None = False
  platforms: tuple[str, ...] | None = None


def test_target_coverage_names_the_required_and_reachable_targets_no_entry_covers():
  a, b = EntryId.parse("cpu/f/a/2026-01-01_jax-1"), EntryId.parse("cpu/f/b/2026-01-01_jax-1")
  entries = [_Entry(a, ("t1",), ("t1", "t3"))]
  cov = coverage.target_coverage(entries, ["t2", "t1"])
  assert cov.required == ("t1", "t2") and cov.covered == ("t1",)
  assert cov.missing_required == ("t2",) and cov.missing_reachable == ("t3",)
  assert coverage.tripwire([a, b], entries) == [b]
  assert coverage.cases_without_entries(["a", "y"], [a]) == ["y"]


def test_lowering_only_coverage_counts_only_lowering_only_entries_for_that_platform():
  entries = [_Entry(EntryId.parse("cpu/f/a/d_jax-1"), ("k1",), lowering_only=True,
                    platforms=("tpu",)),
             _Entry(EntryId.parse("cpu/f/b/d_jax-1"), ("k2",), lowering_only=False,
                    platforms=("tpu",)),
             _Entry(EntryId.parse("cpu/f/c/d_jax-1"), ("k3",), lowering_only=True,
                    platforms=("cuda",))]
  got = coverage.lowering_only_coverage(entries, {"tpu": ["k1", "k2", "k4"]}, {"k4": "no host"})
  tpu = got["tpu"]
  assert tpu.covered == ("k1",) and tpu.missing == ("k2",) and dict(tpu.unreachable) == {
      "k4": "no host"}
  failures = coverage.session_failures("cpu", coverage.target_coverage(entries, []),
                                       [e.entry_id for e in entries], entries, [], got)
  assert len(failures) == 1 and "1 stable tpu targets have no replayed lowering-only" in failures[0]


def test_a_missing_declared_target_names_the_file_that_declares_it():
  cov = coverage.target_coverage([], ["mine", "theirs"])
  failures = coverage.session_failures("cpu", cov, [], [], [], declared=["mine"],
                                       targets_file="targets.json")
  assert "declares stable in targets.json have no replayed entry: ['mine']" in failures[0]
  assert "stable cpu targets have no replayed entry: ['theirs']" in failures[1]


def _shard(shard: ShardRef | None, source: str) -> RunReport:
  return dataclasses.replace(RunReport.from_json(helpers.run_report(), source), shard=shard)


@pytest.mark.parametrize("given, problem", [
    (((1, 3), (3, 3)), r"missing \['2/3'\]"),
    (((1, 2), (1, 2), (2, 2)), r"repeated \['1/2'\]"),
    (((1, 2), (2, 3)), r"splits into \[2, 3\] shards"),
    (((1, 2), None), "did not run with --compat-shard"),
])
def test_a_checked_merge_refuses_anything_but_every_shard_of_one_run_once(given, problem):
  reports = [_shard(None if s is None else ShardRef(*s), f"r{i}.json") for i, s in enumerate(given)]
  with pytest.raises(ReportError, match=problem):
    check_complete(reports)
  assert issubclass(ReportError, JaxportError)


def test_every_shard_once_is_complete():
  assert check_complete([_shard(ShardRef(2, 2), "b"), _shard(ShardRef(1, 2), "a")]) == 2


def test_a_shard_out_of_range_is_refused_where_it_is_read():
  data = {**helpers.run_report(), "shard": {"index": 3, "count": 2}}
  with pytest.raises(ReportError, match="shard: expected 1 <= index <= count, got 3/2"):
    RunReport.from_json(data, "r.json")
