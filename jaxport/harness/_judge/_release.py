"""An entry judged against the project's expectations table for its producer release and
against jax's compat window: the report's ``release`` record and its verdict.

  ``pass``              expected to pass, passed.
  ``upgraded``          expected to pass, passed after ``jaxport.upgrade``
                        rewrote custom calls today's jaxlib no longer
                        registers (outside the window only).
  ``expected_failure``  expected to fail, failed with the stated reason.
  ``unexpected_failure`` expected to pass, failed.
  ``wrong_failure``     expected to fail, but failed for another reason.
  ``unexpected_pass``   expected to fail, passed: the table row is stale.
  ``policy_violation``  inside the 6-month backward window yet declared or
                        found failing: jax's policy says it must pass.
  ``outside_forward_window`` recorded by a jax release more than three weeks
                        newer than the consumer, and failing (to replay, or to
                        export the case today): jax promises nothing there, so
                        it is reported (xfail with the reason), not a failure.
"""

from __future__ import annotations

import dataclasses
import datetime
import re

from jaxport._vocabulary import (RELEASE_DIFFERENCE_KINDS, ExpectationVerdict, Finding,
                                 FindingKind, Subject)
from jaxport.golden._manifest import Manifest
from jaxport.harness._judge import _expectations, _releases
from jaxport.harness._judge._expectations import EXPECT_FAIL, EXPECT_PASS, Expectation, Table
from jaxport.report._entries import EntryResult
from jaxport.report import Release, Window

V = ExpectationVerdict

# The import source of entries recorded by an older release's own jax.export.
RELEASE_SOURCE = "jax.export"


@dataclasses.dataclass(frozen=True)
class Judgement:
  """An outcome judged against its expectation: the verdict and why."""
  verdict: ExpectationVerdict
  message: str

  @property
  def ok(self) -> bool:
    """Whether the verdict lets the run pass."""
    return self.verdict.ok


def expectation_judgement(expectation: Expectation, failures: list[str],
          window: _releases.WindowPosition | None, upgrade_rules: tuple[str, ...] = ()) -> Judgement:
  """Compare an outcome (its failure messages; empty when it passed) with the expectation.

  ``upgrade_rules`` names the rules ``jaxport.upgrade`` applied before the
  entry passed (empty when it ran as recorded).
  """
  failed = bool(failures)
  inside = window is not None and window.direction == "backward" and window.inside_window
  if upgrade_rules and not failed and inside:
    return Judgement(V.POLICY_VIOLATION,
                     f"ran only after jaxport.upgrade (rules {', '.join(upgrade_rules)}), but "
                     f"producer jax {window.producer} is inside the 6-month window of jax {window.consumer}, "
                     "where jax's policy says it must run as recorded")
  if expectation.status == EXPECT_FAIL and inside:
    return Judgement(V.POLICY_VIOLATION,
                     f"the table expects a failure ({expectation.reason}), but producer jax "
                     f"{window.producer} is {window.gap_days} days older than jax {window.consumer}, "
                     "inside the 6-month window, where jax's policy says it must pass")
  if expectation.status == EXPECT_PASS:
    if not failed and upgrade_rules:
      return Judgement(V.UPGRADED,
                       f"passed after jaxport.upgrade (rules {', '.join(upgrade_rules)})")
    if not failed:
      return Judgement(V.PASS, "passed as expected")
    if inside:
      return Judgement(V.POLICY_VIOLATION,
                       f"failed inside the 6-month window (producer jax {window.producer}, "
                       f"{window.gap_days} days older than jax {window.consumer}), where jax's "
                       "policy says it must pass")
    return Judgement(V.UNEXPECTED_FAILURE,
                     "failed but the project's expectations table (jaxport_expectations) "
                     "expects a pass; if this is a "
                     "deliberate break after the compat window, add a row stating the reason")
  if not failed:
    return Judgement(V.UNEXPECTED_PASS,
                     f"passed but the project's expectations table (jaxport_expectations) "
                     f"expects a failure "
                     f"({expectation.reason}); remove or narrow that row")
  unexplained = [f for f in failures if re.search(expectation.match, f) is None]
  if unexplained:
    return Judgement(V.WRONG_FAILURE,
                     f"failed, but not as expected: the table expects /{expectation.match}/ "
                     f"({expectation.reason}); got: {' | '.join(unexplained)}")
  return Judgement(V.EXPECTED_FAILURE, f"failed as expected: {expectation.reason}")


def _forward_gap(window: _releases.WindowPosition | None) -> bool:
  return window is not None and window.direction == "forward" and not window.inside_window


def _outside_forward_window(window: _releases.WindowPosition) -> Judgement:
  return Judgement(V.OUTSIDE_FORWARD_WINDOW,
                   f"producer jax {window.producer} is {-window.gap_days} days newer than jax "
                   f"{window.consumer}, outside jax's {_releases.FORWARD_WINDOW_DAYS}-day forward "
                   "window: reported, not required to pass")


def with_release(outcome: EntryResult, manifest: Manifest, *, today: datetime.date,
                 consumer: str | None, table: Table) -> EntryResult:
  """``outcome`` with its release annotation (window position, expectation, verdict) and
  the verdict applied.

  An expected failure sets ``expected_failure`` (the harness then reports the
  entry as xfail). A wrong failure or a policy violation is a
  ``compatibility_break`` (the run fails); an unexpected pass gets the
  ``unexpected_pass`` kind (a warning, a failure with --compat-strict).
  """
  producer = manifest.producer.jax
  expectation = table.expectation(producer, manifest.case_id, consumer)
  window = _expectations.window_for(producer, consumer, today)
  breaks = outcome.of_kind(FindingKind.COMPATIBILITY_BREAK)
  damaged = outcome.of_kind(FindingKind.GOLDEN_DATA_ERROR)
  cannot_export = outcome.has(FindingKind.EXPORT_ERROR)
  if damaged:
    # Damaged golden data is judged as an entry that must pass: no row excuses it.
    expectation, breaks = Expectation(EXPECT_PASS), (*damaged, *breaks)
  # Only running the artifact (a reader's failure) or exporting the case today can be
  # excused by the forward gap; golden data errors and crashes always count.
  reader_failures_only = all(f.reader is not None for f in breaks)
  # A row of the table is stricter than the forward gap: its message must match.
  judgement = (_outside_forward_window(window)
               if _forward_gap(window) and (breaks or cannot_export) and reader_failures_only
               and expectation.status == EXPECT_PASS
               else expectation_judgement(expectation, [f.text for f in breaks], window, outcome.upgrade_rules))
  release = Release(producer=producer, consumer=consumer,
                    window=None if window is None else Window.of(window),
                    expected=expectation.status, reason=expectation.reason,
                    verdict=str(judgement.verdict),
                    upgrade_rules=tuple(outcome.upgrade_rules))
  findings = list(outcome.findings)
  expected_failure = outcome.expected_failure
  if judgement.verdict is V.EXPECTED_FAILURE:
    expected_failure = expectation.reason
  elif judgement.verdict is V.OUTSIDE_FORWARD_WINDOW:
    expected_failure = judgement.message
    findings = [_producer_drift(f, (FindingKind.EXPORT_ERROR,)) for f in findings]
  elif judgement.verdict is V.UNEXPECTED_PASS:
    if not outcome.has(FindingKind.UNEXPECTED_PASS):
      findings.append(Finding(FindingKind.UNEXPECTED_PASS, Subject.EXPECTATION, judgement.message))
  elif not judgement.ok:
    expected_failure = None
    if not damaged:  # damaged data says so itself, and fails on its own
      findings.append(Finding(FindingKind.COMPATIBILITY_BREAK, Subject.EXPECTATION,
                              f"{judgement.verdict}: {judgement.message}"))
  imported = manifest.imported_from
  if imported is not None and imported.source == RELEASE_SOURCE and producer != consumer:
    findings = [_producer_drift(f, RELEASE_DIFFERENCE_KINDS) for f in findings]
  return outcome.replace(release=release, findings=tuple(findings),
                         expected_failure=expected_failure)


def _producer_drift(finding: Finding, kinds) -> Finding:
  return finding.rekinded(FindingKind.PRODUCER_DRIFT) if finding.kind in kinds else finding
