"""An entry's call by a TensorFlow release's ``XlaCallModule`` (the ``tf`` reader's row): its
status, and the reason TensorFlow refused it, named.

TF Serving's most common break with a jax artifact is TensorFlow refusing it, in words of its
own. The judge names the reason (:class:`TfRefusal`), one of four:

- ``calling_convention``: the artifact's calling convention is outside the release's range
  (both bounds measured per release, ``jaxport/releases/tf_releases.json``);
- ``stablehlo_version``: the artifact was written for a newer StableHLO than the release reads,
  and uses what the release does not know (the first unknown op, where TensorFlow names it);
- ``custom_call``: the module calls a custom call target the release has no handler for
  (jaxlib's LAPACK kernels among them: TensorFlow does not link them);
- ``platform``: the artifact is not exported for the platform the release serves (the CPU).

The first and last are found before TensorFlow is asked (:func:`precheck`, from the table);
all four are also read from TensorFlow's own error text (:func:`refusal_of`). An entry refused,
or one whose outputs differ from the recorded ones, fails; one that reproduced, or ran where
the project's own checker cannot be had, passes; the reader's own failure fails and measured
nothing; an entry the reader cannot call (a multi-device entry, a VJP) has no status.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Sequence

from jaxport._vocabulary import Status
from jaxport.golden._entry_id import EntryId
from jaxport.harness._protocol._release_rows import HARNESS, PROCESS, VERIFY
from jaxport.harness._protocol._tf_rows import PRECHECK, READ, TfRow
from jaxport.releases._tf_table import TfRelease
from jaxport.releases._version_text import parse_version

# The platform a tensorflow-cpu release serves.
SERVED_PLATFORM = "cpu"
# Custom call targets that are jaxlib's own CPU kernels (LAPACK, BLAS), which TensorFlow does
# not link: an artifact calling one never runs there.
_JAXLIB_KERNEL = re.compile(r"^(lapack|blas)_")

_CC_LOW = re.compile(r"version (\d+) is not supported anymore\. Must be >= (\d+)")
_CC_HIGH = re.compile(r"version (\d+) is not supported by this build\. Must be <= (\d+)")
_NO_HANDLER = re.compile(r"No FFI handler registered for ([\w.$-]+)"
                         r"|No registered implementation for (?:untyped |FFI )?custom call to ([\w.$-]+)")
_PLATFORM = re.compile(r"platform (\w+) is not among the platforms required by the module: "
                       r"\[([^\]]*)\]")
_DESERIALIZE = re.compile(r"Cannot deserialize computation|failed to deserialize portable "
                          r"artifact")
_READS = re.compile(r"portable artifact using StableHLO_v([\d.]+)")
_UNKNOWN_OP = re.compile(r"unregistered operation '([^']+)'")
_UNKNOWN_ATTRIBUTE = re.compile(r"unknown (attribute|type) code: (\d+)")


class TfRefusal(enum.StrEnum):
  """Why a TensorFlow release refused an entry (one owner: this module)."""
  CALLING_CONVENTION = "calling_convention"
  STABLEHLO_VERSION = "stablehlo_version"
  CUSTOM_CALL = "custom_call"
  PLATFORM = "platform"


@dataclasses.dataclass(frozen=True)
class Refusal:
  """A named refusal: its ``reason`` and what it says, in words."""
  reason: TfRefusal
  message: str


@dataclasses.dataclass(frozen=True)
class TfRun:
  """The judge's outcome of one ``tf`` reader row: its ``status`` (None: not called there),
  the ``refusal`` when TensorFlow refused it, and why, in words; ``measured``: whether it says
  anything of the release (not where the reader itself failed, nor where it called nothing)."""
  entry_id: EntryId
  status: Status | None
  refusal: Refusal | None
  detail: str
  stage: str
  measured: bool = True

  @property
  def failed(self) -> bool:
    return self.status is Status.FAIL

  @property
  def passed(self) -> bool:
    return self.status is Status.PASS


def _tf(release: TfRelease) -> str:
  return f"TensorFlow {release.version}"


def _cc_refusal(module: int, low: int, high: int, release: TfRelease) -> Refusal:
  side = f"below its lowest, {low}" if module < low else f"above its highest, {high}"
  return Refusal(TfRefusal.CALLING_CONVENTION,
                 f"calling convention {module} is outside the {low} to {high} "
                 f"{_tf(release)}'s XlaCallModule takes ({side})")


def _platform_refusal(platforms: Sequence[str], release: TfRelease) -> Refusal:
  return Refusal(TfRefusal.PLATFORM,
                 f"exported for {', '.join(platforms) or 'no platform'}; {_tf(release)} "
                 f"(tensorflow-cpu) serves {SERVED_PLATFORM} only")


def precheck(calling_convention: int, platforms: Sequence[str],
             release: TfRelease) -> Refusal | None:
  """The refusal the release's measured facts predict for an artifact, before TensorFlow is
  asked: a calling convention outside its range, or no platform it serves."""
  if not release.takes(calling_convention):
    return _cc_refusal(calling_convention, *release.calling_convention, release)
  if SERVED_PLATFORM not in [p.lower() for p in platforms]:
    return _platform_refusal(platforms, release)
  return None


def refusal_of(row: TfRow, release: TfRelease) -> Refusal | None:
  """The refusal TensorFlow's error text in ``row`` names, None when it names none of the four
  (or the row has no error)."""
  error = row.error or ""
  if m := _CC_LOW.search(error) or _CC_HIGH.search(error):
    low, high = release.calling_convention
    bound = int(m[2])
    return _cc_refusal(int(m[1]), bound if m.re is _CC_LOW else low,
                       bound if m.re is _CC_HIGH else high, release)
  if m := _NO_HANDLER.search(error):
    target = m[1] or m[2]
    why = (": jaxlib's own CPU kernel, which TensorFlow does not link"
           if _JAXLIB_KERNEL.match(target) else "")
    return Refusal(TfRefusal.CUSTOM_CALL,
                   f"custom call {target!r} has no handler in {_tf(release)}{why}")
  if m := _PLATFORM.search(error):
    return _platform_refusal([p.strip().lower() for p in m[2].split(",")], release)
  if _DESERIALIZE.search(error):
    return _stablehlo_refusal(row, error, release)
  return None


def _stablehlo_refusal(row: TfRow, error: str, release: TfRelease) -> Refusal | None:
  """A module TensorFlow could not read, as a StableHLO version refusal when the artifact is
  newer than what the release reads (TensorFlow's own words name that version when it gives
  them, else the table's)."""
  reads = m[1] if (m := _READS.search(error)) else release.stablehlo
  artifact = row.stablehlo
  if artifact is None or parse_version(artifact) <= parse_version(reads):
    return None
  if m := _UNKNOWN_OP.search(error):
    first = f"the first op it does not know: {m[1]}"
  elif m := _UNKNOWN_ATTRIBUTE.search(error):
    first = f"the first thing it does not know: {m[1]} code {m[2]} (TensorFlow names no op)"
  else:
    first = "TensorFlow names nothing it does not know"
  return Refusal(TfRefusal.STABLEHLO_VERSION,
                 f"written for StableHLO {artifact}, newer than the {reads} {_tf(release)} "
                 f"reads; {first}")


def judge_tf_row(row: TfRow, release: TfRelease) -> TfRun:
  """The outcome of one row of the ``tf`` reader under ``release``."""

  def out(status: Status | None, detail: str, refusal: Refusal | None = None,
          measured: bool = True) -> TfRun:
    return TfRun(row.entry_id, status, refusal, detail, row.stage, measured)

  if row.not_replayable is not None:
    return out(None, row.not_replayable, measured=False)
  if row.stage in (VERIFY, HARNESS, PROCESS) or (row.stage == READ and row.error is not None):
    return out(Status.FAIL, f"{row.stage}: {row.error}", measured=False)
  refusal = None
  if row.calling_convention is not None and row.platforms is not None:
    refusal = precheck(row.calling_convention, row.platforms, release)
  if refusal is None and row.error is not None:
    refusal = refusal_of(row, release)
  if refusal is not None:
    return out(Status.FAIL, f"refused ({refusal.reason}): {refusal.message}", refusal)
  if row.stage == PRECHECK:
    return out(Status.FAIL, "precheck: the row says refused, and the release's facts refuse "
                            "nothing; the tf reader's result is not trusted", measured=False)
  if row.error is not None:
    first = row.error.strip().splitlines()[0] if row.error.strip() else ""
    return out(Status.FAIL, f"{row.stage}: {_tf(release)} failed: {first[:300]}")
  if row.matched is False:
    return out(Status.FAIL, f"{row.stage}: outputs differ: {row.problems}")
  if row.not_compared is not None:
    return out(Status.PASS, f"run by {_tf(release)}'s XlaCallModule: {row.not_compared}")
  if row.matched is None:
    return out(Status.FAIL, f"{row.stage}: the tf reader compared nothing and said not why",
               measured=False)
  return out(Status.PASS, f"served by {_tf(release)}'s XlaCallModule")
