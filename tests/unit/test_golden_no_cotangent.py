"""The manifest's ``no_cotangent`` (format 4): the inputs of an entry with a VJP that have no
cotangent. It round-trips, older formats load without it and refuse it, and a malformed one
is refused naming the field."""

import json

import pytest

from jaxport.errors import GoldenDataError
from jaxport.golden._manifest import FORMAT_VERSION, Manifest, OutputTolerance, _digest

from test_golden_store import EXPECTED, INPUTS, make_manifest

TOLERANCES = (OutputTolerance("output[0]", "float64", 1e-6, 1e-7),
              OutputTolerance("vjp1:args[0]", "int8", 0.0, 0.0))


def _forged(format_version=FORMAT_VERSION, **fields) -> str:
  """A manifest with ``fields`` set and a digest that matches (a careful forger)."""
  d = json.loads(make_manifest(tolerances=TOLERANCES).to_json())
  d.pop("digest")
  d["format_version"] = format_version
  d.update(fields)
  d["digest"] = _digest(d)
  return json.dumps(d)


def test_no_cotangent_round_trips_through_a_written_entry(tmp_path):
  from jaxport.golden._store import GoldenStore
  m = make_manifest(tolerances=TOLERANCES, no_cotangent=("args[1]", "kwargs['mask']"))
  entry = GoldenStore(tmp_path).write_entry(m, b"blob", INPUTS, EXPECTED, "module @m {}\n")
  d = json.loads((entry.path / "manifest.json").read_text())
  assert d["format_version"] == FORMAT_VERSION == 4
  assert d["no_cotangent"] == ["args[1]", "kwargs['mask']"]
  assert entry.manifest.no_cotangent == ("args[1]", "kwargs['mask']")
  entry.verify()


def test_a_manifest_without_it_leaves_it_unset_in_every_format():
  for version in (3, FORMAT_VERSION):
    m = Manifest.from_json(_forged(version), "m.json")
    assert m.no_cotangent is None and m.format_version == version
    assert "no_cotangent" not in json.loads(m.to_json())


def test_a_manifest_of_format_3_holding_it_is_refused():
  with pytest.raises(GoldenDataError, match="'no_cotangent' needs format_version 4"):
    Manifest.from_json(_forged(3, no_cotangent=["args[1]"]), "m.json")


@pytest.mark.parametrize("value,match", [
    ("args[1]", "no_cotangent: expected a list of input paths"),
    ([1], r"no_cotangent\[0\]: expected a non-empty input path"),
    (["args[1]", ""], r"no_cotangent\[1\]: expected a non-empty input path"),
    (["args[1]", "args[1]"], "no_cotangent: expected distinct input paths"),
    (["args[0]"], r"no_cotangent: expected inputs without a stored VJP output, but "
                  r"tolerances hold \['vjp1:args\[0\]'\]"),
    (None, "no_cotangent: expected a list of input paths"),
])
def test_a_malformed_no_cotangent_is_golden_data_error(value, match):
  with pytest.raises(GoldenDataError, match=match):
    Manifest.from_json(_forged(no_cotangent=value), "m.json")
