"""jaxport's harness as a downstream project uses it, and a project that does not use it.

``examples/downstream`` is copied outside the repository and driven by its own
``run.sh`` with the installed ``jaxport``: record, replay, then a changed
function, a changed gradient rule, a platform dropped from an export and a tampered
entry must fail by name. A project that has not opted in must see pytest exactly as
without jaxport: same output, no jax or jaxport imported, and ``--compat-*`` options
refused with a clear usage error.
"""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax.ffi
import pytest

import jaxport
import jaxport.releases

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "downstream"
BIN = Path(sys.executable).parent
CLI = BIN / "jaxport"
# The cases every copy records; the native one only where run.sh can compile it.
CASES = {"layers/mlp", "layers/normalize_rows", "layers/serve_scores", "linalg/whiten_f32",
         "linalg/whiten_f64", "stats/update_stats", "noise/soft_clip", "noise/jitter",
         "sharded/dense"}
NATIVE_CASE = "native/softsign"
CHILD_TIMEOUT_S = 300


def _plugin_installed() -> bool:
  return any(ep.name == "jaxport" and ep.value == "jaxport_pytest"
             for ep in importlib.metadata.entry_points(group="pytest11"))


installed = pytest.mark.skipif(
    not (_plugin_installed() and CLI.is_file()),
    reason=f"jaxport is not installed in {sys.prefix} with its pytest11 entry point and "
           "command-line script (pip install -e .); a downstream project needs both")


def _env() -> dict[str, str]:
  """A child's environment: this interpreter's bin first on PATH, and on PYTHONPATH only what
  this process needed to import jaxport itself (nothing when jaxport is installed)."""
  home = Path(jaxport.__file__).resolve().parents[1]
  env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
  keep = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
          if p and Path(p).resolve() == home]
  env.pop("PYTHONPATH", None)
  if keep:
    env["PYTHONPATH"] = os.pathsep.join(keep)
  env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
  env["PYTHON"] = sys.executable
  env["JAXPORT"] = str(CLI)
  return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
  return subprocess.run(cmd, cwd=cwd, env=env or _env(), capture_output=True, text=True,
                        timeout=CHILD_TIMEOUT_S, check=False)


def _output(result: subprocess.CompletedProcess) -> str:
  return result.stdout + result.stderr


def _copy_example(dest: Path) -> Path:
  """The example as its repository holds it (no built library, no recorded entry)."""
  shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.so.jax",
                                                               "cpu"))
  return dest


@pytest.fixture(scope="module")
def built_example(tmp_path_factory) -> Path:
  """The example after ``run.sh build`` (the native kernel compiled where it can be), built once
  for the module: a copy of it keeps the library newer than its source, so its run.sh builds
  nothing again."""
  project = _copy_example(tmp_path_factory.mktemp("built") / "tinyops-project")
  built = _run([str(project / "run.sh"), "build"], project)
  assert built.returncode == 0, _output(built)
  return project


def _copy_built(built_example: Path, dest: Path) -> Path:
  """A copy of the built example, its files' times kept (copytree copies them)."""
  shutil.copytree(built_example, dest, ignore=shutil.ignore_patterns("__pycache__"))
  return dest


def _native_buildable() -> bool:
  header = Path(jax.ffi.include_dir()) / "xla" / "ffi" / "api" / "ffi.h"
  return shutil.which(os.environ.get("CXX", "g++")) is not None and header.is_file()


def _entries(store: Path) -> dict[str, Path]:
  """Entry folders by ``family/case`` (one entry each)."""
  return {f"{d.parent.parent.name}/{d.parent.name}": d for d in store.glob("cpu/*/*/*")}


def _manifest(entry: Path) -> dict:
  return json.loads((entry / "manifest.json").read_text())


def _failed_ids(report: Path) -> list[str]:
  entries = json.loads(report.read_text())["entries"]
  return sorted(e["entry_id"] for e in entries if e["status"] == "fail")


@pytest.mark.skipif(not _native_buildable(),
                    reason="no C++ compiler or no FFI headers in this jax (jax.ffi.include_dir()): "
                           "run.sh builds no native kernel here")
def test_run_sh_builds_the_native_kernel_again_for_another_jax(built_example, tmp_path):
  project = _copy_built(built_example, tmp_path / "tinyops-project")
  library = project / "tinyops" / "native" / "libtinyops_native.so"
  stamp = Path(f"{library}.jax")
  build = [str(project / "run.sh"), "build"]
  assert library.read_bytes()[:4] == b"\x7fELF"
  assert stamp.read_text().strip() == jax.__version__

  library.write_bytes(b"kept")  # newer than the source, built for this jax: left as it is
  kept = _run(build, project)
  assert kept.returncode == 0, _output(kept)
  assert library.read_bytes() == b"kept"

  stamp.write_text("0.0.1\n")  # as if another jax's headers had built it
  rebuilt = _run(build, project)
  assert rebuilt.returncode == 0, _output(rebuilt)
  assert library.read_bytes()[:4] == b"\x7fELF"
  assert stamp.read_text().strip() == jax.__version__


@installed
@pytest.mark.slow
def test_downstream_example_records_replays_and_fails_on_a_changed_function_and_tampering(
    built_example, tmp_path):
  project = _copy_built(built_example, tmp_path / "downstream")
  for f in project.rglob("*"):
    if f.is_file() and f.suffix in (".py", ".sh", ".toml", ".json", ".cc"):
      assert str(ROOT) not in f.read_text(), f"{f.name} names the repository"
  run_sh = str(project / "run.sh")
  store = project / "golden"

  recorded = _run([run_sh, "record"], project)
  assert recorded.returncode == 0, _output(recorded)
  entries = _entries(store)
  expected_cases = CASES | ({NATIVE_CASE} if _native_buildable() else set())
  assert set(entries) == expected_cases, _output(recorded)
  if NATIVE_CASE not in expected_cases:
    assert "native kernel skipped" in recorded.stderr
  targets = {case: {s["target"] for s in _manifest(e)["custom_call_targets"]}
             for case, e in entries.items()}
  assert targets["linalg/whiten_f32"] == {"lapack_spotrf_ffi"}
  assert targets["linalg/whiten_f64"] == {"lapack_dpotrf_ffi"}
  assert _manifest(entries["linalg/whiten_f64"])["jax_config"] == {"jax_enable_x64": True}
  assert _manifest(entries["layers/normalize_rows"])["polymorphic_shapes"] == ["b, 8"]
  assert _manifest(entries["layers/normalize_rows"])["comparison"]["mode"] == "rows_normalized"
  if NATIVE_CASE in entries:
    assert targets[NATIVE_CASE] == {"tinyops_softsign"}
  served = jaxport.deserialize((entries["layers/serve_scores"] / "exported.bin").read_bytes())
  assert served.platforms == ("cpu", "tpu")
  # The gradient is recorded after the outputs, and each output has its dtype's tolerance,
  # the key-first function's float32 output too (its key data is compared exactly).
  tolerances = {case: [(t["path"], t["dtype"], t["rtol"]) for t in _manifest(e)["tolerances"]]
                for case, e in entries.items()}
  assert tolerances["noise/soft_clip"] == [("output", "float32", 1e-4),
                                           ("vjp1:args[0]", "float32", 1e-4)]
  assert tolerances["noise/jitter"] == [("output", "float32", 1e-4)]
  # The eight-device case, exported with the shardings of the jax.jit object tinyops ships.
  placed = json.loads((entries["sharded/dense"] / "shardings.json").read_text())
  assert placed["num_devices"] == 8
  assert [(o["axis_names"], o["spec"]) for o in placed["outputs"]] == [
      (["data", "model"], [["data"], ["model"]])]

  passing = tmp_path / "passing.json"
  replayed = _run([run_sh, "replay", f"--compat-report={passing}"], project)
  assert replayed.returncode == 0, _output(replayed)
  assert f"{len(entries)} passed" in replayed.stdout
  assert f"{len(entries)} entries replayed of {len(entries)} present" in replayed.stdout
  # Every entry replayed here, the project's own FFI kernel's too: the releases each runs on
  # include the installed jax (the project registers its target; the table does not judge it).
  if jax.__version__ in {f.version for f in jaxport.releases.releases() if f.measured}:
    for e in json.loads(passing.read_text())["entries"]:
      assert jax.__version__ in e["runs_on"]["cpu"], e

  layers = project / "tinyops" / "layers.py"
  source = layers.read_text()
  assert "jax.nn.relu" in source
  layers.write_text(source.replace("jax.nn.relu", "jax.nn.gelu"))
  noise = project / "tinyops" / "noise.py"
  rule = noise.read_text()
  assert "jnp.maximum(1 - jnp.tanh(x) ** 2, 0.1)" in rule
  noise.write_text(rule.replace("jnp.maximum(1 - jnp.tanh(x) ** 2, 0.1)", "1 - jnp.tanh(x) ** 2"))
  cases_module = project / "tinyops" / "golden_cases.py"
  cases_source = cases_module.read_text()
  assert 'platforms=("cpu", "tpu")' in cases_source
  cases_module.write_text(cases_source.replace('platforms=("cpu", "tpu")', 'platforms=("cpu",)'))
  blob = entries["linalg/whiten_f32"] / "exported.bin"
  data = bytearray(blob.read_bytes())
  data[len(data) // 2] ^= 0x01
  blob.write_bytes(bytes(data))

  report = tmp_path / "report.json"
  # The eight-device entry replayed above; leaving it out here spares a second worker.
  broken = _run([run_sh, "replay", f"--compat-report={report}", "-k", "not sharded"], project)
  out = _output(broken)
  assert broken.returncode == 1, out
  mlp_id = f"cpu/layers/mlp/{entries['layers/mlp'].name}"
  whiten_id = f"cpu/linalg/whiten_f32/{entries['linalg/whiten_f32'].name}"
  clip_id = f"cpu/noise/soft_clip/{entries['noise/soft_clip'].name}"
  scores_id = f"cpu/layers/serve_scores/{entries['layers/serve_scores'].name}"
  assert _failed_ids(report) == sorted([mlp_id, whiten_id, clip_id, scores_id]), out
  assert ("[signature_change] calling contract of case serve_scores: platforms: ['tpu'] "
          "removed") in out, out
  assert f"FAIL {clip_id}" in out
  assert "[numerics_change] current lowering: VJP output args[0] (order 1)" in out, out
  assert f"FAIL {mlp_id}" in out and f"FAIL {whiten_id}" in out
  assert "[numerics_change] current lowering" in out
  assert re.search(r"golden data error: .*exported\.bin: sha256 mismatch", out), out


def test_run_sh_leaves_the_native_kernel_out_without_a_compiler_or_ffi_headers(tmp_path):
  project = _copy_example(tmp_path / "downstream")
  build = [str(project / "run.sh"), "build"]
  no_compiler = _run(build, project, env={**_env(), "CXX": "no-such-compiler"})
  assert no_compiler.returncode == 0, _output(no_compiler)
  assert "native kernel skipped: no C++ compiler (no-such-compiler)" in no_compiler.stderr
  # A Python that names no include directory stands for a jax without FFI headers.
  no_headers = _run(build, project, env={**_env(), "CXX": "sh", "PYTHON": "true"})
  assert no_headers.returncode == 0, _output(no_headers)
  assert "native kernel skipped: this jax ships no FFI headers" in no_headers.stderr
  assert not list(project.rglob("*.so"))


_PLAIN_CONFTEST = '''
import json
import sys
from pathlib import Path


def pytest_sessionfinish(session):
  loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxport"))
  (Path(__file__).parent / "modules.json").write_text(json.dumps(loaded))
'''


def _plain_project(root: Path) -> Path:
  root.mkdir()
  (root / "pyproject.toml").write_text('[project]\nname = "plain"\nversion = "0"\n\n'
                                       "[tool.pytest.ini_options]\n")
  (root / "conftest.py").write_text(_PLAIN_CONFTEST)
  (root / "test_plain.py").write_text("def test_adds():\n  assert 1 + 1 == 2\n")
  return root


def _normalized(output: str) -> list[str]:
  """pytest's output without durations and the header line listing installed plugins."""
  return [re.sub(r" in \d+\.\d+s", " in <t>", line) for line in output.splitlines()
          if not line.startswith("plugins:")]


@installed
def test_a_project_without_opt_in_runs_pytest_as_if_jaxport_were_absent(tmp_path):
  project = _plain_project(tmp_path / "plain")
  pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]

  with_plugin = _run(pytest_cmd, project)
  assert with_plugin.returncode == 0, _output(with_plugin)
  # The entry point reads jaxport's jax-free settings table (the options' help quotes its
  # defaults); nothing of jax, and not the harness plugin, is loaded.
  loaded = json.loads((project / "modules.json").read_text())
  assert [m for m in loaded if m.split(".")[0] == "jax"] == [], loaded
  assert "jaxport.harness._controller._plugin" not in loaded
  assert "jaxport.harness._controller._session" not in loaded
  assert "jaxport" not in "\n".join(_normalized(_output(with_plugin)))
  without_plugin = _run([*pytest_cmd, "-p", "no:jaxport"], project)
  assert without_plugin.returncode == 0, _output(without_plugin)
  assert _normalized(_output(with_plugin)) == _normalized(_output(without_plugin))

  refused = _run([*pytest_cmd, "--compat-record"], project)
  assert refused.returncode == pytest.ExitCode.USAGE_ERROR, _output(refused)
  assert "--compat-record: this project has not opted into the jaxport compat harness" in (
      refused.stderr)
  assert "jaxport_cases" in refused.stderr
