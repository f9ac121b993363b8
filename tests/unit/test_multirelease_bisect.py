"""Bisecting a golden entry over jax releases: the range, the search and the answer."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.cli import _bisect  # noqa: E402
from jaxport.cli._arguments import build_parser  # noqa: E402
from jaxport.errors import JaxportError  # noqa: E402
from jaxport.golden import EntryId  # noqa: E402
from jaxport.multirelease import _bisect as bisect_release  # noqa: E402
from jaxport.multirelease._bisect import Probe, bisect, releases_in  # noqa: E402
from jaxport._vocabulary import Status  # noqa: E402
from jaxport.harness._judge._release_runs import judge_row  # noqa: E402


def test_releases_in_a_range_are_the_known_ones_in_version_order():
  got = releases_in("0.5.3..0.6.2")
  assert got == ["0.5.3", "0.6.0", "0.6.1", "0.6.2"]
  assert releases_in("0.9.2..0.10.1") == ["0.9.2", "0.10.0", "0.10.1"]
  with pytest.raises(bisect_release.BisectError, match="FIRST..LAST"):
    releases_in("0.5.3")
  with pytest.raises(bisect_release.BisectError, match="0.99.0 is not a release of jaxport's release table"):
    releases_in("0.5.3..0.99.0")
  assert issubclass(bisect_release.BisectError, JaxportError)


def _prober(first_bad: int | None, releases: list[str], calls: list[str]):
  def probe(v: str) -> Probe:
    calls.append(v)
    bad = first_bad is not None and releases.index(v) >= first_bad
    return Probe(v, Status.FAIL if bad else Status.PASS, "run" if bad else "compare",
                 f"broken in {v}" if bad else None)
  return probe


@pytest.mark.parametrize("first_bad", range(1, 17))
def test_bisection_finds_the_first_failing_release_in_few_probes(first_bad):
  releases = [f"0.{i}.0" for i in range(17)]
  calls: list[str] = []
  good, bad, probes = bisect(releases, _prober(first_bad, releases, calls))
  assert bad.release == releases[first_bad] and good == releases[first_bad - 1]
  assert bad.error == f"broken in {releases[first_bad]}"
  assert len(calls) == len(set(calls)) <= math.ceil(math.log2(len(releases) + 1))
  assert [p.release for p in probes] == [v for v in releases if v in calls]


def test_bisection_reports_no_break_and_a_break_at_the_start():
  releases = ["0.5.3", "0.6.2", "0.7.2"]
  good, bad, probes = bisect(releases, _prober(None, releases, []))
  assert (good, bad) == ("0.7.2", None) and len(probes) == 2
  good, bad, probes = bisect(releases, _prober(0, releases, []))
  assert good is None and bad.release == "0.5.3" and len(probes) == 2


@pytest.mark.parametrize("first_bad", [None, *range(6)])
def test_six_releases_take_three_probes_wherever_the_break_is(first_bad):
  releases = ["0.8.3", "0.9.0", "0.9.1", "0.9.2", "0.10.0", "0.10.1"]
  calls: list[str] = []
  good, bad, _ = bisect(releases, _prober(first_bad, releases, calls))
  assert len(calls) <= 3
  if first_bad is None:
    assert (good, bad) == ("0.10.1", None)
  else:
    assert bad.release == releases[first_bad]
    assert good == (releases[first_bad - 1] if first_bad else None)


def _bisected(monkeypatch, argv: list[str]) -> dict:
  """What the command line hands the bisection (entry, releases, store, options)."""
  seen: dict = {}

  def fake_run_bisect(entry_id, versions, **kw):
    seen.update(entry_id=entry_id, versions=versions, **kw)
    return bisect_release.Bisection(entry_id, tuple(versions), versions[-1], None, ())

  monkeypatch.setattr(_bisect, "run_bisect", fake_run_bisect)
  assert _bisect.run(build_parser().parse_args(["bisect", *argv])) == 0
  return seen


def test_cli_bisects_an_entry_of_the_named_store_over_the_range(monkeypatch, tmp_path, capsys):
  seen = _bisected(monkeypatch, ["cpu/f/c/2026-01-01_jax-0.5.3", "--releases", "0.5.3..0.6.2",
                                 "--root", str(tmp_path), "--available-only", "--envs",
                                 str(tmp_path / "envs"), "--json"])
  assert seen["entry_id"] == EntryId.parse("cpu/f/c/2026-01-01_jax-0.5.3")
  assert seen["store"] == tmp_path
  assert seen["versions"] == ["0.5.3", "0.6.0", "0.6.1", "0.6.2"]
  assert seen["available_only"] is True and seen["venvs"] == tmp_path / "envs"
  assert '"last_good": "0.6.2"' in capsys.readouterr().out


def test_cli_takes_an_entry_directory_as_its_own_store(monkeypatch, tmp_path):
  entry = tmp_path / "store" / "cpu" / "f" / "c" / "2026-01-01_jax-0.5.3"
  entry.mkdir(parents=True)
  (entry / "manifest.json").write_text("{}")
  seen = _bisected(monkeypatch, [str(entry), "--releases", "0.5.3..0.6.2"])
  assert (seen["entry_id"], seen["store"]) == (EntryId.parse("cpu/f/c/2026-01-01_jax-0.5.3"),
                                               tmp_path / "store")
  assert seen["venvs"] is None  # the machine's cache


@pytest.mark.parametrize("argv, message", [
    (["--releases", "0.5.3..0.6.2"], "name either an ENTRY or --blob"),
    (["--blob", "f.bin", "--releases", "0.5.3..0.6.2"], "--blob needs --inputs and --expected")])
def test_cli_refuses_a_bisection_without_one_subject(argv, message):
  with pytest.raises(JaxportError, match=message):
    _bisect.run(build_parser().parse_args(["bisect", *argv]))


def test_an_unknown_entry_is_refused_with_its_path(tmp_path):
  with pytest.raises(bisect_release.BisectError, match="no golden entry 'cpu/x/y/z'"):
    bisect_release.run_bisect(EntryId.parse("cpu/x/y/z"), ["0.5.3", "0.6.2"], store=tmp_path)


def test_a_blob_with_inputs_and_outputs_becomes_an_entry_to_bisect(tmp_path):
  import numpy as np
  from jaxport.golden._store import GoldenStore
  src = next((ROOT / "compat_data/cpu/lapack_trsm/release_triangular_solve_f32").glob("*_jax-0.5.3"))
  entry_id = bisect_release.entry_from_blob(src / "exported.bin", src / "inputs.npz",
                                            src / "expected.npz", tmp_path, rtol=1e-4, atol=1e-4)
  entry = GoldenStore(tmp_path).entry(entry_id)
  entry.verify()
  assert str(entry_id).startswith("cpu/bisect/blob/") and entry.blob() == (src / "exported.bin").read_bytes()
  assert [t.target for t in entry.manifest.custom_call_targets] == ["lapack_strsm_ffi"]
  np.testing.assert_array_equal(entry.inputs()[1], GoldenStore(ROOT / "compat_data").entry(EntryId.parse(
      "/".join(src.parts[-4:]))).inputs()[1])


def test_a_run_without_comparison_counts_and_an_entry_no_release_can_replay_is_refused(
    monkeypatch, tmp_path):
  own = {"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", "stage": "compare",
         "not_compared": "project's own checker"}
  assert Probe.of("0.9.2", judge_row(own, "0.9.2")).ok
  died = {"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", "stage": "process", "error": "died"}
  assert not Probe.of("0.9.2", judge_row(died, "0.9.2")).ok
  entry = tmp_path / "cpu" / "f" / "c" / "2026-01-01_jax-0.10.2"
  entry.mkdir(parents=True)
  (entry / "manifest.json").write_text("{}")
  monkeypatch.setattr(bisect_release, "consumers", lambda versions, **kw: {v: "py" for v in versions})
  monkeypatch.setattr(bisect_release, "replay_with", lambda *a, **kw: [
      {"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", "stage": "deserialize",
       "not_replayable": "a pytree type of the project"}])
  with pytest.raises(bisect_release.BisectError, match="cannot be bisected: jax 0.10.0's replayer "
                                                       "cannot replay it \\(a pytree type"):
    bisect_release.run_bisect(EntryId.parse("cpu/f/c/2026-01-01_jax-0.10.2"), ["0.9.2", "0.10.0"], store=tmp_path)


def _one_release(monkeypatch, tmp_path, row: dict):
  entry = tmp_path / "cpu" / "f" / "c" / "2026-01-01_jax-0.10.2"
  entry.mkdir(parents=True, exist_ok=True)
  (entry / "manifest.json").write_text("{}")
  monkeypatch.setattr(bisect_release, "consumers", lambda versions, **kw: {v: "py" for v in versions})
  monkeypatch.setattr(bisect_release, "replay_with", lambda *a, **kw: [
      {"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", **row}])
  return bisect_release.run_bisect(EntryId.parse("cpu/f/c/2026-01-01_jax-0.10.2"), ["0.10.0"], store=tmp_path)


def test_a_range_of_one_release_checks_that_release(monkeypatch, tmp_path):
  passed = _one_release(monkeypatch, tmp_path, {"stage": "compare"})
  assert passed.ok and [p.release for p in passed.probes] == ["0.10.0"]
  assert passed.text("model.bin") == ("model.bin: checked under jax 0.10.0: pass: it loads, "
                                      "runs and reproduces its outputs\n")
  failed = _one_release(monkeypatch, tmp_path, {"stage": "deserialize", "error": "refused"})
  assert not failed.ok
  assert failed.text() == ("cpu/f/c/2026-01-01_jax-0.10.2: checked under jax 0.10.0: fail at "
                           "deserialize: refused\n")
