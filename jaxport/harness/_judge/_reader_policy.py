"""The measured reader policy of each jax release: which envelope layouts its reader reads.

jax 0.11.1 started refusing envelopes older than its 6-month window. Which
release reads which layout is not guessed from release notes: it is measured
(``harness/tools/release_table.py`` reads one blob of each layout with each
release's own ``jax.export.deserialize``) and kept in the one release table,
``jaxport/releases/release_table.json``; this module is the reader-policy view
of it. The harness cites it when a reader refuses an expired envelope, and
flags a refusal the measurement does not predict.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxport._records import Strict
from jaxport.errors import GoldenDataError, ReleaseTableError
from jaxport.releases import _table

FORMAT_VERSION = 1
# The one file the policy is read from: the release table.
POLICY_FILE = _table.TABLE_FILE


class ReadStatus(enum.Enum):
  READS = "reads"
  REFUSES_EXPIRED = "refuses_expired"   # "older than the 6-month backward-compatibility window"
  REFUSES = "refuses"                   # any other error (a layout newer than the reader)


@dataclasses.dataclass(frozen=True)
class Reading:
  """One measured read: a release's reader on one layout."""
  status: ReadStatus
  error: str | None


@dataclasses.dataclass(frozen=True)
class ReaderPolicy:
  measured_on: str
  written_by: dict[str, str]                      # layout -> the release whose blob was read
  readers: dict[str, dict[str, Reading]]          # consumer release -> layout -> reading

  def reading(self, consumer: str | None, layout: str) -> Reading | None:
    """What ``consumer``'s reader measured on ``layout`` (None: not measured)."""
    return self.readers.get(consumer or "", {}).get(layout)

  def describe(self, consumer: str | None, layout: str) -> str:
    """One line for a report: what the measurement says of ``consumer`` and ``layout``."""
    found = self.reading(consumer, layout)
    if found is None:
      return f"jax {consumer}'s reader was not measured on layout {layout}"
    return (f"measured {self.measured_on}: jax {consumer}'s reader {found.status.value.replace('_', ' ')} "
            f"layout {layout} (a blob of jax {self.written_by.get(layout, '?')})")


def _bad(where: str, what: str) -> GoldenDataError:
  return GoldenDataError(f"{where}: {what}. The file ships with jaxport: reinstall jaxport to "
                         "restore it (in a jaxport source checkout, measure it again with the "
                         "release-table tool).")


def parse(doc: Any, where: str) -> ReaderPolicy:
  """A :class:`ReaderPolicy` from its JSON document; every field is required but ``method``
  (how a measurement was made, as the reader-policy tool writes it)."""
  strict = Strict(lambda at, what: _bad(f"{where}: {at}", what))
  version = strict.obj(doc, "the policy", ("format_version",))["format_version"]
  if strict.count(version, "format_version") != FORMAT_VERSION:
    raise strict.fail("format_version", f"expected {FORMAT_VERSION}, got {version}")
  doc = strict.obj(doc, "the policy", ("measured_on", "layouts", "readers"),
                   ("format_version", "method"))
  written_by = {
      layout: strict.of(strict.obj(v, f"layouts.{layout}", ("written_by",))["written_by"], str,
                        f"layouts.{layout}.written_by")
      for layout, v in strict.of(doc["layouts"], Mapping, "layouts").items()}
  readers = {}
  for release, by_layout in strict.of(doc["readers"], Mapping, "readers").items():
    readers[release] = {}
    for layout, r in strict.of(by_layout, Mapping, f"readers.{release}").items():
      at = f"readers.{release}.{layout}"
      r = strict.obj(r, at, ("status", "error"), ())
      readers[release][layout] = Reading(strict.enum(ReadStatus, r["status"], f"{at}.status"),
                                         strict.of(r["error"], str, f"{at}.error", nullable=True))
  return ReaderPolicy(measured_on=strict.of(doc["measured_on"], str, "measured_on"),
                      written_by=written_by, readers=readers)


def from_table(table: _table.ReleaseTable) -> ReaderPolicy:
  """The reader policy of every measured release of the release table."""
  readers = {
      f.version: {layout: Reading(ReadStatus(status), f.envelope_errors.get(layout))
                  for layout, status in f.envelope_layouts.items()}
      for f in table.facts if f.envelope_layouts}
  return ReaderPolicy(measured_on=table.measured_on, written_by=dict(table.layouts_written_by),
                      readers=readers)


def document(policy: ReaderPolicy) -> dict[str, Any]:
  """``policy`` as the JSON document :func:`parse` reads (what the tools compare)."""
  return {
      "format_version": FORMAT_VERSION, "measured_on": policy.measured_on,
      "layouts": {layout: {"written_by": by} for layout, by in sorted(policy.written_by.items())},
      "readers": {release: {layout: {"status": r.status.value, "error": r.error}
                            for layout, r in sorted(by_layout.items())}
                  for release, by_layout in sorted(policy.readers.items())},
  }


@functools.cache
def load(path: Path = POLICY_FILE) -> ReaderPolicy:
  """The policy of the release table (read once per process)."""
  try:
    return from_table(_table.load(path))
  except ReleaseTableError as e:
    raise _bad(str(path), f"unreadable ({e})") from None
