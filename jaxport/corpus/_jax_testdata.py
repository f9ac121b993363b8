"""Reading jax's back-compat test data files without executing them.

jax keeps its golden data as Python modules of dict literals
(``data_2024_05_31["f32"] = dict(testdata_version=1, platform="cpu", ...)``) with
numpy arrays written as ``array([...], dtype=float32)``. This reader parses the
file with :mod:`ast` and evaluates only literals, by hand: numbers, strings,
bytes, tuples, lists, dicts, ``dict(...)``, ``array(...)`` with a known numeric
dtype, and ``datetime.date(y, m, d)``. Anything else is refused with its line
number, so a file can never run code while being read.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from jaxport import _limits
from jaxport.errors import GoldenDataError

# Fields of one jax back-compat dataset (jax's ``CompatTestData``).
REQUIRED_FIELDS = ("testdata_version", "platform", "custom_call_targets", "serialized_date",
                   "inputs", "expected_outputs", "mlir_module_text", "mlir_module_serialized",
                   "xla_call_module_version")
OPTIONAL_FIELDS = ("nr_devices",)

_NUMERIC_DTYPES = frozenset(
    ["bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "complex64", "complex128"])
_ARRAY_FUNCS = frozenset(["array", "asarray"])
_FLOAT_NAMES = {"nan": float("nan"), "inf": float("inf")}
_DATE_VAR_RE = re.compile(r"data_(\d{4})_(\d{2})_(\d{2})(?:_(\w+))?")


@dataclasses.dataclass(frozen=True)
class Dataset:
  """One dataset of a jax test-data file: where it was found and its fields."""

  source: str          # file name
  variable: str        # e.g. data_2024_05_31
  keys: tuple[str, ...]  # subscripts below the variable, e.g. ("f32",)
  fields: dict[str, Any]

  @property
  def label(self) -> str:
    return self.variable + "".join(f"[{k!r}]" for k in self.keys)


class _Reader:
  """Evaluates the literal subset of Python found in jax's test data files."""

  def __init__(self, source: str):
    self.source = source
    # Names bound at module level to numpy attributes: ``array = np.array`` etc.
    self.numpy_aliases: dict[str, str] = {}
    self.numpy_modules = {"np", "numpy"}
    self.datetime_modules = {"datetime"}
    self.depth = 0

  def error(self, node: ast.AST, what: str) -> GoldenDataError:
    return GoldenDataError(
        f"{self.source}:{getattr(node, 'lineno', '?')}: {what}. Only literals, dict(...), "
        "array(..., dtype=...) and datetime.date(...) are read; nothing is executed.")

  def value(self, node: ast.AST) -> Any:
    """The literal ``node`` stands for; nesting is bounded, the evaluation being recursive."""
    self.depth += 1
    try:
      if self.depth > _limits.MAX_LITERAL_NESTING:
        raise self.error(node, f"literals nest deeper than the limit "
                               f"{_limits.name('MAX_LITERAL_NESTING')}")
      return self._value(node)
    finally:
      self.depth -= 1

  def _value(self, node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
      if node.value is Ellipsis:
        raise self.error(node, "an elided array ('...') has lost its data")
      return node.value
    if isinstance(node, ast.Tuple):
      return tuple(self.value(e) for e in node.elts)
    if isinstance(node, ast.List):
      return [self.value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
      if any(k is None for k in node.keys):
        raise self.error(node, "'**' in a dict literal is not supported")
      return self._dict([(k, self.value(k)) for k in node.keys],
                        [self.value(v) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
      v = self._number(node.operand)
      return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
      # Complex literals: ``1.5+2j`` parses as a sum of two number constants.
      a, b = self._number(node.left), self._number(node.right)
      if not (isinstance(a, complex) or isinstance(b, complex)):
        raise self.error(node, "arithmetic other than complex literals")
      return a + b if isinstance(node.op, ast.Add) else a - b
    if isinstance(node, ast.Name) and node.id in _FLOAT_NAMES:
      return _FLOAT_NAMES[node.id]
    if isinstance(node, ast.Call):
      return self._call(node)
    raise self.error(node, f"unsupported expression {type(node).__name__}")

  def _dict(self, keys: list[tuple[ast.AST, Any]], values: list[Any]) -> dict:
    out = {}
    for (node, k), v in zip(keys, values):
      try:
        out[k] = v
      except TypeError:
        raise self.error(node, f"a dict key of type {type(k).__name__} (keys are strings, "
                               "numbers or tuples of them)") from None
    return out

  def _number(self, node: ast.AST) -> int | float | complex:
    v = self.value(node)
    if isinstance(v, bool) or not isinstance(v, (int, float, complex)):
      raise self.error(node, f"expected a number, got {type(v).__name__}")
    return v

  def _dotted(self, node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
      return node.id
    if isinstance(node, ast.Attribute):
      base = self._dotted(node.value)
      return None if base is None else f"{base}.{node.attr}"
    return None

  def _numpy_name(self, node: ast.AST) -> str | None:
    """The numpy attribute a name stands for (``float32``, ``np.float32``, alias), or None."""
    dotted = self._dotted(node)
    if dotted is None:
      return None
    if dotted in self.numpy_aliases:
      return self.numpy_aliases[dotted]
    head, _, attr = dotted.rpartition(".")
    if head in self.numpy_modules:
      return attr
    return None

  def dtype(self, node: ast.AST) -> np.dtype:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
      name = node.value
    else:
      name = self._numpy_name(node) or (node.id if isinstance(node, ast.Name) else None)
    if name not in _NUMERIC_DTYPES:
      raise self.error(node, f"dtype {ast.unparse(node)!r} is not a numeric numpy dtype")
    return np.dtype(name)

  def _call(self, node: ast.Call) -> Any:
    func = self._dotted(node.func)
    np_name = self._numpy_name(node.func)
    if func == "dict":
      if node.args or any(k.arg is None for k in node.keywords):
        raise self.error(node, "dict(...) with positional or '**' arguments")
      return {k.arg: self.value(k.value) for k in node.keywords}
    if func in ("bytearray", "bytes") and len(node.args) == 1 and not node.keywords:
      v = self.value(node.args[0])
      if not isinstance(v, bytes):
        raise self.error(node, f"{func}(...) of a non-bytes literal")
      return v
    if np_name in _ARRAY_FUNCS:
      kwargs = {k.arg: k for k in node.keywords}
      if len(node.args) != 1 or set(kwargs) - {"dtype"}:
        raise self.error(node, "array(...) takes one literal and an optional dtype here")
      data = self.value(node.args[0])
      dtype = self.dtype(kwargs["dtype"].value) if "dtype" in kwargs else None
      try:
        arr = np.array(data, dtype=dtype)
      except (OverflowError, ValueError, TypeError) as e:
        raise self.error(node, f"array(...) of these literals fails ({type(e).__name__}: "
                               f"{e}): a value out of range for the dtype, or ragged rows") from None
      if arr.dtype.kind not in "biufc":
        raise self.error(node, f"array(...) evaluates to dtype {arr.dtype}, not a numeric array")
      return arr
    if np_name in _NUMERIC_DTYPES and len(node.args) == 1 and not node.keywords:
      number = self._number(node.args[0])
      try:
        return np.dtype(np_name).type(number)
      except (OverflowError, ValueError, TypeError) as e:
        raise self.error(node, f"{np_name}({number!r}) fails ({type(e).__name__}: {e})") from None
    if func is not None:
      head, _, attr = func.rpartition(".")
      if attr == "date" and head in self.datetime_modules and not node.keywords:
        parts = [self.value(a) for a in node.args]
        if len(parts) != 3 or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
          raise self.error(node, "datetime.date(...) takes three integers")
        try:
          return datetime.date(*parts)
        except (ValueError, OverflowError) as e:
          raise self.error(node, f"invalid date: {e}") from None
    raise self.error(node, f"call of {ast.unparse(node.func)!r} is not allowed")


def _target_path(node: ast.AST) -> tuple[str, tuple[Any, ...]] | None:
  """``data_x["a"]["b"]`` -> ("data_x", ("a", "b")); a plain name -> (name, ())."""
  keys = []
  while isinstance(node, ast.Subscript):
    if not isinstance(node.slice, ast.Constant) or not isinstance(node.slice.value, (str, int)):
      return None
    keys.append(node.slice.value)
    node = node.value
  if not isinstance(node, ast.Name):
    return None
  return node.id, tuple(reversed(keys))


def _datasets_in(value: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], dict]]:
  """Every dataset dict nested in ``value`` (a dataset has a 'serialized_date' key)."""
  if isinstance(value, dict):
    if "serialized_date" in value or "mlir_module_serialized" in value:
      return [(path, value)]
    out = []
    for k, v in value.items():
      out.extend(_datasets_in(v, path + (k,)))
    return out
  return []


def not_regular_reason(path: Path) -> str | None:
  """Why ``path`` is not read (a FIFO, a device, a folder: opening one may block), or None."""
  try:
    mode = os.stat(path).st_mode
  except OSError as e:
    return f"cannot be examined ({e})"
  if stat.S_ISREG(mode):
    return None
  return f"not a regular file (a {_file_kind(mode)}), so it is not opened"


def _file_kind(mode: int) -> str:
  kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISDIR, "directory"), (stat.S_ISCHR, "character device"),
           (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))
  return next((kind for test, kind in kinds if test(mode)), "special file")


def _read_regular_text(path: Path) -> str:
  """The UTF-8 text of the regular file ``path``; opened without blocking and checked
  after opening, so a FIFO swapped in after a check cannot hang the reader."""
  try:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
  except OSError as e:
    raise GoldenDataError(f"{path}: cannot be opened ({e}).") from None
  with os.fdopen(fd, "rb") as fh:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
      raise GoldenDataError(f"{path}: not a regular file (a {_file_kind(mode)}); jax's test "
                            "data are regular .py files.")
    try:
      return fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
      raise GoldenDataError(f"{path}: cannot be read as UTF-8 text ({e}).") from None


def read_file(path: str | Path) -> tuple[list[Dataset], list[str]]:
  """The datasets in one jax test-data file, and notes on what was left out and why."""
  path = Path(path)
  name = path.name
  text = _read_regular_text(path)
  try:
    tree = ast.parse(text, filename=name)
  except SyntaxError as e:
    raise GoldenDataError(f"{name}:{e.lineno}: not valid Python syntax: {e.msg}.") from None
  except (RecursionError, MemoryError):
    raise GoldenDataError(f"{name}: nested too deeply for Python's parser; jax's test data "
                          "files hold flat literals.") from None
  reader = _Reader(name)
  env: dict[str, Any] = {}
  notes: list[str] = []
  for stmt in tree.body:
    if isinstance(stmt, ast.Import):
      for alias in stmt.names:
        if alias.name == "numpy":
          reader.numpy_modules.add(alias.asname or "numpy")
        elif alias.name == "datetime":
          reader.datetime_modules.add(alias.asname or "datetime")
      continue
    if isinstance(stmt, (ast.ImportFrom, ast.Pass)) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
      continue
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
      target = _target_path(stmt.targets[0])
      np_name = reader._numpy_name(stmt.value)
      if target is not None and not target[1] and np_name is not None:
        reader.numpy_aliases[target[0]] = np_name
        continue
      if target is not None:
        var, keys = target
        value = reader.value(stmt.value)
        if not keys:
          env[var] = value
          continue
        container = env.get(var)
        for k in keys[:-1]:
          container = container.get(k) if isinstance(container, dict) else None
        if not isinstance(container, dict):
          raise reader.error(stmt, f"assignment into {ast.unparse(stmt.targets[0])} before "
                                   "its dict was defined")
        container[keys[-1]] = value
        continue
    raise reader.error(stmt, f"unsupported statement {type(stmt).__name__}")

  datasets = []
  for var in env:
    found = _datasets_in(env[var], ())
    if not found:
      notes.append(f"{name}: {var} holds no back-compat dataset (no serialized_date); skipped")
    for keys, fields in found:
      datasets.append(Dataset(name, var, tuple(str(k) for k in keys), fields))
  return datasets, notes


def check_fields(ds: Dataset) -> None:
  """Raise if a dataset lacks a field jax's format requires or has one of the wrong type."""
  missing = [f for f in REQUIRED_FIELDS if f not in ds.fields]
  if missing:
    raise GoldenDataError(f"{ds.source}: {ds.label}: missing field(s) {missing}.")
  f = ds.fields
  checks = [
      ("platform", isinstance(f["platform"], str), "a string"),
      ("serialized_date", isinstance(f["serialized_date"], datetime.date), "datetime.date(...)"),
      ("inputs", isinstance(f["inputs"], (tuple, list)), "a tuple of arrays"),
      ("expected_outputs", f["expected_outputs"] is None or isinstance(f["expected_outputs"], (tuple, list)),
       "a tuple of arrays or None"),
      ("mlir_module_serialized", isinstance(f["mlir_module_serialized"], bytes), "bytes"),
      ("mlir_module_text", isinstance(f["mlir_module_text"], str), "a string"),
      ("custom_call_targets", isinstance(f["custom_call_targets"], (list, tuple))
       and all(isinstance(t, str) for t in f["custom_call_targets"]), "a list of strings"),
      ("xla_call_module_version", isinstance(f["xla_call_module_version"], int), "an integer"),
  ]
  if "nr_devices" in f:
    checks.append(("nr_devices", isinstance(f["nr_devices"], int)
                   and not isinstance(f["nr_devices"], bool) and f["nr_devices"] >= 1,
                   "a positive integer"))
  for field, ok, expected in checks:
    if not ok:
      raise GoldenDataError(f"{ds.source}: {ds.label}: field {field}: expected {expected}, "
                            f"got {type(f[field]).__name__}.")
  bounds = [("testdata_version", "MAX_FORMAT_VERSION"),
            ("xla_call_module_version", "MAX_FORMAT_VERSION"), ("nr_devices", "MAX_NR_DEVICES")]
  for field, limit in bounds:
    value = f.get(field)
    if isinstance(value, int) and not 0 <= value <= getattr(_limits, limit):
      raise GoldenDataError(
          f"{ds.source}: {ds.label}: field {field}: {_digits(value)} is out of range: at most "
          f"{_limits.name(limit)}. jax's own files state small numbers here; the file is "
          "corrupted or not jax test data.")
  for field in ("inputs", "expected_outputs"):
    for i, a in enumerate(f[field] or ()):
      if not _is_numeric_array(a):
        raise GoldenDataError(f"{ds.source}: {ds.label}: field {field}[{i}]: expected a "
                              f"numeric array, got {type(a).__name__}.")


def _digits(value: int) -> str:
  """``value`` for a message: in full when short, else its sign and number of digits."""
  if -10**20 < value < 10**20:
    return str(value)
  return f"{'-' if value < 0 else ''}a {len(f'{abs(value):x}') * 4}-bit number"


def _is_numeric_array(a: Any) -> bool:
  if isinstance(a, (np.ndarray, np.generic)):
    return a.dtype.kind in "biufc"
  return isinstance(a, (int, float, complex)) and not isinstance(a, bool)


def case_names(ds: Dataset) -> tuple[str, str]:
  """(family, case_id) for a dataset: the file's stem without the platform, and its keys.

  ``cpu_qr_lapack_geqrf.py`` ``data_2025_04_02["f32"]`` -> (``qr_lapack_geqrf``,
  ``jax_f32``). A suffix after the date in the variable name (``data_2025_04_07_tpu``)
  joins the case id, so datasets of one file recorded on different dates stay one case.
  """
  stem = Path(ds.source).stem
  platform = ds.fields.get("platform")
  family = stem[len(platform) + 1:] if isinstance(platform, str) and stem.startswith(platform + "_") else stem
  parts = ["jax"]
  m = _DATE_VAR_RE.fullmatch(ds.variable)
  if m is None:
    parts.append(ds.variable)
  elif m.group(4):
    parts.append(m.group(4))
  parts.extend(ds.keys)
  case_id = re.sub(r"[^A-Za-z0-9_.+-]", "_", "_".join(parts))
  return re.sub(r"[^A-Za-z0-9_.+-]", "_", family), case_id
