"""Custom-call signatures of a module and how today's differ from the recorded ones.

Signatures are what a compatibility promise is about: the same target name
called with other operand types or attributes is a different contract. They
are read by the golden store's own reader (``jaxport.golden._signatures``), so
the manifest and the replay judge them the same way; this module words the
differences for the harness's findings.
"""

from __future__ import annotations

from jaxport.golden._manifest import CustomCallSignature
from jaxport.golden._signatures import signatures as signatures


def targets(sigs) -> list[str]:
  """The distinct target names of ``sigs``, sorted."""
  return sorted({s.target for s in sigs})


def describe(s: CustomCallSignature) -> str:
  attrs = ", ".join(f"{k}={v}" for k, v in s.attributes.items())
  return f"{s.target}({', '.join(s.operand_types)}) -> ({', '.join(s.result_types)}) {{{attrs}}}"


def diff(recorded, current) -> list[str]:
  """How the current signatures differ from the recorded ones, one line per difference."""
  recorded, current = set(recorded), set(current)
  lines = []
  rec_targets, cur_targets = {s.target for s in recorded}, {s.target for s in current}
  for t in sorted(rec_targets - cur_targets):
    lines.append(f"target {t} is no longer emitted by the current lowering")
  for t in sorted(cur_targets - rec_targets):
    lines.append(f"target {t} is emitted now but was not recorded")
  for t in sorted(rec_targets & cur_targets):
    old = sorted((describe(s) for s in recorded if s.target == t))
    new = sorted((describe(s) for s in current if s.target == t))
    if old != new:
      lines.append(f"target {t} changed signature: recorded {old}, now {new}")
  return lines
