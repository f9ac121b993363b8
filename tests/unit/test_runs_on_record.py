"""The runs_on record that crosses from the module parser child to ``inspect`` and ``audit``
is read strictly: a missing or mistyped field is refused, naming it, never merged half-read."""

import pytest

from jaxport.releases._features import RunsOnRecord

GOOD = {"runs_on": {"cpu": ["0.10.2", "0.11.0"]},
        "runs_on_limits": {"cpu": {"lower": None, "upper": None, "refused": {}}},
        "runs_on_summary": {"cpu": "0.10.2 to 0.11.0"}, "runs_on_basis": {"cpu": "predicted"}}


def test_a_record_and_an_error_read_back_as_written():
  record = RunsOnRecord.from_json(GOOD, "blob")
  assert record.runs_on == {"cpu": ("0.10.2", "0.11.0")} and record.error is None
  assert record.to_json() == GOOD
  failed = RunsOnRecord.from_json({"runs_on": None, "runs_on_error": "unreadable"}, "blob")
  assert failed.runs_on is None and failed.error == "unreadable"
  assert failed.to_json() == {"runs_on": None, "runs_on_error": "unreadable"}


@pytest.mark.parametrize("broken, named", [
    ({k: v for k, v in GOOD.items() if k != "runs_on_summary"}, "blob: missing runs_on_summary"),
    ({**GOOD, "runs_on": {"cpu": "0.10.2"}}, "blob.runs_on"),
    ({**GOOD, "runs_on_limits": {}}, "blob.runs_on_limits"),
    ({**GOOD, "runs_on_summary": {"cpu": 3}}, "blob.runs_on_summary"),
    ({**GOOD, "runs_on_basis": {}}, "blob.runs_on_basis"),
    ({**GOOD, "runs_on_basis": {"cpu": "guessed"}}, "blob.runs_on_basis.cpu"),
    ({"runs_on": None}, "runs_on_error"),
    ({**GOOD, "extra": 1}, "blob: unknown key 'extra'"),
    ([], "expected an object"),
], ids=["no summary", "releases not a list", "no limits", "summary not text",
        "no basis per platform", "a basis neither measured nor predicted",
        "no error", "an unknown key", "not an object"])
def test_a_malformed_record_is_refused_naming_the_field(broken, named):
  with pytest.raises(ValueError, match=named):
    RunsOnRecord.from_json(broken, "blob")
