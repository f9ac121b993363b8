"""A downstream project's first runs of the harness: each mistake a new user makes ends in one
clear message that names the fix, and the harness summary still prints."""

import json
import textwrap

import pytest

from _downstream_project import write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix


def square():
  return (random_matrix(0, (3, 3), np.float32),), {{}}


def cases():
  return [{cases}]
"""
SINES = 'Case("sines_f32", "mine", lambda a: jnp.sin(a) * 3, square{extra})'


def _project(pytester, module="mycases", cases=SINES.format(extra=""), head=""):
  return write_project(pytester, head + textwrap.dedent(CASES.format(cases=cases)), module=module)


def _run(pytester, *args):
  # -rN: no short test summary, whose length depends on the terminal and on CI's environment
  # (pytest prints messages whole when CI is set), so counts of a message hold everywhere.
  return pytester.runpytest("-p", "no:cacheprovider", "-rN",
                                       "--compat-today=2026-12-01", *args)


def _text(result) -> str:
  return result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("module", ["mycasez", "mypkg.golden_casez"])
def test_a_misspelt_case_module_is_one_usage_error(pytester, module):
  _project(pytester, module=module)
  pkg = pytester.path / "mypkg"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("raise RuntimeError('the check must not import packages')\n")
  (pkg / "golden_cases.py").write_text("")
  result = _run(pytester, "--compat-record")
  assert result.ret != 0
  text = _text(result)
  assert f"case module(s) ['{module}'] of jaxport_cases cannot be found" in text
  assert "Traceback" not in text and "INTERNALERROR" not in text


def test_a_case_module_failing_to_import_fails_once_and_the_summary_still_prints(pytester):
  _project(pytester, head="import a_native_library_not_built_yet\n")
  result = _run(pytester, "--compat-record")
  assert result.ret != 0
  text = _text(result)
  assert "INTERNALERROR" not in text and "Traceback" not in text
  assert text.count("case module 'mycases' cannot be imported (No module named "
                    "'a_native_library_not_built_yet')") == 2   # the item, and the session line
  assert "jaxport compat harness" in text
  assert "SESSION FAIL the project's case modules cannot be loaded" in text


def test_a_case_naming_an_unknown_checker_is_refused_at_record(pytester):
  store = _project(pytester, cases=SINES.format(extra=', checker="spectral_okk"'))
  result = _run(pytester, "--compat-record")
  assert result.ret == 1
  text = _text(result)
  assert "checker='spectral_okk' is not a registered checker" in text
  assert "Nothing was recorded" in text
  # Said once in the item's failure, not again as the traceback's last line.
  assert text.count("is not a registered checker") == 1
  assert "  error     case sines_f32" in text
  assert not store.root.exists() or not list(store.entries())


def test_entries_of_a_removed_case_warn_and_fail_the_session_when_strict(pytester):
  store = _project(pytester)
  assert _run(pytester, "--compat-record").ret == 0
  (pytester.path / "mycases.py").write_text(textwrap.dedent(CASES.format(cases="")))
  warned = _run(pytester)
  assert warned.ret == 0
  assert ("session warning: 1 entries belong to cases no case module registers any more "
          "(sines_f32)") in _text(warned)
  strict = _run(pytester, "--compat-strict")
  assert strict.ret == 1
  assert "SESSION FAIL 1 entries belong to cases no case module registers" in _text(strict)
  assert len(list(store.entries())) == 1


def test_a_tampered_golden_file_is_a_golden_data_error(pytester, tmp_path):
  store = _project(pytester)
  assert _run(pytester, "--compat-record").ret == 0
  (entry,) = store.entries()
  blob = entry.path / "exported.bin"
  data = blob.read_bytes()
  blob.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
  report = tmp_path / "r.json"
  result = _run(pytester, f"--compat-report={report}")
  assert result.ret == 1
  (e,) = json.loads(report.read_text())["entries"]
  assert e["status"] == "fail" and e["kinds"] == ["golden_data_error"]
  assert "exported.bin" in e["messages"][0]


def test_an_absent_platform_is_a_usage_error_without_a_traceback(pytester):
  _project(pytester)
  result = _run(pytester, "--compat-record", "--compat-platform=cuda")
  assert result.ret == 4   # pytest's usage error
  text = _text(result)
  assert ("ERROR: --compat-platform=cuda replays entries that run on cuda, but this machine's "
          "jax backend is cpu") in text
  assert "Traceback" not in text and "pluggy" not in text


def test_before_the_first_record_other_tests_run_and_the_golden_item_names_the_record_command(
    pytester):
  _project(pytester)
  pytester.makepyfile(test_units="def test_unit():\n  assert 1 + 1 == 2\n")
  result = _run(pytester)
  assert result.ret == 1   # the golden item failed; not a usage error stopping every test
  result.assert_outcomes(passed=1, failed=1)
  text = _text(result)
  assert "no golden store yet: jaxport_store names" in text
  assert "pytest --compat-record" in text and "--compat-store=" not in text
  assert "Traceback" not in text
  units = _run(pytester, "test_units.py")
  assert units.ret == 0
  units.assert_outcomes(passed=1)
  explicit = _run(pytester, f"--compat-store={pytester.path / 'elsewhere'}")
  assert explicit.ret == 4 and "elsewhere: no such directory" in _text(explicit)
  assert _run(pytester, "--compat-record").ret == 0
  _run(pytester).assert_outcomes(passed=2)


def test_collect_only_judges_nothing(pytester):
  _project(pytester)
  assert _run(pytester, "--compat-record").ret == 0
  result = _run(pytester, "--collect-only")
  assert result.ret == 0
  text = _text(result)
  assert "SESSION FAIL" not in text and "tripwire" not in text
  assert "test_replay[cpu/mine/sines_f32/2026-12-01_jax-" in text


FAILING_MODULES = {
    "cases() raises": ("def cases():\n  raise RuntimeError('libmykernel.so was built for "
                       "another jaxlib')\n",
                       "case module 'mycases': cases() raised RuntimeError: libmykernel.so was "
                       "built for another jaxlib"),
    "cases() returns a dict": ("def cases():\n  return {'sines_f32': None}\n",
                               "case module 'mycases': cases() returned dict; return a list of "
                               "jaxport.harness.Case objects"),
    "import raises": ("raise ValueError('no GPU here')\n",
                      "case module 'mycases' raised ValueError: no GPU here while being "
                      "imported"),
    "import exits 0": ("raise SystemExit(0)\n",
                       "case module 'mycases' exited (SystemExit(0)): a case module must not end "
                       "the process while being imported"),
}


@pytest.mark.parametrize("name, processes", [
    *((name, "0") for name in sorted(FAILING_MODULES)),
    ("cases() raises", "2"), ("import exits 0", "2")])  # xdist's workers collect on their own
def test_a_case_module_that_fails_is_one_named_failure_and_the_report_is_written(
    pytester, tmp_path, name, processes):
  _project(pytester)
  (pytester.path / "golden").mkdir()
  source, named = FAILING_MODULES[name]
  (pytester.path / "mycases.py").write_text(source)
  report_file = tmp_path / "report.json"
  result = _run(pytester, "-n", processes, f"--compat-report={report_file}")
  assert result.ret not in (0, 5), result.ret
  text = _text(result)
  assert "INTERNALERROR" not in text and "Traceback" not in text
  assert named in text
  if "raise" in source.split("\n")[-2]:  # the user's own frame is quoted
    assert 'mycases.py", line' in text
  assert "ERROR test_golden.py" in text or "error" in text.splitlines()[-1]
  assert "SESSION FAIL the project's case modules cannot be loaded" in text
  assert "1 jaxport session failure" in result.stdout.lines[-1]  # pytest's closing line
  report = json.loads(report_file.read_text())
  assert any(named in f for f in report["session_failures"]), report["session_failures"]
  assert report["summary"]["replayed"] == 0


def test_jaxports_commands_do_not_exit_0_when_a_case_module_exits_0(pytester):
  from _python_child import run_cli
  _project(pytester)
  (pytester.path / "mycases.py").write_text("raise SystemExit(0)\n")
  (pytester.path / "golden").mkdir()
  for command in (["replay", "--project", "."], ["record", "--project", "."],
                  ["audit", "--project", ".", "--no-drift"]):
    done = run_cli(command, cwd=pytester.path, timeout=600)
    assert done.returncode not in (0, 5), (command, done.returncode, done.stdout[-2000:])
    out = done.stdout + done.stderr
    assert "INTERNALERROR" not in out, command
    if command[0] == "audit":
      # audit imports case modules only in its module parser child, for an artifact that
      # needs them: an empty store has none, and says so.
      assert "no artifacts found" in out, out[-3000:]
      continue
    assert "exited (SystemExit(0))" in out, (command, out[-3000:])


def test_a_golden_test_file_that_does_not_exist_is_a_usage_error_naming_it(pytester):
  from _downstream_project import pyproject
  _project(pytester)
  pytester.makepyprojecttoml(pyproject(jaxport_tests="tests/test_golden.py"))
  result = _run(pytester)
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  text = _text(result)
  assert "jaxport_tests names ['tests/test_golden.py'], which do not exist" in text
  assert "from jaxport.harness.testing import test_record, test_replay" in text


def test_no_golden_test_file_says_how_to_add_one(pytester):
  _project(pytester)
  (pytester.path / "golden").mkdir()
  (pytester.path / "test_golden.py").unlink()
  result = _run(pytester)
  assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
  assert "pytest collected no golden test item" in _text(result)
  assert "from jaxport.harness.testing import test_record, test_replay" in _text(result)


UNREGISTERED = """
import dataclasses
import jax
import numpy as np
from jaxport.harness import Case, random_matrix


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
  w: jax.Array


def inputs():
  return (Params(random_matrix(0, (3,), np.float32)), random_matrix(1, (3,), np.float32)), {}


def cases():
  return [Case("dense", "mine", lambda p, x: p.w * x, inputs)]
"""


def test_an_unregistered_pytree_type_is_one_clear_message_without_jaxports_frames(pytester):
  write_project(pytester, textwrap.dedent(UNREGISTERED))
  result = _run(pytester, "--compat-record")
  assert result.ret == 1
  text = _text(result)
  assert ("case dense: recording failed: UnregisteredNodeError: case dense: its arguments "
          "hold `<class 'mycases.Params'>`") in text
  assert "jax.export refuses to serialize" in text
  assert ("Return its contents as a tuple or dict instead, or register it: "
          "jaxport.register_pytree_node_serialization(Params, "
          "serialized_name='mycases.Params'") in text
  assert "serde/_write.py" not in text and "Traceback" not in text
