"""Golden arrays as npz archives: the dtypes a manifest may name, and arrays encoded to and
decoded from npz bytes without pickle, each member's size bounded before it is decompressed.

ml_dtypes array types (bfloat16, float8_*, int4...) are stored as unsigned integers of the
same width and restored by the dtype name the manifest records.
"""

from __future__ import annotations

import functools
import io
import warnings
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport import _limits
from jaxport.errors import GoldenDataError
from jaxport.golden._manifest import ArraySpec, Manifest

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
# Bytes a zip archive adds around one member: local and central headers with the name,
# zip64 extras, data descriptor; and once, the end records.
ZIP_MEMBER_OVERHEAD = 512


def _extended_dtype(name: str) -> np.dtype | None:
  """The ml_dtypes dtype called ``name`` (bfloat16, float8_*, int4...), or None.

  Only array types count: ml_dtypes also exports ``finfo``, ``iinfo`` and functions,
  which numpy would take as the object dtype (whose arrays are pickles) or refuse.
  """
  try:
    import ml_dtypes
  except ImportError:
    return None
  t = getattr(ml_dtypes, name, None)
  if not isinstance(t, type) or not issubclass(t, np.generic):
    return None
  try:
    dt = np.dtype(t)
  except TypeError:
    return None
  if dt.hasobject or dt.type is not t or dt.name != name:
    return None
  return dt


def dtype_from_name(name: str, where: str) -> np.dtype:
  """The numpy dtype a manifest names: a numeric or bool numpy dtype by its own name
  (``float32``, not ``f4``) or an ml_dtypes array type; anything else is refused."""
  dt = _named_dtype(name) if isinstance(name, str) else None
  if dt is None:
    raise GoldenDataError(f"{where}: unknown dtype name {name!r}; expected the name of a numeric "
                          "or bool numpy dtype ('float32', 'int8', 'complex64', 'bool') or of an "
                          "ml_dtypes array type such as 'bfloat16'. Golden data holds numeric "
                          "arrays only; the manifest was not written by jaxport.")
  return dt


@functools.lru_cache(maxsize=256)
def _named_dtype(name: str) -> np.dtype | None:
  """The dtype :func:`dtype_from_name` accepts for ``name``, or None; kept per name, as every
  array of every entry names one of a few (numpy's lookup warns and parses each time)."""
  if not name.isidentifier():
    return None
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      dt = np.dtype(name)
  except (TypeError, ValueError):
    dt = None
  if dt is not None and dt.kind in "biufc" and dt.name == name:
    return dt
  return _extended_dtype(name)


def check_array_dtypes(m: Manifest, where: str) -> None:
  """Refuse a manifest whose ``arrays`` name a dtype golden data never holds (``finfo``,
  ``object``...), naming the field, before any npz member is opened."""
  for kind, specs in m.arrays.items():
    for i, spec in enumerate(specs):
      dtype_from_name(spec.dtype, f"{where}: arrays.{kind}[{i}].dtype")


def _storage_array(a: Any, where: str) -> tuple[np.ndarray, ArraySpec]:
  """The array as stored in npz (ml_dtypes types as same-width unsigned ints) and its spec."""
  arr = np.asarray(a)
  dt = arr.dtype
  if dt.kind in "biufc":
    stored = arr.astype(dt.newbyteorder("<"), copy=False) if dt.byteorder == ">" else arr
  elif dt.kind == "V" and dt.names is None and _extended_dtype(dt.name) == dt:
    stored = arr.view(np.dtype(f"<u{dt.itemsize}"))
  else:
    raise GoldenDataError(
        f"{where}: cannot store an array of dtype {dt.name} ({dt.str}); golden data holds numeric arrays only "
        "(bool, int, uint, float, complex, and ml_dtypes types such as bfloat16).")
  return np.asarray(stored, order="C"), ArraySpec(dtype=dt.name, shape=tuple(arr.shape))


def encode_arrays(arrays: Sequence[Any], where: str) -> tuple[bytes, tuple[ArraySpec, ...]]:
  """Deterministic npz bytes holding ``arr_0``, ``arr_1``... and the spec of each array."""
  buf = io.BytesIO()
  specs = []
  with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
    for i, a in enumerate(arrays):
      stored, spec = _storage_array(a, f"{where}[{i}]")
      member = io.BytesIO()
      np.lib.format.write_array(member, stored, allow_pickle=False)
      zf.writestr(zipfile.ZipInfo(f"arr_{i}.npy", date_time=_ZIP_EPOCH), member.getvalue())
      specs.append(spec)
  return buf.getvalue(), tuple(specs)


def _open_npz(data: bytes, where: str) -> zipfile.ZipFile:
  """npz bytes opened as the zip file they are; a ``GoldenDataError`` naming ``where`` when
  they are not one."""
  try:
    return zipfile.ZipFile(io.BytesIO(data))
  except zipfile.BadZipFile as e:
    raise GoldenDataError(f"{where}: not a valid npz (zip) file: {e}.") from None


def decode_arrays(data: bytes, specs: Sequence[ArraySpec], where: str) -> list[np.ndarray]:
  """Read npz bytes written by :func:`encode_arrays`, never unpickling; check against specs."""
  with _open_npz(data, where) as zf:
    names = zf.namelist()
    want = [f"arr_{i}.npy" for i in range(len(specs))]
    if sorted(names) != sorted(want) or len(set(names)) != len(names):
      raise GoldenDataError(
          f"{where}: expected members {want} (from the manifest's arrays), got {names}.")
    out = []
    for i, spec in enumerate(specs):
      member = want[i]
      out.append(_read_member(zf, member, spec, f"{where}: member {member}"))
    return out


def _read_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
  """The shape, Fortran order and dtype an open ``.npy`` member declares (its header only,
  within ``MAX_NPY_HEADER_BYTES``); ``ValueError`` for a format not read or a pickled dtype."""
  fmt = np.lib.format
  version = fmt.read_magic(f)
  if version == (1, 0):
    shape, fortran, dt = fmt.read_array_header_1_0(f, max_header_size=_limits.MAX_NPY_HEADER_BYTES)
  elif version == (2, 0):
    shape, fortran, dt = fmt.read_array_header_2_0(f, max_header_size=_limits.MAX_NPY_HEADER_BYTES)
  else:
    raise ValueError(f".npy format version {version[0]}.{version[1]} is not read; "
                     "jaxport writes 1.0 (numpy writes 2.0 for huge headers)")
  if dt.hasobject:
    raise ValueError(f"its header declares dtype {dt}, whose data is a pickle")
  return tuple(shape), fortran, dt


def positional_specs(data: bytes, where: str) -> tuple[ArraySpec, ...]:
  """What each member of npz bytes as ``np.savez(f, *arrays)`` writes them (``arr_0``,
  ``arr_1``...) declares, read from the headers alone: the file's arrays are then read by
  :func:`decode_arrays` against these specs once the caller has checked them. Another member
  name, a pickled or unnamed dtype, or a malformed file is a ``GoldenDataError`` naming it."""
  with _open_npz(data, where) as zf:
    names = zf.namelist()
    want = [f"arr_{i}.npy" for i in range(len(names))]
    if sorted(names) != want:
      raise GoldenDataError(
          f"{where}: expected the members np.savez(f, *arrays) writes (arr_0.npy, arr_1.npy, "
          f"...), got {names}; save the flattened leaves in order as positional arrays.")
    specs = []
    for member in want:
      try:
        with zf.open(member) as f:
          shape, _, dt = _read_header(f)
      except ValueError as e:
        raise GoldenDataError(f"{where}: member {member} cannot be read without unpickling "
                              f"or is malformed ({e}).") from None
      except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise GoldenDataError(f"{where}: member {member} is corrupt: {e}.") from None
      if _named_dtype(dt.name) is None:
        raise GoldenDataError(f"{where}: member {member} holds dtype {dt}, which a golden "
                              "entry cannot store.")
      specs.append(ArraySpec(dtype=dt.name, shape=tuple(shape)))
    return tuple(specs)


def _read_member(zf: zipfile.ZipFile, member: str, spec: ArraySpec, where: str) -> np.ndarray:
  """One npz member as the array ``spec`` records. The ``.npy`` header is read first and its
  dtype and shape compared with ``spec`` (within ``MAX_ARRAY_BYTES``) before any memory is
  set aside for the data, so a header that declares a huge shape costs nothing."""
  dt = dtype_from_name(spec.dtype, where)
  stored_dt = dt if dt.kind in "biufc" else np.dtype(f"<u{dt.itemsize}")
  _member_bound(zf.getinfo(member), spec, where)
  nbytes = _spec_nbytes(spec, dt)
  try:
    with zf.open(member) as f:
      shape, fortran, got_dt = _read_header(f)
      if got_dt != stored_dt or tuple(shape) != tuple(spec.shape):
        raise GoldenDataError(
            f"{where} holds {got_dt} {tuple(shape)}, but the manifest records {spec.dtype} "
            f"{tuple(spec.shape)}; refused before reading its data.")
      buf = bytearray(nbytes)
      got = f.readinto(buf) if nbytes else 0
      trailing = f.read(1)  # reaching the end makes zipfile check the CRC
  except ValueError as e:
    if isinstance(e, GoldenDataError):
      raise
    raise GoldenDataError(
        f"{where} cannot be read without unpickling or is malformed ({e}). "
        "Golden data never executes code; the file was not written by jaxport.") from None
  except (zipfile.BadZipFile, EOFError, OSError) as e:
    raise GoldenDataError(f"{where} is corrupt: {e}.") from None
  if got != nbytes or trailing:
    raise GoldenDataError(
        f"{where} is corrupt: its header declares {spec.dtype} {tuple(spec.shape)} "
        f"({nbytes} bytes), but {'more' if trailing else got} bytes of data follow.")
  raw = np.frombuffer(buf, dtype=stored_dt).reshape(shape, order="F" if fortran else "C")
  return raw if dt is stored_dt else raw.view(dt)


def _spec_nbytes(spec: ArraySpec, dt: np.dtype) -> int:
  count = 1
  for d in spec.shape:
    count *= d
  return count * dt.itemsize


def _member_bound(info: zipfile.ZipInfo, spec: ArraySpec, where: str) -> int:
  """The most bytes the npz member may inflate to: its header plus the manifest's array.

  Checked against the member's declared size before anything is decompressed;
  reading stops at that size (a member that inflates further fails its CRC).
  """
  if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
    raise GoldenDataError(
        f"{where}: compression method {info.compress_type} is refused; npz files are stored "
        "or deflated (numpy.savez, numpy.savez_compressed).")
  nbytes = _spec_nbytes(spec, dtype_from_name(spec.dtype, where))
  if nbytes > _limits.MAX_ARRAY_BYTES:
    raise GoldenDataError(
        f"{where}: the manifest's {spec.dtype} {tuple(spec.shape)} needs {nbytes} bytes, more "
        f"than the limit {_limits.name('MAX_ARRAY_BYTES')}.")
  bound = nbytes + _limits.MAX_NPY_HEADER_BYTES
  if info.file_size > bound:
    raise GoldenDataError(
        f"{where}: declares {info.file_size} bytes once inflated, but the manifest's "
        f"{spec.dtype} {tuple(spec.shape)} needs at most {bound} (array plus the limit "
        f"{_limits.name('MAX_NPY_HEADER_BYTES')}); refused before decompressing.")
  return bound
