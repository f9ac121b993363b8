"""Custom-call signatures of a module and how today's differ from the recorded ones.

Signatures are what a compatibility promise is about: the same target name
called with other operand types or attributes is a different contract. They
are read and compared by the golden store's own code
(``jaxport.golden._signatures``), so the manifest, ``jaxport audit`` and the
replay judge them the same way; this module gives the harness's findings
their plain-string form.
"""

from __future__ import annotations

from collections.abc import Iterable

from jaxport.golden._manifest import CustomCallSignature
from jaxport.golden._signatures import drift
from jaxport.golden._signatures import signatures as signatures


def targets(sigs: Iterable[CustomCallSignature]) -> list[str]:
  """The distinct target names of ``sigs``, sorted."""
  return sorted({s.target for s in sigs})


def diff(recorded: Iterable[CustomCallSignature], current: Iterable[CustomCallSignature]) -> list[str]:
  """How the current signatures differ from the recorded ones, one line per changed target."""
  return [str(change) for change in drift(recorded, current)]
