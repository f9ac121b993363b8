"""Control and bidirectional characters from case code (an exception's message) are shown
escaped in the HTML page, the Markdown summary and the terminal summary, never written raw."""

import _report_helpers as helpers
from jaxport.harness._controller import _reporter
from jaxport.report import RunReport
from jaxport.report._html import render_html
from jaxport.report._markdown import render_markdown
from jaxport.report._visible import visible

HOSTILE = "case raised: abc\u202edcba \u2066x\u2069 nul\x00 esc\x1b[31m"
RAW = ("\u202e", "\u2066", "\u2069", "\x00", "\x1b")


def _report() -> RunReport:
  entries = helpers._entries()
  failing = next(e for e in entries if e["status"] == "fail")
  message = f"jax reader: run failed: {HOSTILE}"
  failing["messages"] = [f"[compatibility_break] {message}"]
  failing["findings"] = [{"kind": "compatibility_break", "subject": "reader",
                          "message": message, "reader": "jax", "detail": None}]
  return RunReport.from_json(helpers.run_report(entries=entries))


def test_visible_escapes_controls_and_bidi_characters_and_keeps_lines():
  assert visible("a\u202eb\u2066c\x00d\n\te\u00e9") == "a\\u202eb\\u2066c\\x00d\n\te\u00e9"


def test_the_page_the_markdown_and_the_terminal_summary_show_them_escaped():
  report = _report()
  for name, text in (("html", render_html(report)), ("markdown", render_markdown(report)),
                     ("terminal", "\n".join(_reporter.text_lines(report)))):
    assert not any(c in text for c in RAW), name
    assert "\\u202e" in text and "\\u2066" in text and "\\x00" in text, name
