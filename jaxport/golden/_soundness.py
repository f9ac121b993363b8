"""What golden verification checks past the files' digests: that the manifest describes the
module it sits beside, and that the entry's comparison could fail at all.

The manifest's digest is unkeyed (whoever edits the store can sign it again), so an edited
manifest or a comparison loosened until it passes anything verifies by hash. Both rules are
golden verification: the replay's worker and ``jaxport audit`` apply them to the entry as
read, and the judge makes a ``golden_data_error`` of what they say. Each returns the problem
in words, or None; nothing here judges a status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.errors import JaxportError
from jaxport.golden._manifest import CustomCallSignature, Manifest
from jaxport.golden._signature_drift import drift, sort_key


@json_record(Strict.raising(JaxportError))
@dataclasses.dataclass(frozen=True)
class ManifestDisagreement:
  """The manifest's ``custom_call_targets`` are not the module's custom-call signatures."""
  message: str
  manifest_targets: tuple[str, ...]
  module_targets: tuple[str, ...]


def manifest_disagreement(recorded: Iterable[CustomCallSignature],
                          module: Iterable[CustomCallSignature]) -> ManifestDisagreement | None:
  """How the manifest's custom-call signatures (``recorded``) disagree with those of the
  module in the entry's blob (``module``, as a reader read them); None when they agree."""
  recorded = tuple(sorted(set(recorded), key=sort_key))
  module = tuple(module)
  if set(recorded) == set(module):
    return None
  changes = drift(recorded, module)
  rec_targets = tuple(sorted({s.target for s in recorded}))
  mod_targets = tuple(sorted({s.target for s in module}))
  details = "; ".join(str(c).replace("the current lowering", "the module")
                      for c in changes) or "the signatures differ"
  message = (f"manifest.json's custom_call_targets disagree with the module in exported.bin: "
             f"the manifest lists {list(rec_targets)}, the module calls {list(mod_targets)} "
             f"({details}); stability is judged from the module. The manifest was edited or "
             "written for another module: re-record the entry (jaxport record) and remove "
             "this one")
  return ManifestDisagreement(message, rec_targets, mod_targets)


def vacuous_comparison(manifest: Manifest,
                       expected: Sequence[np.ndarray] | None) -> str | None:
  """Why the entry's comparison would pass any outputs, or None: checker ``none`` on an entry
  that is run, a relative tolerance of 1 or more, or an absolute one as large as the recorded
  outputs (``expected``) themselves."""
  if manifest.lowering_only:
    return None
  c = manifest.comparison
  fix = "; record the case again with a checker and tolerances that can fail"
  if c.mode == "none":
    return ("the comparison is vacuous: checker 'none' on an entry that is run passes any "
            "outputs" + fix)
  if c.rtol >= 1:
    return (f"the comparison is vacuous: rtol {c.rtol:g} lets an output differ from the "
            "recorded one by all of its size" + fix)
  try:
    # The magnitude of a complex output is its modulus (a cast to float would drop the
    # imaginary part, with numpy's ComplexWarning).
    floats = [np.abs(np.asarray(x)).astype(np.float64) for x in expected or ()
              if np.asarray(x).dtype.kind in "fc" and np.asarray(x).size]
  except (JaxportError, ValueError, TypeError):
    return None  # unreadable outputs are the entry's digest check's to report
  magnitude = max((float(x.max()) for x in floats), default=0.0)
  if c.atol > 0 and c.atol >= max(magnitude, 1.0 if magnitude == 0 else 0.0):
    return (f"the comparison is vacuous: atol {c.atol:g} is as large as the recorded outputs "
            f"themselves (largest {magnitude:g}), so outputs of that size all pass" + fix)
  return None
