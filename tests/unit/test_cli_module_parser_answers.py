"""The command's side of the module parser child (``jaxport.cli._parser.ModuleParser``) reads
each answer strictly and names what went wrong: an answer that is not JSON, lacks a field or
holds a malformed record is the parser's error; a refusal comes back as the error the read
raises in-process; a child that never says it is ready, ends or passes its default limits is
named with the limit; and the child is restarted where it must be, never leaking a descriptor.

The child here is a stand-in started in place of ``python -m jaxport.cli._parser_child``: a
bare Python (no jax) that follows a plan of lines to write, so that each misbehaviour is
certain and costs no jax import."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from jaxport import _limits
from jaxport.cli import _arguments, _parser
from jaxport.errors import (DeserializationError, JaxportError, ModuleCrashError,
                            ModuleMemoryError, ModuleParserError, ModuleTimeoutError)
from test_golden_store import make_manifest

READY = json.dumps({"ready": True})
MODULE = b"ML\xefR not really a module"

# The stand-in child: argv[1] is a JSON plan, a list of step lists: the first run at start,
# each next one after reading one request line. A step is "say:TEXT" (a line on stdout),
# "err:TEXT" (a line on stderr), "exit:CODE" or "sleep:SECONDS".
STAND_IN = r"""
import json, os, sys, time
plan = json.loads(sys.argv[1])
def run(steps):
  for step in steps:
    kind, _, arg = step.partition(":")
    if kind == "say":
      sys.stdout.write(arg + "\n"); sys.stdout.flush()
    elif kind == "err":
      sys.stderr.write(arg + "\n"); sys.stderr.flush()
    elif kind == "exit":
      os._exit(int(arg))
    elif kind == "sleep":
      time.sleep(float(arg))
run(plan[0])
for steps in plan[1:]:
  if not sys.stdin.readline():
    break
  run(steps)
sys.stdin.read()
"""


@pytest.fixture
def started(monkeypatch):
  """Replaces the child by the stand-in following ``plan``; returns the list of the argument
  lists each start was given."""
  starts: list[list[str]] = []
  plan: list[list[str]] = []

  def start_module(module, args, *, env, paths, stdin, stdout, stderr, pass_fds, preload):
    assert module == _parser.CHILD_MODULE
    starts.append(list(args))
    return subprocess.Popen([sys.executable, "-I", "-S", "-c", STAND_IN, json.dumps(plan)],
                            stdin=stdin, stdout=stdout, stderr=stderr, pass_fds=pass_fds)

  monkeypatch.setattr(_parser, "start_module", start_module)

  def follow(*steps: list[str]) -> list[list[str]]:
    plan[:] = list(steps)
    return starts
  return follow


def wait_ended(parser: _parser.ModuleParser, timeout_s: float = 30.0) -> None:
  """Poll until the child has exited by itself."""
  deadline = time.monotonic() + timeout_s
  while parser.pid is not None:
    assert time.monotonic() < deadline, "the stand-in child did not exit"
    time.sleep(0.005)


def answering(*answers: dict | str) -> list[list[str]]:
  """A plan: ready, then each answer (a dict as JSON, a string as it is) to one request."""
  return [[f"say:{READY}"], *([f"say:{a if isinstance(a, str) else json.dumps(a)}"]
                              for a in answers)]


@pytest.mark.parametrize("answer,error,match", [
    ("{not json", ModuleParserError,
     r"m.bin: the module parser answered its StableHLO module \(\d+ bytes\) with a line that "
     r"is not a JSON object: '\{not json\\n'"),
    ("[1, 2]", ModuleParserError, "with a line that is not a JSON object"),
    ({"error": "KeyError: 'module'"}, ModuleParserError,
     r"m.bin: the module parser failed on its StableHLO module \(\d+ bytes\): KeyError: 'module'"),
    ({"text": "module {}"}, ModuleParserError,
     r"m.bin: the module parser's answer for its StableHLO module \(\d+ bytes\) lacks "
     r"signatures \(it has text\)"),
    ({"refused": {"class": "DeserializationError", "message": "bad bytes"}},
     DeserializationError, "^bad bytes$"),
    ({"refused": {"class": "NotImplementedError", "message": "not yet"}},
     NotImplementedError, "^not yet$"),
    ({"refused": {"class": "ImportError", "message": "not a jaxport error"}},
     JaxportError, "^not a jaxport error$"),
])
def test_each_malformed_or_refusing_answer_is_named(started, answer, error, match):
  started(*answering(answer))
  with _parser.ModuleParser() as parser:
    with pytest.raises(error, match=match) as info:
      parser.signatures(MODULE, "m.bin")
  if error is JaxportError:  # a class that is not jaxport's is never raised as itself
    assert type(info.value) is JaxportError


def test_donations_must_be_a_list_of_booleans(started):
  started(*answering({"donations": [True, False]}, {"donations": [1, 0]}))
  with _parser.ModuleParser() as parser:
    assert parser.donations(MODULE, "m.bin") == (True, False)
    with pytest.raises(ModuleParserError, match=(
        r"m.bin: the module parser answered donations \[1, 0\], not a list of booleans")):
      parser.donations(MODULE, "m.bin")


def test_a_malformed_runs_on_record_is_the_parsers_error_and_the_child_is_replaced(started):
  starts = started(*answering({"record": {"runs_on": "cpu"}}))
  with _parser.ModuleParser() as parser:
    with pytest.raises(ModuleParserError,
                       match="the module parser answered with a malformed record: m.bin: "):
      parser.runs_on_record(b"blob", None, "m.bin")
    assert parser.pid is None
    with pytest.raises(ModuleParserError, match="malformed record"):
      parser.runs_on_record(b"blob", None, "m.bin")
  assert len(starts) == 2


def test_a_malformed_today_record_is_the_parsers_error(started):
  started(*answering({"today": {"found": "yes"}}))
  with _parser.ModuleParser() as parser:
    with pytest.raises(ModuleParserError, match=(
        r"the module parser answered with a malformed record: entry: today")):
      parser.today(make_manifest(), None, "entry")
    assert parser.pid is None


@pytest.mark.parametrize("plan,why", [
    ([["err:jax is missing", "say:hello"]], "it wrote something else first"),
    ([["err:jax is missing", "exit:3"]], "it ended: ended with exit code 3"),
    ([["err:jax is missing", "sleep:30"]], "it gave no sign of life within 0 s"),
])
def test_a_child_that_does_not_start_is_named_once_for_every_read(started, plan, why):
  starts = started(*plan)
  with _parser.ModuleParser(start_timeout_s=0.3) as parser:
    with pytest.raises(ModuleParserError) as first:
      parser.signatures(MODULE, "m.bin")
    message = str(first.value)
    assert f"could not start: {why}. Its last stderr lines: " in message
    if "no sign of life" not in why:  # written before the child's line or its end
      assert "Its last stderr lines: jax is missing." in message
    assert "Check that this Python imports jax and jaxport." in message
    parser.start()  # nothing is started again
    for again in (lambda: parser.module_text(MODULE, None, "other.bin"), parser.import_failure):
      with pytest.raises(ModuleParserError) as later:
        again()
      assert later.value is first.value
  assert len(starts) == 1


def test_an_import_failure_is_told_and_warned_of_where_its_source_is_unknown(started, caplog):
  started(["say:" + json.dumps({"ready": True, "import_failed": "no module named cases"})])
  with caplog.at_level(logging.WARNING, logger=_parser.logger.name):
    with _parser.ModuleParser() as parser:
      parser.import_modules(("cases",))
      assert parser.import_failure() == "no module named cases"
  assert [r.getMessage() for r in caplog.records] == [
      "the module parser process could not import the project's case modules (no module "
      "named cases); entries that need their pytree or effect types will not read"]
  caplog.clear()
  with caplog.at_level(logging.WARNING, logger=_parser.logger.name):
    with _parser.ModuleParser() as parser:
      parser.import_modules(("cases",), source="the project's case modules")
      assert parser.import_failure() == "no module named cases"
  assert caplog.records == []


def test_new_modules_to_import_restart_a_running_child_and_the_same_do_not(started):
  starts = started(*answering({"text": "a"}, {"text": "b"}))
  with _parser.ModuleParser() as parser:
    parser.import_modules(("cases",), ("src",), "the project's case modules")
    assert parser.module_text(MODULE, None, "m.bin") == "a"
    first = parser.pid
    parser.import_modules(("cases",), ("src",))
    assert parser.pid == first
    parser.import_modules(("cases", "more_cases"), ("src",))
    assert parser.pid is None
    assert parser.module_text(MODULE, None, "m.bin") == "a"
  flags = [_parser.IMPORT_FLAG, "cases", _parser.PATH_FLAG, "src", _parser.SOURCE_FLAG,
           "the project's case modules"]
  assert [s[2:] for s in starts] == [flags, flags[:2] + [_parser.IMPORT_FLAG, "more_cases"]
                                     + flags[2:]]


def test_a_child_that_ended_after_answering_is_replaced_on_the_next_read(started):
  starts = started([f"say:{READY}"], ['say:{"text": "first"}', "exit:0"])
  with _parser.ModuleParser() as parser:
    assert parser.module_text(MODULE, None, "a.bin") == "first"
    wait_ended(parser)
    assert parser.module_text(MODULE, None, "b.bin") == "first"
  assert len(starts) == 2


def test_a_child_gone_before_the_request_is_a_crash_naming_how_it_ended(started):
  started([f"say:{READY}", "exit:5"])
  with _parser.ModuleParser() as parser:
    assert parser.import_failure() is None
    wait_ended(parser)
    with pytest.raises(ModuleCrashError, match=(
        r"m.bin: reading its StableHLO module \(\d+ bytes\) crashed the module parser "
        r"process: it was ended with exit code 5\.")):
      parser.signatures(MODULE * 20000, "m.bin")


def test_the_default_time_limit_is_named_by_its_setting(started, monkeypatch):
  monkeypatch.setattr(_limits, "MODULE_PARSE_TIMEOUT_S", 0.2)
  started([f"say:{READY}"], ["sleep:30"])
  with _parser.ModuleParser() as parser:
    with pytest.raises(ModuleTimeoutError) as info:
      parser.signatures(MODULE, "m.bin")
  message = str(info.value)
  assert "within the time limit jaxport._limits.MODULE_PARSE_TIMEOUT_S = 0.2;" in message
  assert f"a larger {_parser.TIMEOUT_OPTION}=SECONDS allows more" in message


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="resident memory is read on Linux")
def test_the_default_memory_limit_is_named_by_its_setting(started, monkeypatch):
  monkeypatch.setattr(_limits, "MAX_PARSER_RSS_BYTES", 2**20)
  started([f"say:{READY}"], ["sleep:30"])
  with _parser.ModuleParser() as parser:
    with pytest.raises(ModuleMemoryError) as info:
      parser.signatures(MODULE, "m.bin")
  message = str(info.value)
  assert f"past the memory limit jaxport._limits.MAX_PARSER_RSS_BYTES = {2**20}: " in message
  assert f"a larger {_parser.MEMORY_OPTION}=MB allows more" in message


def _open_descriptors() -> int:
  return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_a_child_that_cannot_be_started_leaks_no_descriptor(monkeypatch):
  def fails(*args, **kwargs):
    raise OSError(11, "Resource temporarily unavailable")

  monkeypatch.setattr(_parser, "start_module", fails)
  parser = _parser.ModuleParser()
  before = _open_descriptors()
  with pytest.raises(OSError, match="Resource temporarily unavailable"):
    parser.start()
  parser.close()
  assert _open_descriptors() == before


@pytest.mark.parametrize("argv,message", [
    (["--parse-timeout", "soon"], "expected a positive number of seconds, got 'soon'"),
    (["--parse-timeout", "-1"], "expected a positive number of seconds, got '-1'"),
    (["--parse-memory-mb", "lots"], "expected a whole number of MiB from 64 to"),
])
def test_limit_options_refuse_what_is_not_a_limit(argv, message, capsys):
  p = argparse.ArgumentParser()
  _arguments.parse_limit_options(p)
  with pytest.raises(SystemExit):
    p.parse_args(argv)
  assert message in capsys.readouterr().err


def test_limit_options_set_the_parsers_limits():
  p = argparse.ArgumentParser()
  _arguments.parse_limit_options(p)
  parser = _parser.from_args(p.parse_args(["--parse-timeout", "2.5", "--parse-memory-mb", "64"]))
  assert (parser.timeout_s, parser.max_rss_bytes) == (2.5, 64 * 2**20)
