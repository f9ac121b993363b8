"""Building hostile inputs in a temporary directory: copies of real golden entries, entries
whose files are replaced (with a manifest that vouches for them), npz bombs, looping entries."""

from __future__ import annotations

import dataclasses
import datetime
import shutil
import struct
import zlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxport
from jaxport.golden import EntryId, _signatures
from jaxport.golden._manifest import MANIFEST_FILE, Comparison, Manifest, Producer
from jaxport.golden._entry import Entry, sha256_hex
from jaxport.golden._store import GoldenStore
from jaxport.serde import _layout, _read

from _sandbox import ROOT

GOLDEN = ROOT / "compat_data"
# Small real entries of different kinds: a LAPACK call, a pytree, symbolic shapes.
REAL_ENTRIES = tuple(
    f"cpu/{case}/{sorted((GOLDEN / 'cpu' / case).iterdir())[-1].name}"
    for case in ("lapack_potrf/cholesky_f32", "feature_pytrees/kwargs_pytree",
                 "feature_shape_poly/shape_poly_sum"))


def copy_entry(root: Path, entry_id: str = REAL_ENTRIES[0]) -> Entry:
  """A copy of the real entry ``entry_id`` in the store at ``root``."""
  shutil.copytree(GOLDEN / entry_id, root / entry_id)
  return GoldenStore(root).entry(EntryId.parse(entry_id))


def replace_files(entry: Entry, files: dict[str, bytes], **manifest_changes) -> Entry:
  """Rewrites ``entry``'s files and its manifest so that the manifest vouches for them: the
  sha256 and digest are right, so only the content itself is hostile."""
  m = entry.manifest
  for name, data in files.items():
    (entry.path / name).write_bytes(data)
  digests = {**m.files, **{name: sha256_hex(data) for name, data in files.items()}}
  m = dataclasses.replace(m, files=digests, **manifest_changes)
  (entry.path / MANIFEST_FILE).write_text(m.to_json())
  return entry


def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
  header = repr({"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
  header = header.encode("latin1")
  pad = 64 - (10 + len(header) + 1) % 64
  header += b" " * pad + b"\n"
  return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def npz_bomb(inflated_bytes: int, *, declared_size: int | None = None) -> bytes:
  """An npz whose one member ``arr_0.npy`` (a float32 vector of zeros) inflates to about
  ``inflated_bytes``, compressed to about a thousandth of that. ``declared_size`` writes
  another uncompressed size into the zip headers (a lie)."""
  chunk = bytes(1 << 24)
  count = max(1, inflated_bytes // len(chunk))
  header = _npy_header("float32", (count * len(chunk) // 4,))
  c = zlib.compressobj(9, zlib.DEFLATED, -15)
  first = c.compress(header + chunk) + c.flush(zlib.Z_SYNC_FLUSH)
  # The window now holds zeros only, so the next segment can be repeated as is.
  segment = c.compress(chunk) + c.flush(zlib.Z_SYNC_FLUSH)
  data = first + segment * (count - 1) + c.flush(zlib.Z_FINISH)
  crc = zlib.crc32(header)
  for _ in range(count):
    crc = zlib.crc32(chunk, crc)
  size = len(header) + count * len(chunk)
  return _zip_one(b"arr_0.npy", data, crc, declared_size if declared_size is not None else size)


def _zip_one(name: bytes, data: bytes, crc: int, size: int) -> bytes:
  """A zip archive of one deflated member, written by hand so that the sizes can lie."""
  small = size < 0xFFFFFFFF
  extra = b"" if small else struct.pack("<HHQQ", 1, 16, size, len(data))
  size32, csize32 = (size, len(data)) if small else (0xFFFFFFFF, 0xFFFFFFFF)
  local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0, 0x21, crc, csize32, size32,
                      len(name), len(extra)) + name + extra
  central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0x21, crc, csize32,
                        size32, len(name), len(extra), 0, 0, 0, 0, 0) + name + extra
  end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
  return local + data + central + end


def write_entry(store: GoldenStore, fun, args: list[np.ndarray], *, case_id: str,
                family: str = "hostile", record_date: datetime.date | None = None,
                expected: list[np.ndarray] | None = None) -> Entry:
  """An entry of ``fun`` exported by jaxport for ``args``, with ``expected`` outputs (by
  default computed now)."""
  specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
  exp = jaxport.export(jax.jit(fun), platforms=("cpu",))(*specs)
  blob = bytes(exp.serialize())
  if expected is None:
    expected = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(fun)(*args))]
  manifest = Manifest(
      case_id=case_id, family=family, platform="cpu",
      record_date=record_date or datetime.date.today(), producer=Producer.current(),
      calling_convention_version=exp.calling_convention_version,
      serialization_version=_read.read_serialization_version(blob),
      custom_call_targets=_signatures.signatures(exp.mlir_module_serialized),
      polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison("allclose", 1e-5, 1e-6))
  return store.write_entry(manifest, blob, args, expected, exp.mlir_module())


def loops_forever(x):
  """A function whose compiled module never returns: its loop condition never changes."""
  def body(c):
    return c[0] + 1.0, c[1]
  return jax.lax.while_loop(lambda c: c[1] >= 0, body, (x, jnp.int32(0)))[0]


def without_fields(blob: bytes, *fields: str) -> bytes:
  """``blob`` with the root Exported's ``fields`` absent, as a writer that omits them writes it:
  their vtable slots are zeroed (flatbuffers reads a zero slot as an absent field)."""
  ids = _layout.field_ids("Exported")
  out = bytearray(blob)
  table = struct.unpack_from("<I", out, 0)[0]
  vtable = table - struct.unpack_from("<i", out, table)[0]
  vtable_size = struct.unpack_from("<H", out, vtable)[0]
  for field in fields:
    slot = vtable + 4 + 2 * getattr(ids, field)
    if slot + 2 <= vtable + vtable_size:
      struct.pack_into("<H", out, slot, 0)
  return bytes(out)
