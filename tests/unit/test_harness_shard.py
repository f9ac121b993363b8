"""Splitting a store into shards: disjoint, complete, deterministic, balanced, cases kept whole."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.golden import EntryId  # noqa: E402
from jaxport.harness._controller._shard import (  # noqa: E402
    Shard, ShardError, costs_json, read_costs, split)

# Two cases with eight releases each and singles, as a store holds them.
TEXTS = ([f"cpu/lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.{v}" for v in range(8)]
       + [f"cpu/lapack_geqrf/release_qr_f32/2026-11-29_jax-0.{v}" for v in range(8)]
       + [f"cpu/lapack_syevd/eigh_{t}/2026-11-29_jax-0.10.2" for t in ("f32", "f64", "c64", "c128")]
       + [f"cpu/feature_vjp/vjp_{i}/2026-11-29_jax-0.10.2" for i in range(9)])
IDS = [EntryId.parse(t) for t in TEXTS]


def _case(entry_id: EntryId) -> str:
  return entry_id.case_key


@pytest.mark.parametrize("count", [1, 2, 3, 5, 40])
def test_shards_are_disjoint_and_cover_every_entry_with_cases_whole(count):
  shards = [Shard(i, count).select(reversed(IDS)) for i in range(1, count + 1)]
  flat = [e for s in shards for e in s]
  assert sorted(flat) == sorted(IDS)
  assert len(flat) == len(set(flat))
  owner = {_case(e): i for i, s in enumerate(shards) for e in s}
  assert all(owner[_case(e)] == i for i, s in enumerate(shards) for e in s)


def test_the_split_depends_only_on_the_ids_and_costs_not_their_order():
  costs = {str(e): float(len(str(e)) % 7) for e in IDS}
  assert split(IDS, 3, costs) == split(list(reversed(IDS)), 3, dict(reversed(costs.items())))


def test_recorded_costs_balance_the_shards():
  # By count the two eight-release cases weigh most; by cost the eigh entries dominate.
  costs = {str(e): (20.0 if "eigh" in str(e) else 1.0) for e in IDS}
  loads = [sum(costs[str(e)] for e in s) for s in split(IDS, 2, costs)]
  assert max(loads) - min(loads) <= 20.0
  assert all(any("eigh" in str(e) for e in s) for s in split(IDS, 2, costs))
  # Unknown entries cost the median of the known ones.
  partial = {e: c for e, c in costs.items() if "vjp_0" not in e}
  assert split(IDS, 2, partial) == split(IDS, 2, {**partial, str(IDS[-9]): 1.0})


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2", ""])
def test_a_bad_shard_says_what_is_expected(text):
  with pytest.raises(ShardError, match=r"expected I/N with 1 <= I <= N"):
    Shard.parse(text)


def test_costs_round_trip_through_the_timings_file_and_bad_files_are_refused(tmp_path):
  good = tmp_path / "t.json"
  good.write_text(json.dumps(costs_json({IDS[0]: 1.23456}, {IDS[0]: {"call": 1.0}})))
  assert read_costs(good) == {str(IDS[0]): 1.2346}
  for name, text in {"bad.json": "{", "other.json": '{"format": 2, "seconds": {}}',
                     "neg.json": '{"format": 1, "seconds": {"a": -1}}',
                     "bool-format.json": '{"format": true, "seconds": {}}',
                     "bool-seconds.json": '{"format": 1, "seconds": {"a": true}}'}.items():
    (tmp_path / name).write_text(text)
    with pytest.raises(ShardError, match=f"costs file .*{name}.*--compat-timings"):
      read_costs(tmp_path / name)
  with pytest.raises(ShardError, match="missing.json"):
    read_costs(tmp_path / "missing.json")




def test_several_costs_files_are_merged_and_the_option_keeps_each(tmp_path):
  import argparse
  from jaxport.harness._controller import _settings
  first, second = tmp_path / "s1.json", tmp_path / "s2.json"
  first.write_text(json.dumps(costs_json({IDS[0]: 1.0, IDS[1]: 2.0}, {})))
  second.write_text(json.dumps(costs_json({IDS[1]: 3.0, IDS[2]: 0.5}, {})))
  field = _settings.FIELDS_BY_NAME["costs"]
  parser = argparse.ArgumentParser()
  parser.add_argument(field.flag, **field.argparse_kwargs())
  given = getattr(parser.parse_args([f"{field.flag}={first}", f"{field.flag}={second}"]),
                  field.dest)
  assert given == [str(first), str(second)]
  assert field.validate(given) == {str(IDS[0]): 1.0, str(IDS[1]): 3.0, str(IDS[2]): 0.5}
  assert field.validate(str(first)) == {str(IDS[0]): 1.0, str(IDS[1]): 2.0}
