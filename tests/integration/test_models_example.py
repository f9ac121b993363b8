"""The real-model example (examples/models: flax, optax, equinox, LAPACK) replays its golden
store, recorded under jax 0.11.2, with the jax installed here: every entry passes, and nothing
jax changed between the releases is blamed on the models."""

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from _sessions import session_here
from jaxport.golden._store import GoldenStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "models"
LIBRARIES = ("flax", "optax", "equinox")
RECORDED_BY = "0.11.2"

pytestmark = pytest.mark.slow


def _missing() -> list[str]:
  return [name for name in LIBRARIES if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
  missing = _missing()
  if missing:
    why = (f"the models extra is not installed ({', '.join(missing)} missing): pip install -e "
           "'.[models]' on Python 3.12+, as CI leg 2 does")
    if os.environ.get("CI") and sys.version_info >= (3, 12):
      pytest.fail(why)
    pytest.skip(why)
  copy = tmp_path_factory.mktemp("models") / "models"
  shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
  return copy


def test_the_committed_store_was_recorded_by_jax_0_11_2():
  entries = GoldenStore(EXAMPLE / "golden").entries()
  assert len(entries) == 8
  assert {e.manifest.producer.jax for e in entries} == {RECORDED_BY}
  families = {e.manifest.family for e in entries}
  assert families == {"flax", "optax", "equinox", "lapack"}


def test_the_models_store_replays_without_failure_and_release_differences_name_both_releases(
    example, tmp_path):
  import jax
  report_file = tmp_path / "report.json"
  done = session_here(example, "-p", "no:cacheprovider", "-q", f"--compat-report={report_file}")
  assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
  report = json.loads(report_file.read_text())
  assert report["summary"]["replayed"] == 8 and report["session_failures"] == []
  for entry in report["entries"]:
    # Under another jax, with no entry of that jax to show today's lowering, a lowering
    # difference is not known to be jax's: a warning, never a failure.
    unattributed = "drift_unattributed" in entry["kinds"]
    assert entry["status"] == ("warn" if unattributed else "pass"), entry
    assert not {"lowering_drift", "signature_change", "numerics_change"} & set(entry["kinds"])
  for item in report["drift"]:  # a difference between the releases, said as such
    assert item["kind"] in ("producer_drift", "drift_unattributed"), item
    if jax.__version__ != RECORDED_BY:
      assert f"recorded by jax {RECORDED_BY}, lowered today by jax {jax.__version__}" in (
          item["detail"]), item
