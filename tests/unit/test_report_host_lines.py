"""The host a run replayed on reads, in the page and in the job summary, as its record says,
whatever characters the CPU's model name holds: the renderers escape it, and a reader (or a
test) sees it only once the escapes are undone."""

import html
import re

import pytest

import _report_helpers as helpers
from jaxport.golden._host import Host, current_host
from jaxport.report import RunReport, render_html, render_markdown

# Model names as /proc/cpuinfo spells them on other machines: parentheses Markdown escapes,
# characters it reads as emphasis. None: the host this test runs on.
HOSTS = {"intel": ("GenuineIntel", "Intel(R) Xeon(R) Processor"),
         "amd": ("AuthenticAMD", "AMD EPYC 9654 *_x"),
         "this machine": None}


def _host(name: str) -> Host:
  if HOSTS[name] is None:
    return current_host("cpu")
  vendor, model = HOSTS[name]
  return Host(cpu_vendor=vendor, cpu_model=model, cpu_flags=("avx2", "fma"), jaxlib="0.10.2",
              xla_flags="")


def _shown_in_markdown(text: str) -> str:
  return re.sub(r"\\(.)", r"\1", text)


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_replay_host_reads_as_recorded_in_the_page_and_the_summary(name):
  host = _host(name)
  report = RunReport.from_json(helpers.run_report() | {"replay_hosts": [host.to_json()]})
  page = html.unescape(render_html(report))
  assert "Replayed on: " + host.describe() in page
  assert host.describe() in _shown_in_markdown(render_markdown(report))


def test_a_model_name_with_markdown_syntax_is_escaped_in_the_summary():
  report = RunReport.from_json(helpers.run_report()
                               | {"replay_hosts": [_host("amd").to_json()]})
  summary = render_markdown(report)
  assert "AMD EPYC 9654 *_x" not in summary  # as plain text it would start emphasis
  assert "AMD EPYC 9654 *_x" in _shown_in_markdown(summary)

