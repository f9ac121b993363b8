"""Compatibility reports: the harness's JSON report read as typed records, merged, rendered.

``load_report`` reads a report written by ``pytest harness/ --compat-report=RUN.json``;
``merge_reports`` combines the reports of shards of one run; ``render_html`` and
``render_markdown`` turn a run (and earlier runs, for history) into a page and a
job summary. The command line is ``jaxport report merge`` and ``jaxport report render``.
"""

import typing as _typing

from jaxport import _lazy

# Each public name and the module defining it, imported on first use: a process that
# needs one part of the report (the worker writing a file atomically, the session its
# model) does not import the renderers.
_EXPORTS = {
    "CorpusImport": "jaxport.report._sections",
    "DRIFT_KINDS": "jaxport._vocabulary",
    "DriftItem": "jaxport.report._sections",
    "EntryResult": "jaxport.report._entries",
    "Finding": "jaxport._vocabulary",
    "FindingKind": "jaxport._vocabulary",
    "PlatformTargets": "jaxport.report._sections",
    "REPORT_FORMAT": "jaxport.report._fields",
    "Recorded": "jaxport.report._sections",
    "Release": "jaxport.report._sections",
    "RunReport": "jaxport.report._model",
    "ShardRef": "jaxport.report._sections",
    "Skip": "jaxport.report._sections",
    "Status": "jaxport._vocabulary",
    "Subject": "jaxport._vocabulary",
    "Summary": "jaxport.report._model",
    "Targets": "jaxport.report._sections",
    "Updated": "jaxport.report._sections",
    "Window": "jaxport.report._sections",
    "load_report": "jaxport.report._model",
    "merge_reports": "jaxport.report._merge",
    "render_html": "jaxport.report._html",
    "render_markdown": "jaxport.report._markdown",
    "ServedBy": "jaxport.report._served",
    "load_served": "jaxport.report._served",
    "write_report": "jaxport.report._model",
}

if _typing.TYPE_CHECKING:  # the same names, for type checkers and editors
  from jaxport.report._html import render_html as render_html
  from jaxport.report._markdown import render_markdown as render_markdown
  from jaxport.report._merge import merge_reports as merge_reports
  from jaxport.report._served import ServedBy as ServedBy, load_served as load_served
  from jaxport._vocabulary import (
      DRIFT_KINDS as DRIFT_KINDS,
      Finding as Finding,
      FindingKind as FindingKind,
      Status as Status,
      Subject as Subject,
  )
  from jaxport.report._entries import EntryResult as EntryResult
  from jaxport.report._fields import REPORT_FORMAT as REPORT_FORMAT
  from jaxport.report._model import (
      RunReport as RunReport,
      Summary as Summary,
      load_report as load_report,
      write_report as write_report,
  )
  from jaxport.report._sections import (
      CorpusImport as CorpusImport,
      DriftItem as DriftItem,
      PlatformTargets as PlatformTargets,
      Recorded as Recorded,
      Release as Release,
      ShardRef as ShardRef,
      Skip as Skip,
      Targets as Targets,
      Updated as Updated,
      Window as Window,
  )

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy.attach(globals(), _EXPORTS)
