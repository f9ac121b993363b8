"""The table layout of the wire format, read from ``schema/export.fbs``.

The verifier needs, for every table, each field's id and wire type. Rather than
a second hand-written description that could drift from the schema, this module
parses the subset of the flatbuffers IDL that the schema uses (``enum X: byte``,
``table``, scalar/string/table fields and vectors of them, ``= default``,
``(deprecated)``) and derives the layout from it.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import types
from typing import Any

SCHEMA_PATH = pathlib.Path(__file__).resolve().parent / "schema" / "export.fbs"

# Wire size in bytes of every scalar type the schema may use.
SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
    "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

# The ``struct`` format code (little-endian) of every scalar type.
SCALAR_CODES = {
    "bool": "?", "byte": "b", "ubyte": "B", "int8": "b", "uint8": "B",
    "short": "h", "ushort": "H", "int16": "h", "uint16": "H",
    "int": "i", "uint": "I", "int32": "i", "uint32": "I", "float": "f", "float32": "f",
    "long": "q", "ulong": "Q", "int64": "q", "uint64": "Q", "double": "d", "float64": "d",
}

# Field kinds.
SCALAR = "scalar"
STRING = "string"
TABLE = "table"
VECTOR_SCALAR = "vector_scalar"
VECTOR_STRING = "vector_string"
VECTOR_TABLE = "vector_table"


@dataclasses.dataclass(frozen=True)
class Field:
  """One field of a table: its id (declaration index), name and wire type."""
  id: int
  name: str
  kind: str
  size: int = 0  # scalar byte size, or vector element byte size for scalars
  table: str | None = None  # the table type for TABLE / VECTOR_TABLE
  deprecated: bool = False
  code: str = ""  # struct format code of the scalar or of the vector's elements
  default: Any = None  # the value an absent scalar reads as (None for `= null`)


@dataclasses.dataclass(frozen=True)
class Schema:
  namespace: str
  enums: dict[str, dict[str, int]]
  enum_types: dict[str, str]
  tables: dict[str, tuple[Field, ...]]
  root: str


_COMMENT = re.compile(r"//[^\n]*")
_BLOCK = re.compile(r"\b(enum|table)\s+(\w+)\s*(?::\s*(\w+))?\s*\{([^}]*)\}", re.S)
_FIELD = re.compile(
    r"^\s*(\w+)\s*:\s*(\[\s*\w+\s*\]|\w+)\s*(?:=\s*([\w.-]+))?\s*(?:\(([^)]*)\))?\s*$")


def parse(text: str) -> Schema:
  """Parses the schema subset; raises ValueError naming the offending declaration."""
  text = _COMMENT.sub("", text)
  ns = re.search(r"\bnamespace\s+([\w.]+)\s*;", text)
  root = re.search(r"\broot_type\s+(\w+)\s*;", text)
  if ns is None or root is None:
    raise ValueError("schema needs a namespace and a root_type declaration")
  enums: dict[str, dict[str, int]] = {}
  enum_types: dict[str, str] = {}
  raw_tables: dict[str, list[tuple[str, str, str | None, bool]]] = {}
  for kind, name, base, body in _BLOCK.findall(text):
    if kind == "enum":
      values: dict[str, int] = {}
      for item in filter(None, (s.strip() for s in body.split(","))):
        key, _, value = (p.strip() for p in item.partition("="))
        values[key] = int(value) if value else (max(values.values(), default=-1) + 1)
      enums[name] = values
      enum_types[name] = base
    else:
      fields = []
      for decl in filter(None, (s.strip() for s in body.split(";"))):
        m = _FIELD.match(decl)
        if m is None:
          raise ValueError(f"cannot parse field declaration {decl!r} of table {name}")
        fname, ftype, default, attrs = m.groups()
        fields.append((fname, ftype.replace(" ", ""), default, "deprecated" in (attrs or "")))
      raw_tables[name] = fields

  def resolve(tname: str, fid: int, fname: str, ftype: str, default: str | None,
              deprecated: bool) -> Field:
    is_vector = ftype.startswith("[")
    declared = ftype.strip("[]")
    base = enum_types.get(declared, declared)
    if base in SCALAR_SIZES:
      value = None if is_vector else _scalar_default(
          default, base, enums.get(declared), f"{tname}.{fname}")
      return Field(fid, fname, VECTOR_SCALAR if is_vector else SCALAR,
                   size=SCALAR_SIZES[base], deprecated=deprecated,
                   code=SCALAR_CODES[base], default=value)
    if base == "string":
      return Field(fid, fname, VECTOR_STRING if is_vector else STRING, deprecated=deprecated)
    if base in raw_tables:
      return Field(fid, fname, VECTOR_TABLE if is_vector else TABLE, table=base,
                   deprecated=deprecated)
    raise ValueError(f"unknown type {ftype!r} for field {tname}.{fname}")

  tables = {tname: tuple(resolve(tname, i, *f) for i, f in enumerate(fields))
            for tname, fields in raw_tables.items()}
  return Schema(ns.group(1), enums, enum_types, tables, root.group(1))


@functools.cache
def schema() -> Schema:
  """The parsed schema shipped with the package."""
  return parse(SCHEMA_PATH.read_text())


def _scalar_default(text: str | None, base: str, enum: dict[str, int] | None,
                    where: str) -> Any:
  """The value of a scalar field's ``= default`` (0 when none is declared)."""
  if text is None:
    return False if base == "bool" else 0
  if text == "null":
    return None
  if base == "bool":
    if text not in ("true", "false"):
      raise ValueError(f"default {text!r} of bool field {where} is not true or false")
    return text == "true"
  if enum is not None and text in enum:
    return enum[text]
  try:
    return float(text) if SCALAR_CODES[base] in "fd" else int(text, 0)
  except ValueError:
    raise ValueError(f"cannot read the default {text!r} of field {where}") from None


@functools.cache
def field_ids(table: str) -> types.SimpleNamespace:
  """``field_ids("Exported").vjp == 17``: the id of every field of ``table`` by name."""
  return types.SimpleNamespace(**{f.name: f.id for f in schema().tables[table]})
