"""The golden store: append-only entries of serialized modules with their inputs and outputs.

An entry is a directory ``<platform>/<family>/<case_id>/<date>[.<revision>]_jax-<version>``
holding the blob, npz inputs and expected outputs (never pickled), the module
text and a manifest whose digest and per-file sha256 are verified before use.
See ``docs/golden-format.md``.
"""

from jaxport.golden._manifest import ArraySpec as ArraySpec
from jaxport.golden._manifest import Comparison as Comparison
from jaxport.golden._manifest import CustomCallSignature as CustomCallSignature
from jaxport.golden._manifest import ImportSource as ImportSource
from jaxport.golden._manifest import Manifest as Manifest
from jaxport.golden._manifest import Producer as Producer
from jaxport.golden._signatures import signatures as signatures
from jaxport.golden._store import Entry as Entry
from jaxport.golden._store import Snapshot as Snapshot
from jaxport.golden._store import GoldenStore as GoldenStore

__all__ = ["ArraySpec", "Comparison", "CustomCallSignature", "Entry", "GoldenStore", "Snapshot",
           "ImportSource", "Manifest", "Producer", "signatures"]
