"""The release table (`jaxport.releases`): complete, validated, and the pure `runs_on` model."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import pathlib

import pytest

from _parsed_sources import parsed, walked

import jaxport.releases as rel
from jaxport.errors import JaxportError, ReleaseTableError
from jaxport.harness._judge import _releases
from jaxport.releases import _table
from _artifact_features import artifact_features
from jaxport.releases._runs_on import CustomCall

PACKAGE = pathlib.Path(rel.__file__).parent


def _doc() -> dict:
  return json.loads(_table.TABLE_FILE.read_text())


def test_every_release_of_the_table_is_dated_and_listed_installable_or_with_the_reason():
  listed = rel.releases()
  assert [f.version for f in listed] == sorted((f.version for f in listed), key=rel.parse_version)
  # The dates, and the releases served, derive from the table's one release list.
  assert dict(rel.RELEASE_DATES) == {f.version: f.date.isoformat() for f in listed}
  assert set(rel.served_releases()) <= {f.version for f in listed if f.installable}
  for f in listed:
    assert f.installable or f.not_installable_reason, f.version
    if f.installable:
      assert f.stablehlo_writes and f.calling_conventions_call and f.envelope_layouts, f.version
      assert f.cpu_targets is not None, f.version


def test_a_release_of_the_table_without_its_date_is_refused_naming_it():
  doc = json.loads(_table.TABLE_FILE.read_text())
  del doc["releases"]["0.10.2"]["date"]
  with pytest.raises(ReleaseTableError, match=r"release 0\.10\.2 date: expected a date YYYY-MM-DD, got None"):
    _table.parse(doc, "t.json")


def test_releases_are_oldest_first_with_their_hand_kept_dates():
  versions = [f.version for f in rel.releases()]
  assert versions == sorted(versions, key=rel.parse_version)
  assert rel.release_facts("0.9.2").date == rel.release_date("0.9.2")


def test_an_unknown_release_is_refused_naming_the_listed_range():
  with pytest.raises(ReleaseTableError, match=r"'0\.1\.0' is not in the release table .*release-table tool"):
    rel.release_facts("0.1.0")
  assert issubclass(ReleaseTableError, JaxportError)


def test_a_hand_edited_field_is_refused_naming_the_release_and_field():
  doc = _doc()
  version = next(v for v, d in doc["releases"].items() if d.get("installable"))
  bad = copy.deepcopy(doc)
  bad["releases"][version]["calling_conventions"]["call"] = [11, 9]
  with pytest.raises(ReleaseTableError, match=rf"release {version} calling_conventions\.call"):
    _table.parse(bad, "t.json")
  bad = copy.deepcopy(doc)
  bad["releases"][version]["envelope_layouts"]["version-12"] = {"status": "maybe"}
  with pytest.raises(ReleaseTableError, match="envelope_layouts.version-12"):
    _table.parse(bad, "t.json")
  with pytest.raises(ReleaseTableError, match="format_version"):
    _table.parse({"format_version": 0}, "t.json")


def test_the_harness_keeps_importing_dates_and_windows_from_the_one_place():
  assert _releases.RELEASE_DATES is rel.RELEASE_DATES
  assert _releases.window_position is rel.window_position
  assert _releases.BACKWARD_WINDOW_DAYS == rel.BACKWARD_WINDOW_DAYS == 183


def test_runs_on_reads_no_measured_matrix():
  for path in PACKAGE.rglob("*.py"):
    text = path.read_text()
    assert "release_matrix" not in text and "matrix" not in path.name, path
    for node in walked(parsed(text)):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import)
               else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
      assert not any(n == "harness" or n.startswith("harness.") for n in names), (path, names)


def test_dropping_a_target_from_one_release_changes_that_cell_only():
  facts = list(rel.releases())
  i = next(k for k, f in enumerate(facts) if f.version == "0.9.2")
  f = artifact_features()
  before = rel.runs_on(f, facts)
  assert before.covers("cpu", "0.9.2"), before.why_not("cpu", "0.9.2")
  facts[i] = dataclasses.replace(facts[i], cpu_targets=facts[i].cpu_targets - {"lapack_sgeqrf_ffi"})
  after = rel.runs_on(f, facts)
  assert not after.covers("cpu", "0.9.2")
  assert after.why_not("cpu", "0.9.2") == "target lapack_sgeqrf_ffi not registered"
  assert set(before.releases["cpu"]) - set(after.releases["cpu"]) == {"0.9.2"}


def test_a_target_the_project_registers_limits_no_release_and_is_named_in_the_summary():
  without = artifact_features(custom_calls=())
  own = artifact_features(custom_calls=(CustomCall("tinyops_scaled_add", 2),))
  unjudged = rel.runs_on(own)
  assert not unjudged.releases["cpu"]
  assert "target tinyops_scaled_add not registered" in unjudged.summary("cpu")
  registered = rel.runs_on(own, project_targets=["tinyops_scaled_add"])
  assert registered.releases == rel.runs_on(without).releases
  assert registered.project_targets == {"cpu": ("tinyops_scaled_add",)}
  assert "registered by the project: tinyops_scaled_add" in registered.summary("cpu")
  # Allowed by a disabled custom-call check, it is the project's too, declared or not.
  allowed = artifact_features(custom_calls=(CustomCall("tinyops_scaled_add", 2),),
                      allowed_targets=frozenset({"tinyops_scaled_add"}))
  assert rel.runs_on(allowed).releases == registered.releases
  # jax's own targets stay judged by the table even where the project declares them.
  mixed = artifact_features(custom_calls=(CustomCall("tinyops_scaled_add", 2),
                                  CustomCall("lapack_sgeqrf_ffi", 5)))
  judged = rel.runs_on(mixed, project_targets=["tinyops_scaled_add", "lapack_sgeqrf_ffi"])
  assert judged.releases["cpu"] == ()
  assert judged.project_targets == {"cpu": ("tinyops_scaled_add",)}


def test_each_feature_names_its_limiting_factor():
  f92 = rel.release_facts("0.9.2")
  assert rel.blocker(f92, artifact_features(), "cpu") is None
  assert "calling convention 5 outside" in rel.blocker(f92, artifact_features(calling_convention=5), "cpu")
  assert "vhlo.zzz_v9 unknown" in rel.blocker(
      f92, artifact_features(vhlo_ops=frozenset({"zzz_v9"})), "cpu") if "zzz_v9" in f92.vhlo_ops else True
  assert rel.blocker(f92, artifact_features(platforms=("cuda",)), "cpu") == "not lowered for cpu"
  assert rel.blocker(f92, artifact_features(custom_calls=(CustomCall("lapack_sgeqrf_ffi", 5),)),
                     "cpu").startswith("target lapack_sgeqrf_ffi binds 1 operands")
  newest = rel.release_facts("0.12.0.1")
  assert rel.blocker(newest, artifact_features(envelope_layout="short-device-count",
                                       has_nr_devices=False), "cpu") == (
      "envelope without nr_devices refused as expired")


def test_a_limit_at_each_end_is_named_in_the_summary():
  got = rel.runs_on(artifact_features())
  line = got.summary("cpu")
  assert got.releases["cpu"] and line.startswith(got.releases["cpu"][0])
  if got.lower["cpu"] is not None:
    assert f"below: {got.lower['cpu'].release}: " in line
  assert set(got.limits_of("cpu").to_json()) == {"lower", "upper", "refused"}


def test_a_calling_convention_above_the_maximum_limits_only_where_the_reader_refuses_it():
  f92 = rel.release_facts("0.9.2")
  assert f92.refuses_calling_convention_above_max is False
  assert rel.blocker(f92, artifact_features(calling_convention=11), "cpu") is None
  strict = dataclasses.replace(f92, refuses_calling_convention_above_max=True)
  assert "calling convention 11 outside the 9 to 10" in rel.blocker(
      strict, artifact_features(calling_convention=11), "cpu")


def test_a_reader_of_only_the_older_device_count_field_reads_0_devices_in_a_blob_without_it():
  f80 = rel.release_facts("0.8.0")
  assert f80.needs_nr_devices_short and not rel.release_facts("0.9.2").needs_nr_devices_short
  without = artifact_features(has_nr_devices_short=False, nr_devices=1, calling_convention=9)
  assert "read as 0 devices" in rel.blocker(f80, without, "cpu")
  assert rel.devices_seen(f80, without) == 0
  assert rel.devices_seen(f80, dataclasses.replace(without, has_nr_devices_short=True)) == 1


def test_a_jaxlib_that_reads_no_newer_stablehlo_refuses_a_newer_artifact_outright():
  old = rel.release_facts("0.4.30")
  assert old.reads_newer_stablehlo is False and rel.release_facts("0.5.3").reads_newer_stablehlo
  newer = artifact_features(stablehlo_version="9.0.0", envelope_layout="short-device-count",
                    has_nr_devices=False, vhlo_ops=frozenset(), calling_convention=9)
  assert "StableHLO 9.0.0 newer than the 1.1.3" in rel.blocker(old, newer, "cpu")


def test_a_module_with_shardy_attributes_needs_a_jaxlib_that_knows_the_sdy_dialect():
  f62 = rel.release_facts("0.6.2")
  assert f62.reads_sdy_dialect is False and rel.release_facts("0.7.2").reads_sdy_dialect
  feats = artifact_features(dialects=frozenset({"sdy"}), calling_convention=9, vhlo_ops=frozenset())
  assert "sdy dialect" in rel.blocker(f62, feats, "cpu")
  assert "sdy" not in (rel.blocker(f62, dataclasses.replace(feats, dialects=frozenset()), "cpu")
                       or "")


def test_a_hand_edited_reader_fact_is_refused_naming_it():
  doc = _doc()
  version = next(v for v, d in doc["releases"].items() if d.get("installable"))
  bad = copy.deepcopy(doc)
  bad["releases"][version]["device_count_fields"] = {"nr_devices": "yes"}
  with pytest.raises(ReleaseTableError, match=rf"release {version} device_count_fields\.nr_devices"):
    _table.parse(bad, "t.json")


def test_artifact_features_cross_a_process_boundary_and_fail_closed():
  from jaxport.releases import ArtifactFeatures
  from jaxport.releases._runs_on import CustomCall
  features = ArtifactFeatures(
      platforms=("cpu",), calling_convention=10, envelope_layout="unique-tables",
      serialization_version=None, has_nr_devices=True, stablehlo_version="1.9.5",
      vhlo_ops=frozenset({"custom_call_v1"}), custom_calls=(CustomCall("lapack_spotrf_ffi", 1),),
      producer="0.10.2", has_nr_devices_short=False, nr_devices=1, dialects=frozenset())
  sent = json.loads(json.dumps(features.to_dict()))
  assert ArtifactFeatures.from_dict(sent) == features
  for broken, why in ((dict(sent, platforms="cpu"), "'platforms'"),
                      ({k: v for k, v in sent.items() if k != "has_nr_devices"},
                       "'has_nr_devices' is missing"),
                      (dict(sent, nr_devices=True), "'nr_devices'"),
                      (dict(sent, custom_calls=[["lapack_spotrf_ffi"]]), "'custom_calls'")):
    with pytest.raises(ValueError, match=why):
      ArtifactFeatures.from_dict(broken)


def test_no_module_keeps_a_release_list_of_its_own():
  """The release table's release set is the one list: no tuple, list, set or dict of three or
  more jax versions is written in the package or its tools."""
  version = rel.parse_version
  root = pathlib.Path(__file__).resolve().parents[2]
  found = []
  for path in [*sorted((root / "jaxport").rglob("*.py")), *sorted((root / "harness").rglob("*.py"))]:
    for node in walked(parsed(path.read_text(encoding="utf-8"))):
      items = (node.keys if isinstance(node, ast.Dict)
               else node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [])
      texts = [n.value for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)]
      releases = []
      for t in texts:
        try:
          version(t)
          releases.append(t)
        except ValueError:
          pass
      if len(releases) >= 3:
        found.append(f"{path.relative_to(root)}:{node.lineno}")
  assert not found, found
