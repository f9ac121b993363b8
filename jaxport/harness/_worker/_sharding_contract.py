"""The sharding part of the calling contract, in the terms a caller writes it: meshes and
PartitionSpecs.

A caller of a multi-device artifact places each input as the artifact's record says: a mesh of
named axes (sizes and types) and a ``PartitionSpec`` per input, in a memory kind. A renamed
axis or another spec breaks that caller ("does not match the mesh used for export") though
the HLO shardings may read the same, so both sides of a comparison are read from the named
shardings every record keeps (``_jaxcompat._envelope``), on every jax release. Blobs that keep
HLO shardings only are compared as HLO text by :mod:`_calling`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat import _mesh as jax_mesh


@dataclasses.dataclass(frozen=True)
class MeshTerms:
  """A mesh as a caller builds one: its axes' names, sizes and types (type names)."""
  axis_names: tuple[str, ...]
  axis_sizes: tuple[int, ...]
  axis_types: tuple[str, ...]

  def __str__(self) -> str:
    return "(" + ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes)) + ")"


@dataclasses.dataclass(frozen=True)
class ShardingTerms:
  """One input's or output's named sharding: its mesh, the entries of its ``PartitionSpec``
  (None, an axis name or a tuple of them per dimension, as written), its unreduced and reduced
  axes, and its memory kind."""
  mesh: MeshTerms
  spec: tuple[Any, ...]
  unreduced: tuple[str, ...]
  reduced: tuple[str, ...]
  memory_kind: str | None

  def spec_text(self) -> str:
    """``PartitionSpec('data', None)``, with ``unreduced={...}`` and ``reduced={...}``."""
    parts = [repr(p) if p is None or isinstance(p, (str, tuple)) else str(p) for p in self.spec]
    parts += [f"{name}={{{', '.join(repr(a) for a in axes)}}}"
              for name, axes in (("unreduced", self.unreduced), ("reduced", self.reduced)) if axes]
    return f"PartitionSpec({', '.join(parts)})"

  def renamed(self, names: dict[str, str]) -> tuple[Any, ...]:
    """The spec entries (trailing Nones dropped: the same spec) and the unreduced and reduced
    axes, with axis names mapped by ``names``: what two specs are compared on."""
    def one(p: Any) -> Any:
      if isinstance(p, str):
        return names.get(p, p)
      if isinstance(p, tuple):
        return tuple(names.get(a, a) for a in p)
      return p
    spec = [one(p) for p in self.spec]
    while spec and spec[-1] is None:
      spec.pop()
    return (tuple(spec), tuple(sorted(one(a) for a in self.unreduced)),
            tuple(sorted(one(a) for a in self.reduced)))


def _entry(p: Any) -> Any:
  """One spec entry as a caller reads it: a one-axis tuple is that axis."""
  if isinstance(p, (tuple, list)):
    return p[0] if len(p) == 1 else tuple(p)
  return p


def terms_of(sharding: Any) -> ShardingTerms | None:
  """The terms of a record's named sharding (None stays None: unspecified)."""
  if sharding is None:
    return None
  mesh = sharding.mesh
  spec = [_entry(p) for p in jax_mesh.partition_spec_entries(sharding.spec)]
  unreduced, reduced = jax_mesh.partition_spec_reduced(sharding.spec)
  return ShardingTerms(
      MeshTerms(tuple(str(n) for n in mesh.axis_names), tuple(int(s) for s in mesh.axis_sizes),
                tuple(getattr(t, "name", str(t)) for t in mesh.axis_types)),
      tuple(spec), tuple(sorted(unreduced)), tuple(sorted(reduced)), sharding.memory_kind)


def named_terms(exported: Any) -> tuple[tuple[ShardingTerms | None, ...],
                                        tuple[ShardingTerms | None, ...]] | None:
  """The terms of each input's and each output's named sharding of an ``Exported``, or None
  where its record keeps HLO shardings only."""
  if not jax_envelope.has_named_shardings(exported):
    return None
  return (tuple(terms_of(s) for s in jax_envelope.in_named_shardings(exported)),
          tuple(terms_of(s) for s in jax_envelope.out_named_shardings(exported)))


def _mesh_lines(old: MeshTerms, new: MeshTerms) -> tuple[list[str], dict[str, str]]:
  """How mesh ``old`` became ``new``, one line per axis changed (or one for the whole mesh
  when the axes are more or fewer), and the renamed axes (old name to new)."""
  if len(old.axis_names) != len(new.axis_names):
    return [f"mesh {old} became {new}"], {}
  lines, names = [], {}
  for was, now, size_was, size_now, type_was, type_now in zip(
      old.axis_names, new.axis_names, old.axis_sizes, new.axis_sizes, old.axis_types,
      new.axis_types):
    if was != now:
      lines.append(f"mesh axis {was!r} became {now!r}")
      names[was] = now
    if size_was != size_now:
      lines.append(f"mesh axis {now!r}: size {size_was} became {size_now}")
    if type_was != type_now:
      lines.append(f"mesh axis {now!r}: type {type_was} became {type_now}")
  return lines, names


def _one_device_whole(t: ShardingTerms | None) -> bool:
  """Whether a named sharding places the whole array on one device as an unspecified one
  does: a mesh of one device, in the device's default memory (jax 0.12 records the outputs of
  a function lowered under a one-device abstract mesh so, where older releases record none)."""
  return (t is not None and all(n == 1 for n in t.mesh.axis_sizes)
          and t.memory_kind in (None, "device"))


def _on(t: ShardingTerms) -> str:
  return f"{t.spec_text()} on mesh {t.mesh}"


def sharding_lines(paths: Sequence[tuple[str, str]], old: Sequence[ShardingTerms | None],
                   new: Sequence[ShardingTerms | None]) -> list[str]:
  """How today's named shardings (``new``) differ from the recorded ones (``old``), leaf by
  leaf (``paths``: ``(prefix, path)``, the prefix ``"input "`` or empty for outputs): a mesh's
  changes once, naming the leaves on it; then each leaf's spec (read through the mesh's
  renamed axes, so that a rename alone is one line) and memory kind."""
  meshes: dict[tuple[MeshTerms, MeshTerms], list[str]] = {}
  for (_, path), a, b in zip(paths, old, new):
    if a is not None and b is not None and a.mesh != b.mesh:
      meshes.setdefault((a.mesh, b.mesh), []).append(path)
  lines, renames = [], {}
  for (was, now), on in meshes.items():
    changed, names = _mesh_lines(was, now)
    renames[(was, now)] = names
    lines += [f"{line} (the mesh of {', '.join(on)})" for line in changed]
  for (prefix, path), a, b in zip(paths, old, new):
    if a is None and b is None:
      continue
    if a is None or b is None:
      if _one_device_whole(a) or _one_device_whole(b):
        continue
      lines.append(f"{prefix}{path}: {'unspecified' if a is None else _on(a)} became "
                   f"{'unspecified' if b is None else _on(b)}")
      continue
    names = renames.get((a.mesh, b.mesh), {})
    if a.renamed(names) != b.renamed({}):
      lines.append(f"{prefix}{path}: {a.spec_text()} became {b.spec_text()}")
    if a.memory_kind != b.memory_kind:
      lines.append(f"{prefix}{path}: memory kind {a.memory_kind} became {b.memory_kind}")
  return lines
