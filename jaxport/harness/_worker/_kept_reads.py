"""What a replay read from module bytes in earlier runs, kept beside the cross-run compile
cache: a module's custom-call signatures, and the digest of its text without locations with
the arguments its ``main`` donates.

Reading them parses the module's bytecode with the installed jaxlib's MLIR, which for a
store of a few hundred entries costs seconds a run, the same seconds each run: the reads
depend only on the bytes and on the code that reads them. A warm run (one on the compile
cache an earlier run filled) takes them from here. A kept read is found by a digest of the
module's bytes, what was read, the jax and jaxlib versions and the reading code itself
(``jaxport/golden/_signatures.py``, ``jaxport/export/_mlir.py`` and this module), so that
another jaxlib or an edit of the reader reads the module again.

A kept file is JSON naming its digest, read as a regular file only (``_kept_json``) of at
most ``MAX_BYTES``; one that cannot be read, is not of this format or names another digest is
ignored, and the module is parsed again. A run reads each kept file once: the reads it took or
made are remembered in the process (``MAX_REMEMBERED`` of them), since both readers of an
entry, and the entries of one case, hand over the same module bytes.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import logging
import threading
from pathlib import Path
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version, installed_jaxlib_version
from jaxport.export import _mlir
from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness._worker._kept_json import keep_json, read_kept

logger = logging.getLogger(__name__)

FOLDER_NAME = "jaxport-module-reads"
FORMAT = 1
# Signatures of a large module run to a few tens of kilobytes; anything larger is not kept.
MAX_BYTES = 1 << 20
# Reads a run remembers by digest, the least recently asked for forgotten first.
MAX_REMEMBERED = 1024
_SUFFIX = ".json"
_WHAT = "module read"
SIGNATURES = "signatures"
VIEW = "view"


@functools.cache
def _reader_stamp() -> bytes:
  """The versions and the code a kept read depends on besides the module's bytes."""
  code = hashlib.sha256()
  for path in (Path(_signatures.__file__), Path(_mlir.__file__), Path(__file__)):
    code.update(path.read_bytes())
  return "\0".join([installed_jax_version(), installed_jaxlib_version() or "",
                    code.hexdigest()]).encode()


def _digest(what: str, module: bytes) -> str:
  return hashlib.sha256(_reader_stamp() + b"\0" + what.encode() + b"\0" + module).hexdigest()


def _strings(value: Any) -> bool:
  return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _signature(d: Any) -> CustomCallSignature | None:
  """A signature from its ``to_dict`` form, or None where ``d`` is not one."""
  if (not isinstance(d, dict) or set(d) != {"target", "operand_types", "result_types",
                                            "attributes"}
      or not isinstance(d["target"], str) or not _strings(d["operand_types"])
      or not _strings(d["result_types"]) or not isinstance(d["attributes"], dict)
      or not all(isinstance(v, str) for v in d["attributes"].values())):
    return None
  return CustomCallSignature(target=d["target"], operand_types=tuple(d["operand_types"]),
                             result_types=tuple(d["result_types"]),
                             attributes=dict(d["attributes"]))


def _as_json(what: str, value: Any) -> Any:
  if what == SIGNATURES:
    return [s.to_dict() for s in value]
  digest, donations = value
  return {"text_sha256": digest, "donations": list(donations)}


def _from_json(what: str, data: Any) -> Any | None:
  """The read kept as ``data`` (``_as_json``'s form), or None where it is not of that form."""
  if what == SIGNATURES:
    if not isinstance(data, list):
      return None
    sigs = tuple(_signature(d) for d in data)
    return None if any(s is None for s in sigs) else sigs
  if (not isinstance(data, dict) or not isinstance(data.get("text_sha256"), str)
      or len(data["text_sha256"]) != 64 or not isinstance(data.get("donations"), list)
      or not all(isinstance(d, bool) for d in data["donations"])):
    return None
  return data["text_sha256"], tuple(data["donations"])


class KeptReads:
  """The module reads kept in one cache folder."""

  def __init__(self, cache_folder: Path) -> None:
    self.folder = Path(cache_folder) / FOLDER_NAME
    self._remembered: collections.OrderedDict[str, Any] = collections.OrderedDict()
    self._lock = threading.Lock()

  def _remember(self, digest: str, value: Any) -> None:
    with self._lock:
      self._remembered[digest] = value
      self._remembered.move_to_end(digest)
      while len(self._remembered) > MAX_REMEMBERED:
        self._remembered.popitem(last=False)

  def get(self, what: str, module: bytes) -> Any | None:
    """The read ``what`` (``SIGNATURES`` or ``VIEW``) kept for ``module``; None when none is
    kept or its file is not one of this format for it."""
    digest = _digest(what, module)
    with self._lock:
      if digest in self._remembered:
        self._remembered.move_to_end(digest)
        return self._remembered[digest]
    path = self.folder / f"{digest}{_SUFFIX}"
    data = read_kept(path, MAX_BYTES, _WHAT)
    if data is None:
      return None
    value = (_from_json(what, data.get("value")) if isinstance(data, dict)
             and data.get("format") == FORMAT and data.get("digest") == digest else None)
    if value is None:
      logger.debug("module read file %s is not one of ours; reading the module", path)
    else:
      self._remember(digest, value)
    return value

  def keep(self, what: str, module: bytes, value: Any) -> None:
    """Keep the read ``value`` of ``what`` for ``module``; a folder that cannot be written
    only costs later runs the parse."""
    digest = _digest(what, module)
    keep_json(self.folder / f"{digest}{_SUFFIX}",
              {"format": FORMAT, "digest": digest, "value": _as_json(what, value)},
              MAX_BYTES, _WHAT)
    self._remember(digest, value)


def read_signatures(module: bytes) -> tuple[CustomCallSignature, ...]:
  """The module's custom-call signatures, parsed now."""
  return tuple(_signatures.signatures(module))


def read_view(module: bytes) -> tuple[str, tuple[bool, ...]]:
  """The digest of the module's text without locations, and the arguments its ``main``
  donates, parsed now (one parse gives both)."""
  text, donations = _mlir.text_and_donations(module)
  return hashlib.sha256(text.encode()).hexdigest(), tuple(donations)


_READERS = {SIGNATURES: read_signatures, VIEW: read_view}
_kept: KeptReads | None = None


def keep_across_runs_in(cache_folder: Path | None) -> None:
  """Keep this process's module reads in ``cache_folder`` (the cross-run compile cache) and
  take them from there; None keeps nothing."""
  global _kept
  _kept = KeptReads(cache_folder) if cache_folder is not None else None


def read(what: str, module: bytes) -> Any:
  """The read ``what`` of ``module``: kept by an earlier run where one is, else parsed now
  (and kept, where reads are kept). A module that does not parse raises, nothing kept."""
  kept = _kept
  if kept is not None:
    value = kept.get(what, module)
    if value is not None:
      return value
  value = _READERS[what](module)
  if kept is not None:
    kept.keep(what, module, value)
  return value
