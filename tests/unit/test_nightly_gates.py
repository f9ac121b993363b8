"""The nightly's gates that need no jax: a night without a nightly is said and tolerated until
the third in a row; every workflow action is pinned to a commit with its tag; no replay job
may fail without failing the run; and zizmor finds nothing on the workflows."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
TEMPLATE = ROOT / "examples" / "downstream" / ".github" / "workflows" / "compat.yml"
RELEASES_TEMPLATE = TEMPLATE.with_name("releases.yml")


def _load(name: str):
  spec = importlib.util.spec_from_file_location(f"_ci_{name}", ROOT / ".ci" / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[f"_ci_{name}"] = module  # dataclasses look their module up while defining
  spec.loader.exec_module(module)
  return module


def _summary(tmp_path: Path, night: str, monkeypatch) -> tuple[int, str]:
  steps = _load("nightly_steps")
  monkeypatch.setattr(steps, "REPORTS", tmp_path / "reports")
  monkeypatch.setattr(steps, "HISTORY", tmp_path / "history")
  monkeypatch.setenv("NIGHTLY_DATE", night)
  monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / f"summary-{night}.md"))
  (tmp_path / "reports").mkdir(exist_ok=True)
  (tmp_path / "reports" / "install-cpu-nightly.json").write_text(json.dumps(
      {"label": "nightly", "installed": False, "why": "the index served no nightly"}))
  status = steps.summary("nightly")
  return status, (tmp_path / f"summary-{night}.md").read_text()


def test_nights_without_a_nightly_are_tolerated_until_the_third_in_a_row(tmp_path, monkeypatch):
  history = tmp_path / "history"
  history.mkdir()
  (history / "compat-cpu-nightly-2026-11-27-9.json").write_text("{}")
  status, text = _summary(tmp_path, "2026-11-28", monkeypatch)
  assert status == 0 and "No jax nightly was installed on 2026-11-28" in text
  assert "Nights in a row without one: 1" in text
  assert _summary(tmp_path, "2026-11-29", monkeypatch)[0] == 0
  status, text = _summary(tmp_path, "2026-11-30", monkeypatch)
  assert status == 1 and "Nights in a row without one: 3" in text
  # A night with a build in between starts the count again.
  (history / "compat-cpu-nightly-2026-12-01-9.json").write_text("{}")
  status, text = _summary(tmp_path, "2026-12-02", monkeypatch)
  assert status == 0 and "Nights in a row without one: 1" in text


def test_a_night_whose_jax_installed_but_wrote_no_report_fails(tmp_path, monkeypatch):
  steps = _load("nightly_steps")
  monkeypatch.setattr(steps, "REPORTS", tmp_path / "reports")
  monkeypatch.setattr(steps, "HISTORY", tmp_path / "history")
  monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
  assert steps.summary("newest") == 1
  assert "wrote no report" in (tmp_path / "summary.md").read_text()


def test_an_unpinned_or_untagged_action_is_named(tmp_path):
  pins = _load("action_pins")
  workflow = tmp_path / "w.yml"
  workflow.write_text("steps:\n"
                      "  - uses: actions/checkout@v4\n"
                      "  - uses: actions/cache/save@0057852bfaa89a56745cba8c7296529d2fc39830\n"
                      "  - uses: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065"
                      "  # v5.6.0\n"
                      "  - uses: ./local-action\n")
  found, problems = pins.read_pins(workflow)
  assert [(p.repo, p.tag) for p in found] == [("actions/setup-python", "v5.6.0")]
  assert len(problems) == 2
  assert "w.yml:2: actions/checkout@v4 is not pinned to a commit" in problems[0]
  assert "w.yml:3:" in problems[1] and "names no tag" in problems[1]


@pytest.mark.parametrize("path", [*WORKFLOWS, TEMPLATE, RELEASES_TEMPLATE], ids=lambda p: p.name)
def test_every_workflow_pins_its_actions_gates_and_keeps_no_credentials(path):
  pins = _load("action_pins")
  found, problems = pins.read_pins(path)
  assert found and not problems, problems
  text = path.read_text()
  assert "continue-on-error" not in text
  checkouts = len(re.findall(r"uses: actions/checkout@", text))
  assert checkouts == len(re.findall(r"persist-credentials: false", text))


def test_the_nightly_installs_nightlies_from_the_index_it_is_given():
  text = (ROOT / ".github" / "workflows" / "nightly-compat.yml").read_text()
  assert "JAX_NIGHTLY_INDEX: >-\n    https://us-python.pkg.dev/" in text
  assert "jax: [pinned, newest, nightly]" in text and "prerelease" not in text
  steps = (ROOT / ".ci" / "nightly_steps.py").read_text()
  assert 'os.environ.get("JAX_NIGHTLY_INDEX")' in steps and '"--extra-index-url", index' in steps
  assert "JAX_NIGHTLY_INDEX" in TEMPLATE.read_text()


@pytest.mark.parametrize("doc, template", [("downstream.md", TEMPLATE),
                                           ("multi-release.md", RELEASES_TEMPLATE)])
def test_the_docs_show_the_template_file_as_it_is(doc, template):
  docs = (ROOT / "docs" / doc).read_text()
  blocks = re.findall(r"```yaml\n(.*?)```", docs, flags=re.S)
  assert template.read_text() in blocks


def test_the_releases_template_plans_with_jaxport_matrix_and_merges_per_release():
  text = RELEASES_TEMPLATE.read_text()
  assert "jaxport matrix --releases" in text and "--plan --json" in text
  assert "fromJSON(needs.plan.outputs.matrix)" in text
  assert 'jaxport replay --with-jax "$JAX_RELEASE"' in text and "jaxport report merge" in text
  # The merge checks the shards against the project: it checks the project out first.
  merge_job = text[text.index("\n  merge:\n"):]
  assert "jaxport report merge --project . " in merge_job
  assert merge_job.index("actions/checkout@") < merge_job.index("jaxport report merge")


def test_zizmor_finds_nothing_on_the_workflows():
  zizmor = shutil.which("zizmor", path=os.path.dirname(sys.executable) + os.pathsep
                        + os.environ.get("PATH", ""))
  if zizmor is None:
    if os.environ.get("CI"):
      pytest.fail("zizmor is not installed; CI installs it with the lint extra "
                  "(pip install -e '.[test,lint]').")
    pytest.skip("zizmor is not installed (pip install -e '.[lint]'); CI runs this check")
  done = subprocess.run([zizmor, "--offline", "--min-severity", "medium",
                         *map(str, WORKFLOWS), str(TEMPLATE), str(RELEASES_TEMPLATE)],
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
  assert "No findings to report" in done.stdout + done.stderr


def _docs_yamllint_config() -> str:
  """The ``-d`` configuration of the yamllint command docs/multi-release.md gives."""
  text = (ROOT / "docs" / "multi-release.md").read_text()
  (config,) = re.findall(r'^yamllint -d "(\{.*\})" \.github/workflows/$', text, re.M)
  return config


def test_the_docs_yamllint_line_limit_holds_in_every_workflow_and_template():
  limit = int(re.search(r"line-length: \{max: (\d+)\}", _docs_yamllint_config()).group(1))
  long = [f"{path.relative_to(ROOT)}:{n}: {len(line)} characters"
          for path in (*WORKFLOWS, TEMPLATE, RELEASES_TEMPLATE)
          for n, line in enumerate(path.read_text().splitlines(), 1)
          # yamllint's default lets a line that is one word past its indent run long (a URL).
          if len(line) > limit and " " in line.strip()]
  assert long == [], f"lines over the docs' yamllint limit of {limit}: {long}"


def test_the_docs_yamllint_command_passes_every_workflow_and_template():
  if importlib.util.find_spec("yamllint") is None:
    if os.environ.get("CI"):
      pytest.fail("yamllint is not installed in CI: install the lint extra (pip install "
                  "-e '.[test,lint]')")
    pytest.skip("yamllint is not installed (the lint extra installs it, as docs/multi-release.md "
                "says); the line-limit test above checks what it would find here")
  done = subprocess.run([sys.executable, "-m", "yamllint", "-d", _docs_yamllint_config(),
                         *map(str, WORKFLOWS), str(TEMPLATE), str(RELEASES_TEMPLATE)],
                        capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def test_the_templates_pinned_leg_says_it_pins_only_what_the_project_pins():
  text = TEMPLATE.read_text()
  assert "it tests one\n          # release only where the project pins jax" in text
  pinned = text[text.index("            pinned)"):text.index("            newest)")]
  assert "as the project's" in pinned and '>> "$GITHUB_STEP_SUMMARY"' in pinned
  assert "pin jax there (jax==X.Y.Z)" in pinned


def test_the_nightly_tpu_job_is_off_without_a_runner_label_and_runs_the_accelerator_script():
  text = (ROOT / ".github" / "workflows" / "nightly-compat.yml").read_text()
  start = text.index("\n  record-replay-tpu:\n")
  job = text[start:text.index("\n  release-matrix:\n")]
  assert "vars.TPU_RUNNER_LABEL != ''" in job
  assert '"${{ vars.TPU_RUNNER_LABEL }}"' in job
  flat = " ".join(job.split())
  assert "tools/accelerator/replay_on_accelerator.sh reports/tpu --platform=tpu" in flat
  assert "-n " not in flat and "jax[tpu]==" in flat
  assert "-c .ci/constraints-py311.txt" in flat


def test_the_tf_serving_job_runs_the_newest_two_tensorflow_releases_and_fails_the_unexplained(
    tmp_path):
  from jaxport.releases._tf_table import tf_releases
  text = (ROOT / ".github" / "workflows" / "nightly-compat.yml").read_text()
  job = text[text.index("\n  tf-serving:\n"):]
  listed = json.loads(re.search(r"tf: (\[[^\]]*\])", job)[1])
  assert listed == [".".join(r.version.split(".")[:2]) for r in tf_releases()[-2:]]
  assert job.count('jaxport replay --with-tf "$TF" --project .') == 2
  assert "cd examples/downstream" in job and "path: ~/.cache/jaxport/release-envs" in job
  assert "python3 .ci/tf_serving_gate.py reports/tf-*.json" in job
  gate = _load("tf_serving_gate")
  entry = {"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", "status": "fail",
           "reason": "custom_call", "detail": "refused (custom_call): ..."}
  report = tmp_path / "tf-2.21-store.json"
  report.write_text(json.dumps({"tf": "2.21.0", "entries": [
      entry, {**entry, "entry_id": "cpu/f/d/2026-01-01_jax-0.10.2", "status": None,
              "reason": None}]}))
  lines, problems = gate.verdict(report)
  assert not problems and "2 entries: 1 fail, 1 not called; refused for custom_call 1" in lines[0]
  # A file that is not a tf reader's report fails the night, read by jaxport's own reader.
  (tmp_path / "bad.json").write_text(json.dumps({"tf": "2.21.0"}))
  assert gate.main([str(tmp_path / "bad.json")]) == 1
  report.write_text(json.dumps({"tf": "2.21.0", "entries": [
      {**entry, "reason": None, "detail": "compare: outputs differ"}]}))
  assert gate.main([str(report)]) == 1
