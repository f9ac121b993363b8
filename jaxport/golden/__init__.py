"""The golden store: append-only entries of serialized modules with their inputs and outputs.

An entry is a directory ``<platform>/<family>/<case_id>/<date>[.<revision>]_jax-<version>``
holding the blob, npz inputs and expected outputs (never pickled), the module
text and a manifest whose digest and per-file sha256 are verified before use.
Names are imported on first use (reading a store needs no jax).
See ``docs/golden-format.md``.
"""

import typing as _typing

from jaxport import _lazy

_EXPORTS = {
    **dict.fromkeys(["ArraySpec", "Comparison", "CustomCallSignature", "ImportSource", "Manifest",
                     "Producer"], "jaxport.golden._manifest"),
    "EntryId": "jaxport.golden._entry_id",
    "signatures": "jaxport.golden._signatures",
    **dict.fromkeys(["Entry", "Snapshot"], "jaxport.golden._entry"),
    "GoldenStore": "jaxport.golden._store",
}

if _typing.TYPE_CHECKING:  # the same names, for type checkers and editors
  from jaxport.golden._entry import Entry as Entry, Snapshot as Snapshot
  from jaxport.golden._entry_id import EntryId as EntryId
  from jaxport.golden._manifest import (
      ArraySpec as ArraySpec,
      Comparison as Comparison,
      CustomCallSignature as CustomCallSignature,
      ImportSource as ImportSource,
      Manifest as Manifest,
      Producer as Producer,
  )
  from jaxport.golden._signatures import signatures as signatures
  from jaxport.golden._store import GoldenStore as GoldenStore

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy.attach(globals(), _EXPORTS)
