"""`jaxport report render`: a run with every status plus three earlier runs, as HTML and Markdown.

The HTML is parsed with the standard library's parser (balanced, self-contained,
every anchor resolves) and opened in headless Chromium, offline: the screenshot
must be a PNG of the window's size showing the status colours, and the DOM the
browser built must hold every entry.
"""

import datetime
import html.parser
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import _report_helpers as helpers
from jaxport.cli import main
from jaxport.harness._judge._releases import RELEASE_DATES
from jaxport.report._views import UNLISTED_GROUP, CellStatus

pytest_plugins = ["pytester"]

WINDOW = (1000, 1200)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
VOID = {"meta", "br", "img", "hr", "input", "link", "rect", "line"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
  """The four runs' reports, rendered once: (folder, entry ids of the current run, page, summary)."""
  d = tmp_path_factory.mktemp("render")
  paths = []
  for run in helpers.history():
    p = d / f"compat-{run['today']}.json"
    p.write_text(json.dumps(run))
    paths.append(p)
  current, earlier = paths[-1], paths[:-1]
  rc = main(["report", "render", str(current), *map(str, reversed(earlier)),
             "--html", str(d / "out" / "report.html"), "--markdown", str(d / "out" / "summary.md")])
  assert rc == 0
  ids = [e["entry_id"] for e in json.loads(current.read_text())["entries"]]
  return d, ids, (d / "out" / "report.html").read_text(), (d / "out" / "summary.md").read_text()


class _Page(html.parser.HTMLParser):
  """Checks nesting and collects ids, links, external references and the text."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.stack, self.ids, self.links, self.external, self.text, self.errors = [], set(), [], [], [], []

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    if "id" in attrs:
      self.ids.add(attrs["id"])
    for key in ("href", "src"):
      value = attrs.get(key)
      if value is not None and not value.startswith("#") and key == "href" and tag == "a":
        self.external.append(value)
      elif value is not None and key == "src":
        self.external.append(value)
      elif value is not None:
        self.links.append(value[1:])
    if tag in ("script", "link", "iframe", "img"):
      self.external.append(tag)
    if tag not in VOID:
      self.stack.append(tag)

  def handle_endtag(self, tag):
    if tag in VOID:
      return
    if not self.stack or self.stack[-1] != tag:
      self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
    else:
      self.stack.pop()

  def handle_data(self, data):
    self.text.append(data)


def test_page_is_well_formed_self_contained_and_lists_every_entry(rendered):
  _, ids, page, _ = rendered
  p = _Page()
  p.feed(page)
  p.close()
  assert not p.errors and p.stack == [], (p.errors, p.stack)
  assert p.external == [], "the page must not reference anything outside itself"
  assert set(p.links) <= p.ids, f"anchors without a target: {set(p.links) - p.ids}"
  text = " ".join(p.text)
  for entry_id in ids:
    assert f"entry:{entry_id}" in p.ids and entry_id in text
  for status in CellStatus:
    assert status.label in text
  assert "<svg" in page and "2026-11-15" in text      # the chart and the first change
  assert "<b>not markup</b>" in text                  # report text is escaped, not interpreted


def test_markdown_summary_has_counts_matrix_attention_and_history(rendered):
  _, ids, _, md = rendered
  assert "**8 entries replayed** of 8 present" in md
  assert "| `lapack_sgeqrf_ffi` | · | · | 🔴✗ |" in md
  fail_id, = [i for i in ids if "qr_f32" in i]
  assert f"`{fail_id}`" in md and "max rel err 0.25" in md
  assert "| `lapack_sgesdd_ffi` | 2026-11-22 | 🟢✓ | 🟢✓ | 🟢✓ | 🟡! |" in md
  assert len(md.encode()) < 1 << 20


def test_the_summary_and_the_page_of_an_update_run_list_what_changed():
  from jaxport.report import RunReport, render_html, render_markdown
  data = helpers.run_report()
  data["mode"] = "update"
  data["updated"] = [
      {"case_id": "svd_f32", "since": "cpu/svd/svd_f32/2026-10-01_jax-0.10.2",
       "entry_id": "cpu/svd/svd_f32/2026-10-01.2_jax-0.10.2", "action": "written", "message": "",
       "targets_added": ["lapack_sgesdd_ffi"], "targets_removed": ["lapack_sgesvd_ffi"],
       "signature_changes": ["target lapack_sgesdd_ffi is new"], "numerics": []},
      {"case_id": "new_f32", "since": None, "entry_id": None, "action": "error",
       "message": "recording failed: ValueError: bad", "targets_added": [],
       "targets_removed": [], "signature_changes": [], "numerics": []}]
  md = render_markdown(RunReport.from_json(data))
  assert "### Updated cases (2)" in md
  assert ("- **written** `cpu/svd/svd_f32/2026-10-01.2_jax-0.10.2` (since "
          "`cpu/svd/svd_f32/2026-10-01_jax-0.10.2`)") in md
  # Report strings have their Markdown syntax escaped; GitHub shows \[ as [.
  assert "  - targets added \\['lapack_sgesdd_ffi'\\], removed \\['lapack_sgesvd_ffi'\\]" in md
  assert "  - signature: target lapack_sgesdd_ffi is new" in md
  assert "- **error** `new_f32` (a new case)\n  - recording failed: ValueError: bad" in md
  assert "Updated cases" not in render_markdown(RunReport.from_json(helpers.run_report()))
  page = render_html(RunReport.from_json(data))
  assert '<h2 id="updated">Updated cases (2)</h2>' in page and 'href="#updated"' in page
  assert "<li>targets added [&#x27;lapack_sgesdd_ffi&#x27;], removed" in page
  assert "<li>recording failed: ValueError: bad</li>" in page
  assert "Updated cases" not in render_html(RunReport.from_json(helpers.run_report()))


def _chromium() -> str:
  found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
  if found is None:
    if shutil.which("apt-get") is None:
      pytest.skip("no Chromium and no apt-get to install it (Debian's chromium package)")
    pytest.fail("Chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
  return found


def _browser(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess:
  profile = tmp / "profile"
  shutil.rmtree(profile, ignore_errors=True)
  proc = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                         f"--window-size={WINDOW[0]},{WINDOW[1]}", *args, url],
                        capture_output=True, text=True, timeout=180)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def _unfilter(kind: int, line: np.ndarray, prev: np.ndarray, bpp: int) -> np.ndarray:
  """Undo one PNG row filter (None, Sub, Up, Average, Paeth)."""
  if kind == 0:
    return line
  if kind == 1:
    return (np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.int64) % 256).astype(np.uint8).ravel()
  if kind == 2:
    return line + prev
  out, up = line.tolist(), prev.tolist()
  for i in range(len(out)):
    a = out[i - bpp] if i >= bpp else 0
    b = up[i]
    if kind == 3:
      out[i] = (out[i] + (a + b) // 2) & 255
    else:
      c = up[i - bpp] if i >= bpp else 0
      pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
      out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
  return np.array(out, np.uint8)


def _png_pixels(data: bytes) -> np.ndarray:
  """The pixels (height x width x RGB) of an 8-bit RGB or RGBA PNG, decoded here."""
  assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
  pos, idat, header = 8, b"", None
  while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
      header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
      idat += body
    pos += 12 + length
  width, height, depth, colour, _, _, interlace = header
  assert depth == 8 and colour in (2, 6) and interlace == 0, header
  bpp = 3 if colour == 2 else 4
  raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, width * bpp + 1)
  rows, prev = [], np.zeros(width * bpp, np.uint8)
  for y in range(height):
    prev = _unfilter(int(raw[y, 0]), raw[y, 1:].copy(), prev, bpp)
    rows.append(prev)
  return np.stack(rows).reshape(height, width, bpp)[:, :, :3]


def test_chromium_renders_the_page_offline(rendered):
  d, ids, _, _ = rendered
  url = (d / "out" / "report.html").as_uri()
  shot = d / "shot.png"
  _browser(d, url, f"--screenshot={shot}")
  pixels = _png_pixels(shot.read_bytes())
  assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
  colours = {bytes(p) for p in pixels.reshape(-1, 3)}
  assert len(colours) > 20, "the screenshot is (nearly) uniform: the page did not render"
  for status in (CellStatus.PASS, CellStatus.FAIL, CellStatus.WARN, CellStatus.EXPECTED):
    assert bytes.fromhex(status.colour[1:]) in colours, f"no {status.label} colour on screen"
  dom = _browser(d, url, "--dump-dom").stdout
  assert "jaxport compatibility report: cpu, 2026-11-22" in dom
  for entry_id in ids:
    assert entry_id in dom


def _big_report(n: int):
  """A synthetic report of ``n`` entries over five targets and two producers, one in 1,000
  failing."""
  from jaxport.report import RunReport
  targets = ("lapack_spotrf_ffi", "lapack_sgeqrf_ffi", "lapack_ssyevd_ffi", "lapack_sgesdd_ffi",
             "lapack_sorgqr_ffi")
  return RunReport.from_json(helpers.run_report(entries=[
      helpers._entry(f"family_{i % 40}", f"case_{i:05d}", ("0.9.2", "0.10.2")[i % 2],
                     "fail" if i % 1000 == 7 else "pass", [targets[i % 5]])
      for i in range(n)]))


def test_a_ten_thousand_entry_page_leads_from_the_top_to_a_failure_and_opens_any_entry(tmp_path):
  from urllib.parse import quote, unquote
  from jaxport.report import render_html
  from jaxport.report._views import entry_anchor, passing_groups
  report = _big_report(10_000)
  page = render_html(report)
  path = tmp_path / "big.html"
  path.write_text(page)
  p = _Page()
  p.feed(page)
  assert p.external == [] and "<script" not in page and set(p.links) <= p.ids
  # The failures come before every passing entry, and the first link on the page to an
  # entry goes to a failure.
  first = re.search(r'<a class="first-failure" href="#([^"]+)"', page).group(1)
  assert page.index('id="passing"') > page.rindex('class="badge s-fail"')
  failing = {entry_anchor(e.entry_id) for e in report.entries if e.status.value == "fail"}
  assert first in {quote(a, safe="/:._-") for a in failing}
  assert re.search(r'href="#(entry:[^"]+)"', page).group(1) == first
  # Passes are folded in groups; opening an entry by its anchor unfolds its group.
  group = passing_groups(report)[3]
  target = group.entries[len(group.entries) // 2]
  assert f'<details class="group" id="{group.anchor}">' in page
  dom = _browser(tmp_path, f"{path.as_uri()}#{quote(entry_anchor(target.entry_id), safe='/:._-')}",
                 "--dump-dom").stdout
  opened = re.findall(r'<details class="group" id="([^"]+)" open', dom)
  assert opened == [group.anchor], opened
  # In the DOM the browser builds, the first link's target is that failure's card.
  card = re.search(r'<section class="entry" id="%s">\s*<h3><span class="badge ([^"]+)"'
                   % re.escape(unquote(first)), dom)
  assert card is not None and card.group(1) == CellStatus.FAIL.css


# A downstream project without an expected-status table: a cpu case calling a LAPACK target that
# is not on jaxport's stable table and a lowering-only cuda case calling its own kernel, both
# declared stable in its jaxport_stable_targets file.
OWN_TARGETS_CASES = """
import jax
import numpy as np
from jaxport import DisabledSafetyCheck
from jaxport.harness import Case, random_matrix


def thin():
  return (random_matrix(1, (4, 3), np.float32),), {}


def my_kernel(x):
  return jax.ffi.ffi_call("my_kernel", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def cases():
  return [
      Case("pivoted_qr_f32", "own_targets",
           lambda a: jax.lax.linalg.qr(a, pivoting=True, full_matrices=False), thin,
           targets=("lapack_sgeqp3_ffi",),
           disabled_checks=(DisabledSafetyCheck.custom_call("lapack_sgeqp3_ffi"),)),
      Case("my_kernel_cuda", "own_targets", my_kernel, thin, platforms=("cuda",),
           lowering_only=True, targets=("my_kernel",),
           disabled_checks=(DisabledSafetyCheck.custom_call("my_kernel"),)),
  ]
"""


@pytest.mark.slow
def test_a_downstream_run_files_its_declared_targets_and_dates_its_release(pytester, tmp_path,
                                                                          monkeypatch):
  import jax
  monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
  from _downstream_project import write_project
  write_project(pytester, OWN_TARGETS_CASES, jaxport_stable_targets="stable_targets.json")
  (pytester.path / "stable_targets.json").write_text(
      json.dumps({"cpu": ["lapack_sgeqp3_ffi"], "cuda": ["my_kernel"]}))
  run = ("-p", "no:cacheprovider", "--compat-today=2026-11-30")
  assert pytester.runpytest(*run, "--compat-record").ret == 0
  report_file = tmp_path / "replay.json"
  result = pytester.runpytest(*run, f"--compat-report={report_file}")
  assert result.ret == 0, result.stdout.str()
  data = json.loads(report_file.read_text())
  assert data["declared_targets"] == {"cpu": ["lapack_sgeqp3_ffi"], "cuda": ["my_kernel"]}
  assert main(["report", "render", str(report_file), "--html", str(tmp_path / "r.html")]) == 0
  page = (tmp_path / "r.html").read_text()
  # Each declared target is filed under the platform it was declared for, not as unlisted.
  matrix = page[page.index('id="matrix"'):page.index('id="window"')]
  groups = {re.search(r">([^<]*)</th>", chunk).group(1):
            re.findall(r'<tr id="target:[^"]*"><td><code>([^<]*)</code></td>', chunk)
            for chunk in matrix.split('<th class="group"')[1:]}
  assert UNLISTED_GROUP not in groups, groups
  assert "lapack_sgeqp3_ffi" in groups["cpu"] and "my_kernel" in groups["cuda"], groups
  # The installed jax is a known release: the window table gives its date and age, not '?'.
  version = jax.__version__
  released = datetime.date.fromisoformat(RELEASE_DATES[version])
  age = (datetime.date(2026, 11, 30) - released).days
  assert (f"<tr><td>{version}</td><td>{released}</td><td>{age}</td><td>0</td><td>yes</td>"
          in page), page[page.index('id="window"'):page.index('id="coverage"')]
