"""Finding artifacts on disk (golden entries, stores, bare blobs) and describing an Exported."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import jaxport
from jaxport import _versions
from jaxport.errors import GoldenDataError
from jaxport.golden import _signatures
from jaxport.golden._entry_id import EntryId, split_parts
from jaxport.golden._manifest import MANIFEST_FILE, PLATFORMS, is_safe_name
from jaxport.golden._entry import Entry
from jaxport.golden._store import GoldenStore
from jaxport.serde import _read

BLOB_SUFFIXES = (".bin",)


@dataclasses.dataclass(frozen=True)
class Artifact:
  """A golden entry (``entry`` set), a bare serialized blob on disk (``path`` only), or a
  folder or file of a store that is out of place (``problem`` says why; nothing is read)."""

  path: Path
  entry: Entry | None = None
  problem: str | None = None

  @property
  def label(self) -> str:
    if self.entry is not None:
      return str(self.entry.entry_id)
    text = str(self.path)
    return text if text.isascii() and text.isprintable() else ascii(text)


def entry_at(path: Path) -> Entry:
  """The entry whose directory is ``path`` (its id from the last four path components)."""
  resolved = path.resolve()
  return Entry(path, EntryId.from_folder(resolved))


def looks_like_entry_id(text: str) -> bool:
  """Whether ``text`` has the form of an entry id (four safe names), not a file path."""
  parts = split_parts(text.strip("/"))
  return len(parts) == 4 and all(is_safe_name(p) for p in parts)


def is_store(path: Path) -> bool:
  return path.is_dir() and any((path / p).is_dir() for p in PLATFORMS)


def find_artifacts(path: str | os.PathLike) -> list[Artifact]:
  """Artifacts named by ``path``: an entry directory, a store, a blob or a directory of blobs."""
  path = Path(path)
  if not path.exists():
    raise GoldenDataError(f"{path}: no such file or directory.")
  if path.is_file():
    return [Artifact(path)]
  if (path / MANIFEST_FILE).is_file():
    return [Artifact(path, entry_at(path))]
  if is_store(path):
    # A folder that is out of place is one problem of its own; the entries are audited.
    entries, problems = GoldenStore(path).listing()
    return ([Artifact(e.path, e) for e in entries]
            + [Artifact(p.path, problem=p.message) for p in problems])
  # A folder inside a store (a platform, family or case): its entries are store entries
  # (expiry, drift, integrity); blobs elsewhere under the folder are bare blobs.
  visible = [p for p in sorted(path.rglob("*"))
             if not any(part.startswith(".") for part in p.relative_to(path).parts)]
  entry_dirs = [p.parent for p in visible if p.name == MANIFEST_FILE and p.is_file()]
  blobs = [p for p in visible if p.is_file() and p.suffix in BLOB_SUFFIXES
           and not any(d in p.parents for d in entry_dirs)]
  return [Artifact(d, entry_at(d)) for d in entry_dirs] + [Artifact(p) for p in blobs]


def _aval(aval: Any) -> str:
  try:
    dims = ",".join(str(d) for d in aval.shape)
    return f"{aval.dtype}[{dims}]"
  except AttributeError:
    return str(aval)


def _symbolic_constraints(exp: Any) -> list[str]:
  """The explicit constraints of the symbolic scope the avals share, as the blob stores them
  (empty for static shapes, or symbolic ones with no constraint given)."""
  for aval in (*exp.in_avals, *exp.out_avals):
    for d in getattr(aval, "shape", ()):
      scope = getattr(d, "scope", None)
      if scope is not None:
        return list(getattr(scope, "constraints", ()))
  return []


# The key of ``describe_exported`` that says what its ``serialization_version`` is.
HEADER_NOTE_KEY = "serialization_version_meaning"


def header_note(header: int, layout: int | None) -> str:
  """What the header's ``serialization_version`` says, next to the layout (the number a
  golden manifest's ``serialization_version`` gives)."""
  what = "the envelope header version jax reads"
  if header <= 0:
    return f"{what}; absent, so the layout is unknown"
  if layout is None:
    return (f"{what}; layouts 3 to 11 all write 3 so older readers keep reading them, and this "
            "blob's layout is not recorded beside it")
  if layout == header:
    return f"{what}; it is the layout itself (layout {layout})"
  return (f"{what}; layout {layout}, the golden manifest's serialization_version: layouts 3 to "
          "11 all write 3 so older readers keep reading them, layout 12 and later write their "
          "own number")


def describe_exported(exp: Any, blob: bytes, recorded_layout: int | None = None, *,
                      reader: Any = None, label: str = "",
                      signatures: Any = None) -> dict[str, Any]:
  """A JSON-ready description of a deserialized Exported (versions, avals, targets, ...).

  ``serialization_version`` is the header's number (3 for layouts 3 to 11, the layout from
  12); ``serialization_layout`` the layout, from the header or ``recorded_layout`` (a golden
  manifest's ``serialization_version``), None when neither says. ``reader`` reads the
  module's custom calls (``jaxport.cli._parser``; default: in this process), ``label`` names
  the artifact in its verdicts; ``signatures``: the module's custom calls where the caller
  read them already (they are not read again).
  """
  if signatures is not None:
    sigs = signatures
  elif reader is None:
    sigs = _signatures.signatures(exp.mlir_module_serialized)
  else:
    sigs = reader.signatures(bytes(exp.mlir_module_serialized), label)
  in_sh = getattr(exp, "_in_named_shardings", ()) or exp.in_shardings_hlo
  out_sh = getattr(exp, "_out_named_shardings", ()) or exp.out_shardings_hlo
  header = _read.read_serialization_version(blob)
  layout = _versions.layout_of_header(header, recorded_layout)
  return {
      "fun_name": exp.fun_name,
      "producer_jax_version": _read.read_jax_version(blob),
      "serialization_version": header,
      "serialization_layout": layout,
      HEADER_NOTE_KEY: header_note(header, layout),
      "calling_convention_version": exp.calling_convention_version,
      "platforms": list(exp.platforms),
      "nr_devices": exp.nr_devices,
      "in_tree": str(exp.in_tree),
      "in_avals": [_aval(a) for a in exp.in_avals],
      "out_tree": str(exp.out_tree),
      "out_avals": [_aval(a) for a in exp.out_avals],
      "symbolic_constraints": _symbolic_constraints(exp),
      "in_shardings": [None if s is None else str(s) for s in in_sh],
      "out_shardings": [None if s is None else str(s) for s in out_sh],
      "ordered_effects": [str(e) for e in exp.ordered_effects],
      "unordered_effects": [str(e) for e in exp.unordered_effects],
      "disabled_safety_checks": [str(c) for c in exp.disabled_safety_checks],
      "module_kept_var_idx": list(exp.module_kept_var_idx),
      "uses_global_constants": bool(exp.uses_global_constants),
      "has_vjp": bool(exp.has_vjp()),
      "custom_call_targets": sorted({s.target for s in sigs}),
      "custom_call_signatures": [_signatures.describe(s) for s in sigs],
  }


def deserialize(blob: bytes) -> Any:
  """The Exported in ``blob``, read with jaxport's reader."""
  return jaxport.deserialize(bytearray(blob))
