"""Compatibility reports: the harness's JSON report read as typed records, merged, rendered.

``load_report`` reads a report written by ``pytest harness/ --compat-report=RUN.json``;
``merge_reports`` combines the reports of shards of one run; ``render_html`` and
``render_markdown`` turn a run (and earlier runs, for history) into a page and a
job summary. The command line is ``jaxport report merge`` and ``jaxport report render``.
"""

from jaxport.report._html import render_html as render_html
from jaxport.report._markdown import render_markdown as render_markdown
from jaxport.report._merge import merge_reports as merge_reports
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

__all__ = [
    "DRIFT_KINDS",
    "REPORT_FORMAT",
    "CorpusImport",
    "DriftItem",
    "EntryResult",
    "Finding",
    "FindingKind",
    "PlatformTargets",
    "Recorded",
    "Release",
    "RunReport",
    "ShardRef",
    "Skip",
    "Status",
    "Subject",
    "Summary",
    "Targets",
    "Updated",
    "Window",
    "load_report",
    "merge_reports",
    "render_html",
    "render_markdown",
    "write_report",
]
