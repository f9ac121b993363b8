"""What importing jaxport costs: public names load on first use, and the pytest side of a
golden run (plugin, store, report, registry) never imports jax."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxport.errors import GoldenDataError
from jaxport.harness import _devices
from jaxport.harness._controller import _plugin
from jaxport.harness._registry import CaseRegistry

REPO = Path(__file__).resolve().parents[2]


def _run(script: str, env: dict | None = None) -> dict:
  proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                        text=True, cwd=REPO, timeout=120, env=env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("statement", [
    "import jaxport",
    "import jaxport.harness",
    "import jaxport.harness._controller._plugin",
    "import jaxport.harness._controller._worker_client, jaxport.harness._controller._worker_pool",
    "import jaxport.golden; jaxport.golden.GoldenStore; jaxport.golden.Manifest",
    "import jaxport.report; jaxport.report.load_report",
    "from jaxport.harness._protocol import _readers; _readers.readers()",
])
def test_the_pytest_side_imports_no_jax(statement):
  loaded = _run(f"""
      import json, sys
      {statement}
      print(json.dumps(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax."))))
  """)
  assert loaded == [], f"{statement!r} imported {loaded[:5]}"


def test_public_names_resolve_on_first_use_to_the_functions_not_the_subpackages():
  seen = _run("""
      import json, sys
      import jaxport
      before = "jax" in sys.modules
      import jaxport.export._lower, jaxport.golden._signatures
      from jaxport import export
      print(json.dumps({"before": before, "export": type(jaxport.export).__name__,
                        "imported": export is jaxport.export, "after": "jax" in sys.modules,
                        "missing": [n for n in jaxport.__all__ if not hasattr(jaxport, n)],
                        "listed": sorted(set(jaxport.__all__) - set(dir(jaxport)))}))
  """)
  assert seen == {"before": False, "export": "function", "imported": True, "after": True,
                  "missing": [], "listed": []}


@pytest.mark.parametrize("package", ["jaxport", "jaxport.golden", "jaxport.harness",
                                     "jaxport.report"])
def test_type_checkers_see_the_same_names_from_the_same_modules(package):
  module = importlib.import_module(package)
  tree = ast.parse(Path(module.__file__).read_text())
  seen = {}
  for node in tree.body:
    if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
      for imp in node.body:
        seen.update({alias.asname or alias.name: imp.module for alias in imp.names})
  assert seen == module._EXPORTS


def test_an_unknown_public_name_is_an_attribute_error():
  import jaxport
  with pytest.raises(AttributeError, match="'jaxport' has no attribute 'no_such_name'"):
    jaxport.no_such_name  # noqa: B018


@pytest.mark.parametrize("platforms, only_cpu", [("cpu", True), ("cpu,cuda", True),
                                                 ("cuda,cpu", False), ("tpu", False)])
def test_jax_platforms_decides_the_default_backend(monkeypatch, platforms, only_cpu):
  monkeypatch.setenv("JAX_PLATFORMS", platforms)
  assert _devices.only_cpu_possible() is only_cpu


def test_an_installed_pjrt_plugin_means_the_backend_must_be_asked(monkeypatch, tmp_path):
  monkeypatch.delenv("JAX_PLATFORMS", raising=False)
  plugin = tmp_path / "jax_plugins" / "some_accelerator"
  plugin.mkdir(parents=True)
  (plugin / "__init__.py").write_text("")
  monkeypatch.syspath_prepend(str(tmp_path))
  assert _devices.only_cpu_possible() is False


def test_prefetched_cases_are_the_same_and_a_broken_module_still_fails_on_use(monkeypatch,
                                                                              tmp_path):
  (tmp_path / "prefetch_good_cases.py").write_text(textwrap.dedent("""
      from jaxport.harness import Case
      def cases():
        return [Case(case_id="prefetched_sin", family="prefetch", fun=lambda x: x,
                     make_inputs=lambda: ((), {}))]
  """))
  (tmp_path / "prefetch_broken_cases.py").write_text("raise ImportError('needs a missing lib')\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  good = CaseRegistry(("prefetch_good_cases",))
  good.prefetch()
  assert list(good.by_id) == ["prefetched_sin"]
  broken = CaseRegistry(("prefetch_broken_cases",))
  broken.prefetch()
  with pytest.raises(GoldenDataError, match="'prefetch_broken_cases' cannot be imported"):
    broken.by_id  # noqa: B018


def test_writing_a_file_atomically_does_not_import_the_report_renderers():
  # The worker keeps compile errors with the report's atomic write: the page and summary
  # renderers stay out of its start-up.
  loaded = _run("""
      import json, sys
      import jaxport.report._files
      print(json.dumps(sorted(m for m in sys.modules if m.startswith("jaxport.report."))))
  """)
  assert loaded == ["jaxport.report._files"]


def test_commands_that_read_no_artifact_start_without_jax(tmp_path):
  (tmp_path / "store").mkdir()
  seen = _run(f"""
      import json, sys
      from jaxport.cli import _main
      status = _main.main(["prune", "--older-than-days", "1", "--root", {str(tmp_path / "store")!r}])
      light = {{name: (_main._command(name), "jax" in sys.modules)[1]
               for name in ("record", "replay", "prune", "report")}}
      _main._command("audit")
      print(json.dumps({{"status": status, "light": light, "audit": "jax" in sys.modules}}))
  """)
  assert seen["status"] == 0
  assert seen["light"] == {"record": False, "replay": False, "prune": False, "report": False}
  # The commands that read artifacts' modules do load it, once they run.
  assert seen["audit"] is True
