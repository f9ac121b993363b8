"""Today's lowering of a project's cases for ``jaxport audit`` (``jaxport.cli._relower``): case
modules that fail to import are an error naming where they were looked for; a case whose code
fails to lower or compare is said for that entry alone; and a calling contract, named
shardings included, crosses to the module parser child and back unchanged, or is refused
naming the bad field."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from jaxport.cli import _relower
from jaxport.errors import GoldenDataError
from jaxport.harness._worker._calling import CallingContract
from jaxport.harness._worker._sharding_contract import MeshTerms, ShardingTerms
from test_golden_store import make_manifest


@pytest.fixture
def cases_dir(tmp_path):
  """A folder with the case module ``relower_cases``: one case that lowers, one that fails."""
  (tmp_path / "relower_cases.py").write_text(textwrap.dedent("""
      import numpy as np
      from jaxport.harness import Case

      def broken(x):
        raise ValueError("cannot trace this\\nsecond line")

      def cases():
        inputs = lambda: ((np.ones(3, np.float32),), {})
        return [Case("doubles", "relower", lambda x: x * 2, inputs),
                Case("broken", "relower", broken, inputs)]
  """))
  (tmp_path / "relower_cases_that_fail.py").write_text("raise RuntimeError('no native lib')\n")
  yield tmp_path
  for name in ("relower_cases", "relower_cases_that_fail"):
    sys.modules.pop(name, None)


def test_modules_that_fail_to_import_name_where_they_were_looked_for(cases_dir):
  relowerer = _relower.Relowerer(("no_such_relower_cases",))
  with pytest.raises(GoldenDataError) as info:
    relowerer.load()
  message = str(info.value)
  assert message.startswith("importing the case modules named with --cases "
                            "['no_such_relower_cases'] failed: case module ")
  assert message.endswith("--cases imports them from the installed packages and PYTHONPATH; "
                          "pass --project DIR to import them from the project's root and pytest "
                          "pythonpath, as the harness does, or set PYTHONPATH")
  in_project = _relower.Relowerer(("relower_cases_that_fail",), (str(cases_dir),),
                                  _relower.FROM_PROJECT)
  with pytest.raises(GoldenDataError) as info:
    in_project.load_here()
  message = str(info.value)
  assert "RuntimeError" in message and "no native lib" in message
  assert message.endswith(f"Looked in the project's paths {[str(cases_dir)]}, then on sys.path; "
                          "check jaxport_cases and pytest's pythonpath in the project's "
                          "configuration")


def test_without_modules_nothing_is_loaded_and_today_finds_no_case():
  relowerer = _relower.Relowerer(())
  assert relowerer.load_here() is False
  assert relowerer.unavailable.startswith(_relower.NOT_REQUESTED)
  assert relowerer.today(make_manifest(case_id="doubles"), None) == _relower.Today(False)


def test_a_case_that_fails_to_lower_is_said_for_its_entry_alone(cases_dir):
  relowerer = _relower.Relowerer(("relower_cases",), (str(cases_dir),), _relower.FROM_PROJECT)
  assert relowerer.load_here() is True
  broken = relowerer.today(make_manifest(case_id="broken"), None, "entry")
  assert broken == _relower.Today(True, lowering_error="ValueError: cannot trace this")
  doubles = relowerer.today(make_manifest(case_id="doubles"), None, "entry")
  assert doubles.found and doubles.signatures == () and doubles.lowering_error is None
  assert relowerer.today(make_manifest(case_id="gone"), None) == _relower.Today(False)


def test_a_comparison_that_fails_in_the_projects_code_is_the_entrys_contract_error(
    cases_dir, monkeypatch):
  relowerer = _relower.Relowerer(("relower_cases",), (str(cases_dir),), _relower.FROM_PROJECT)
  case = relowerer.case("doubles")
  recorded = relowerer.contract(case)

  def fails(self, case, outputs):
    raise KeyError("checker")

  monkeypatch.setattr(_relower.Relowerer, "comparison", fails)
  today = relowerer.today(make_manifest(case_id="doubles"), recorded, "entry")
  assert today == _relower.Today(True, (), contract_error="KeyError: 'checker'")


MESH = MeshTerms(("data", "model"), (2, 1), ("Explicit", "Auto"))
CONTRACT = CallingContract(
    inputs=(("[0]", "f32[4,2]"), ("[1]", "f32[]")), outputs=(("", "f32[4,2]"),),
    in_shardings=("{devices=[2,1]<=[2]}", None), out_shardings=(None,), effects=(),
    calling_convention_version=10, platforms=("cpu",),
    in_named=(ShardingTerms(MESH, (("data", "model"), None), ("model",), (), "device"), None),
    out_named=(ShardingTerms(MESH, ("data",), (), ("model",), None),), nr_devices=2,
    donated=("[1]",))


def test_a_contract_with_named_shardings_crosses_to_the_child_and_back():
  sent = json.loads(json.dumps(_relower.contract_json(CONTRACT)))
  assert _relower.contract_from_json(sent, "contract") == CONTRACT
  plain = CallingContract((), (), (), (), (), 9, ("cpu",))
  assert _relower.contract_json(plain)["in_named"] is None
  assert _relower.contract_from_json(_relower.contract_json(plain), "contract") == plain


@pytest.mark.parametrize("change,field", [
    (lambda d: d["in_named"][0]["mesh"].__setitem__("axis_sizes", ["2", 1]),
     r"contract\.in_named\[0\]\.mesh\.axis_sizes"),
    (lambda d: d["in_named"][0].__setitem__("spec", [["data", 3]]), r"contract\.in_named\[0\]\.spec"),
    (lambda d: d["out_named"][0].__setitem__("memory_kind", 7),
     r"contract\.out_named\[0\]\.memory_kind"),
    (lambda d: d["in_named"][0].pop("reduced"), r"contract\.in_named\[0\]"),
    (lambda d: d.__setitem__("out_named", {"0": None}), r"contract\.out_named"),
])
def test_a_malformed_contract_from_the_child_is_refused_naming_the_field(change, field):
  d = json.loads(json.dumps(_relower.contract_json(CONTRACT)))
  change(d)
  with pytest.raises(ValueError, match=field):
    _relower.contract_from_json(d, "contract")
