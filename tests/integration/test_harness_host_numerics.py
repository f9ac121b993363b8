"""Bitwise verdicts depend on the host: an entry recorded on this machine and replayed here
with one output one ulp off is ``numerics_drift``; the same entry claiming another recording
host is a pass with the reason, counted apart from the bitwise passes."""

import dataclasses
import html
import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jaxport.golden import _host
from jaxport.golden._host import current_host
from jaxport.golden import EntryId
from jaxport.golden._store import GoldenStore
from jaxport.report import load_report, render_html, render_markdown

from _downstream_project import write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = """
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from jaxport.golden import _host
from jaxport.harness import Case, random_matrix

# The worker imports this module before it reads its host: a test can stand in another CPU,
# with a CPU information file beside the module.
FAKE_CPUINFO = Path(__file__).with_name("fake_cpuinfo")
if FAKE_CPUINFO.exists():
  _host.CPUINFO = FAKE_CPUINFO


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}


def cases():
  return [Case("sines_f32", "mine", lambda a: jnp.sin(a) * 3, square)]
"""


# CPU model names as /proc/cpuinfo spells them on other machines: with parentheses that
# Markdown escapes, and with characters Markdown reads as emphasis. None: this machine's own.
CPU_MODELS = {"this machine": None,
              "intel": ("GenuineIntel", "Intel(R) Xeon(R) Processor"),
              "amd": ("AuthenticAMD", "AMD EPYC 9654 *_x")}


@pytest.fixture(params=sorted(CPU_MODELS))
def cpu(request, pytester, monkeypatch):
  """The host the test's sessions run on: this machine, or one whose /proc/cpuinfo names
  another vendor and model (a file beside the case module, which the worker reads through
  it; a file rather than a variable, so that the sessions' workers fork from the parent the
  other tests' sessions use). The sessions run in this process, which a recording makes
  import the case module: jaxport's CPU information file is put back after the test."""
  monkeypatch.setattr(_host, "CPUINFO", _host.CPUINFO)
  fake = CPU_MODELS[request.param]
  if fake is not None:
    vendor, model = fake
    (Path(pytester.path) / "fake_cpuinfo").write_text(
        f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: {model}\n"
        "flags\t\t: fpu sse4_2 avx avx2 fma\n\n")
  return fake


def shown_in_markdown(text: str) -> str:
  """What a reader of rendered Markdown sees of ``text``: backslash escapes undone."""
  return re.sub(r"\\(.)", r"\1", text)


def _run(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", "--compat-today=2026-12-01", *args)


def _replace_entry(store: GoldenStore, entry_id: EntryId, expected=None, **manifest_changes):
  """Write the entry again in place with other expected outputs or manifest fields; the store
  computes the files' hashes and the digest anew (a re-digested entry)."""
  e = store.entry(entry_id)
  m, blob, inputs, module = e.manifest, e.blob(), e.inputs(), e.module_text()
  expected = e.expected_outputs() if expected is None else expected
  for p in sorted(e.path.iterdir()):
    p.unlink()
  e.path.rmdir()
  m = dataclasses.replace(m, files={}, arrays={}, **manifest_changes)
  return store.write_entry(m, blob, inputs, expected, module)


def _entry(report_path):
  report = json.loads(report_path.read_text())
  (entry,) = report["entries"]
  return report, entry


def test_one_ulp_is_drift_on_the_recording_host_class_and_a_pass_on_another(pytester, tmp_path,
                                                                             cpu):
  store = write_project(pytester, textwrap.dedent(CASES))
  assert _run(pytester, "--compat-record").ret == 0
  (entry_id,) = [e.entry_id for e in store.entries()]
  recorded = store.entry(entry_id).manifest.host
  assert recorded is not None
  if cpu is None:
    assert recorded.same_class(current_host("cpu"))
  else:
    assert (recorded.cpu_vendor, recorded.cpu_model) == cpu

  # Replayed as recorded: bitwise, a plain pass.
  report_file = tmp_path / "same.json"
  _run(pytester, f"--compat-report={report_file}")
  report, entry = _entry(report_file)
  assert entry["status"] == "pass" and entry["kinds"] == []
  assert entry["recorded_host"] == recorded.to_json()
  assert report["replay_hosts"] == [recorded.to_json()]

  # One output one ulp off, on the host class that recorded it: the bits changed here.
  (out,) = store.entry(entry_id).expected_outputs()
  bumped = out.copy()
  bumped.flat[0] = np.nextafter(bumped.flat[0], np.float32(np.inf))
  _replace_entry(store, entry_id, expected=[bumped])
  report_file = tmp_path / "ulp.json"
  _run(pytester, f"--compat-report={report_file}")
  report, entry = _entry(report_file)
  assert entry["status"] == "drift" and entry["kinds"] == ["numerics_drift"]
  assert any("reader: results within tolerance but not bitwise equal" in m
             for m in entry["messages"])
  assert report["summary"].get("pass_other_host", 0) == 0

  # The same entry, recorded (it says) on another CPU: bitwise equality was not expected.
  _replace_entry(store, entry_id, host=dataclasses.replace(recorded, cpu_model="Another CPU"))
  report_file = tmp_path / "other.json"
  result = _run(pytester, f"--compat-report={report_file}")
  assert result.ret == 0
  report, entry = _entry(report_file)
  assert entry["status"] == "pass" and entry["kinds"] == ["numerics_other_host"]
  assert all("bitwise equality was not expected: recorded on another host class "
             "(cpu_model 'Another CPU' vs" in m for m in entry["messages"])
  assert report["summary"]["pass_other_host"] == 1
  result.stdout.fnmatch_lines(["*1 of the passes matched within tolerance, not bitwise, on "
                               "another host class*"])

  # The page and the job summary name both hosts.
  run = load_report(report_file)
  assert run.summary.other_host == 1 and run.entries[0].recorded_host["cpu_model"] == "Another CPU"
  page = render_html(run)
  assert "recording host" in page and "Another CPU" in page
  assert "Replayed on: " + recorded.describe() in html.unescape(page)
  summary = render_markdown(run)
  assert "1 of the passes within tolerance on another host class" in summary
  assert recorded.describe() in shown_in_markdown(summary)
