"""The module parser child (``jaxport.cli._parser_child``) answers every request line with one
JSON line: the result, a jaxport refusal by class, or an error naming what was wrong with the
request; a blank line is no request, and a case module that fails to import is said in the
ready line. Run in-process: its requests are handled as the child handles them."""

from __future__ import annotations

import io
import json
import os

import jax
import jax.numpy as jnp
import pytest

import jaxport
from jaxport.cli import _parser, _parser_child
from jaxport.releases import _features


@pytest.fixture(scope="module")
def blob() -> bytes:
  return bytes(jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
               .serialize())


@pytest.mark.parametrize("request_,error", [
    ({"op": "inspect"}, "unknown request op 'inspect'"),
    ({"op": "today", "manifest": {}}, "no case module was imported (--import-module)"),
    ({"op": "signatures"}, "KeyError: 'module'"),
    ({"op": "runs_on", "blob": "", "project_targets": "lapack"},
     "project_targets must be a list of target names, got 'lapack'"),
])
def test_a_request_the_child_cannot_serve_is_answered_with_an_error(monkeypatch, request_, error):
  monkeypatch.setattr(_parser_child, "_CASES", [])
  answer = _parser_child._answer(request_, {})
  assert answer["error"] == error
  assert "refused" not in answer


def test_an_unexpected_failure_comes_with_its_traceback():
  answer = _parser_child._answer({"op": "donations", "module": "not base64!"}, {})
  assert answer["error"].startswith("Error: ")  # binascii.Error, from the bad base64
  assert "Traceback (most recent call last)" in answer["traceback"]


def test_a_blob_that_does_not_read_is_said_in_its_record_or_refused_by_its_error_class():
  junk = _parser.encode(b"\x00" * 16)
  record = _parser_child._answer({"op": "runs_on", "blob": junk}, {})["record"]
  assert record["runs_on"] is None
  assert record["runs_on_error"].startswith("DeserializationError: Not a valid serialized Exported")
  refused = _parser_child._answer({"op": "upgrade", "blob": junk, "for_jax": None,
                                   "source": "a.bin", "output": "b.bin"}, {})["refused"]
  assert refused["class"] == "DeserializationError"
  assert "Not a valid serialized Exported" in refused["message"]


def test_runs_on_answers_the_record_read_in_process(blob):
  answer = _parser_child._answer({"op": "runs_on", "blob": _parser.encode(blob),
                                  "manifest": None, "project_targets": ["my_target"],
                                  "measured": {}}, {})
  expected = _parser.InProcess().runs_on_record(blob, None, "", ["my_target"])
  assert answer == {"record": expected.to_json()}
  assert expected == _features.runs_on_record(blob, None, ["my_target"])


class _Answers(io.StringIO):
  def close(self) -> None:  # kept readable for the test
    pass


def test_the_child_skips_blank_lines_answers_non_json_and_says_an_import_failure(monkeypatch):
  answers = _Answers()
  monkeypatch.setattr(_parser_child, "serve_as_child", lambda lifeline: answers)
  monkeypatch.setattr(_parser_child, "_CASES", [])
  monkeypatch.setattr("sys.stdin", io.StringIO('\n{"op": "bogus"\n\n{"op": "bogus"}\n'))

  def exit_(code):
    raise SystemExit(code)

  monkeypatch.setattr(os, "_exit", exit_)
  with pytest.raises(SystemExit) as done:
    _parser_child.main([_parser.IMPORT_FLAG, "no_such_case_module_for_tests"])
  assert done.value.code == 0
  ready, not_json, unknown = [json.loads(line) for line in answers.getvalue().splitlines()]
  assert ready["ready"] is True
  assert "no_such_case_module_for_tests" in ready["import_failed"]
  assert ready["import_failed"].startswith(
      "importing the case modules named with --cases ['no_such_case_module_for_tests'] failed")
  assert not_json["error"].startswith("the request is not JSON: ")
  assert unknown == {"error": "unknown request op 'bogus'"}
  assert _parser_child._CASES == []
