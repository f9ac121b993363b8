"""Which compile requests earlier runs found to be one computation, kept beside the cross-run
compile cache.

The executables memo (``jaxport.harness._worker._executables``) shares one executable among a
process's compile requests whose modules are one computation (equal up to source locations),
under a sharing key: jax's cache key of the module, which for the small modules of golden
entries costs about as much as compiling them. A warm run sends the same requests again. This
index keeps, for each request, the sharing key it was given, by a digest of everything that
decides that key: the request itself (the module's bytecode as it stands, locations included,
the serialized compile options, the devices and the backend) and what else goes into jax's key
or the memo's reading of it (the jax and jaxlib versions, ``XLA_FLAGS``, jax's settings that
change which modules get one key, the memo's own code). A later process takes the key from here
instead of computing it again.

The index is read whole when it is opened, before any request comes: a warm worker would
otherwise read one small file per compile request while its other thread waits on the GIL
for each of the file's system calls. Files beyond ``MAX_PRELOADED``, and files written later
by another process, are read when their request comes.

The index decides only which requests of one process share an executable; jax's persistent
cache is still looked up by the key jax computes itself. A kept file is JSON naming its request
digest and key, read as a regular file only (not a link, a pipe or a device) of at most
``MAX_BYTES``; one that cannot be read, is not of this format or names another request is
ignored (the key is computed and the file written again).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from jaxport.harness._worker._kept_json import keep_json, kept_names, read_kept

logger = logging.getLogger(__name__)

FOLDER_NAME = "jaxport-sharing-keys"
FORMAT = 1
# A key is jax's: the module's name and a hex digest; anything larger is not one of ours.
MAX_BYTES = 4096
# At most this many files are looked at when the index is opened (a key is a few hundred
# bytes).
MAX_PRELOADED = 50_000
_SUFFIX = ".json"
_DIGEST = re.compile(r"[0-9a-f]{64}")
_WHAT = "sharing key"


class SharingIndex:
  """The sharing keys kept in one cache folder, by request digest (64 hex digits)."""

  def __init__(self, cache_folder: Path) -> None:
    self.folder = Path(cache_folder) / FOLDER_NAME
    # The keys read or kept by this process, by request digest.
    self._known: dict[str, str] = {}

  def _path(self, request: str) -> Path:
    if not _DIGEST.fullmatch(request):
      raise ValueError(f"not a request digest: {request!r}")
    return self.folder / f"{request}{_SUFFIX}"

  def preload(self) -> int:
    """Read the keys earlier runs kept, looking at up to ``MAX_PRELOADED`` files, each
    checked as :meth:`key` checks it; how many keys were taken."""
    names, _ = kept_names(self.folder, MAX_PRELOADED)
    for name in names:
      request = name[:-len(_SUFFIX)]
      if name.endswith(_SUFFIX) and _DIGEST.fullmatch(request):
        self.key(request)
    return len(self._known)

  def key(self, request: str) -> str | None:
    """The sharing key kept for ``request``; None when none is kept or the file is not one of
    this format for that request."""
    path = self._path(request)
    known = self._known.get(request)
    if known is not None:
      return known
    data = read_kept(path, MAX_BYTES, _WHAT)
    if data is None:
      return None
    if (not isinstance(data, dict) or data.get("format") != FORMAT
        or data.get("request") != request or not isinstance(data.get("key"), str)
        or not data["key"]):
      logger.debug("sharing key file %s is not one of ours; computing the key", path)
      return None
    self._known[request] = data["key"]
    return data["key"]

  def keep(self, request: str, key: str) -> None:
    """Keep ``key`` for ``request``; written whole or not at all, and a folder that cannot be
    written only costs later runs the key's computation."""
    keep_json(self._path(request), {"format": FORMAT, "request": request, "key": key},
              MAX_BYTES, _WHAT)
    self._known[request] = key
