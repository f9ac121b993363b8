"""What a replay does with a record its reader could not run: the expired envelope
rewritten (``jaxport.upgrade_envelope``), the record upgraded (``jaxport.upgrade``) and
called again."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from jaxport.errors import DeserializationError, UpgradeError
from jaxport.golden._manifest import Manifest
from jaxport.harness._worker import _reference as _api, _contexts, _lowering, _stopwatch
from jaxport.harness._worker._case_runs import run_exported_arrays
from jaxport.harness._worker._error_text import error_text
from jaxport.harness._protocol._answers import EnvelopeRead, ReaderResult, Stage, UpgradedRun
from jaxport.upgrades import (EnvelopeRewrite, UpgradeReport, expired_reason, rewritable_targets,
                              rewrite_envelope, upgrade_with_report)


@dataclasses.dataclass(frozen=True)
class Envelope:
  """An entry's envelope that the installed jax refuses as expired, rewritten by
  ``jaxport.upgrade_envelope`` into the layout it reads (the module kept)."""
  blob: bytes
  rewrite: EnvelopeRewrite

  def read(self, error_before: str) -> EnvelopeRead:
    """The record of this rewrite, read after the original envelope was refused."""
    r = self.rewrite
    return EnvelopeRead(r.layout, r.from_version, r.to_version, r.reason, r.producer, error_before)


def expired_envelope(blob: bytes) -> Envelope | None:
  """The rewritten envelope of ``blob`` when the installed jax refuses it as expired, else
  None (also when the blob is unreadable: the readers' own replays report that)."""
  try:
    if expired_reason(blob) is None:
      return None
    rewritten, rewrite = rewrite_envelope(blob)
  except Exception:  # noqa: BLE001
    return None
  return None if rewrite is None else Envelope(bytes(rewritten), rewrite)


@dataclasses.dataclass(frozen=True)
class UpgradeAttempt:
  """A record upgraded by ``jaxport.upgrade`` and run: refused, nothing to rewrite, failed, or
  its outputs (judged against the outputs the producer recorded)."""

  refused: str | None = None
  report: UpgradeReport | None = None
  arrays: list[Any] | None = None
  error: str | None = None

  def taken(self, failed: ReaderResult) -> tuple[ReaderResult, list[Any] | None]:
    """A reader's result ``failed`` (its record did not run) with what this upgrade did, and
    the outputs to judge (None when the result is complete)."""
    if self.refused is not None:
      return dataclasses.replace(failed, upgrade_refused=self.refused), None
    if self.report is None:
      return failed, None
    upgraded = UpgradedRun(tuple(self.report.rules_applied), failed.error,
                           tuple(r.to_json() for r in self.report.rewrites))
    if self.error is not None:
      return dataclasses.replace(failed, stage=Stage.RUN_UPGRADED, error=self.error,
                                 upgraded=upgraded), None
    return dataclasses.replace(failed, error=None, upgraded=upgraded), self.arrays


def upgrade_and_run(exp: Any, inputs: list[np.ndarray], watch: _stopwatch.Stopwatch) -> UpgradeAttempt:
  """Upgrade a reader's record and call the upgraded record on the stored inputs."""
  try:
    report = upgrade_with_report(exp)
  except (UpgradeError, DeserializationError) as e:
    # A module this jaxlib cannot parse (newer StableHLO than it reads) has nothing to upgrade.
    return UpgradeAttempt(refused=error_text(e))
  if not report.rewrites:
    return UpgradeAttempt()
  try:
    with watch.stage(_stopwatch.CALL):
      return UpgradeAttempt(report=report, arrays=run_exported_arrays(report.exported, inputs))
  except Exception as e:  # noqa: BLE001
    return UpgradeAttempt(report=report, error=error_text(e))


def upgrade_ahead(reader: str, blob: bytes, inputs: list[np.ndarray],
                   watch: _stopwatch.Stopwatch) -> UpgradeAttempt | None:
  """The reader's upgraded run, started before its record has failed (None: the reader cannot
  read the blob; its own replay reports that)."""
  with _contexts.lowering_for(reader):
    try:
      exp = _api.deserialize(blob, reader=reader)
    except Exception:  # noqa: BLE001
      return None
    return upgrade_and_run(exp, inputs, watch)


def upgradable(m: Manifest) -> bool:
  """Whether the entry's recorded targets include ones ``jaxport.upgrade`` rewrites."""
  return not m.lowering_only and bool(
      rewritable_targets() & set(_lowering.targets(m.custom_call_targets)))
