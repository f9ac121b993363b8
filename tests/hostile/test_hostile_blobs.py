"""Hostile blobs and shape specs: huge exponents, deep nesting, deep pytrees.

Each refusal is a jaxport error that names the limit from ``jaxport._limits``;
every depth jax 0.10.2 itself reads is read.
"""

from __future__ import annotations

import dataclasses
import sys

import jax
import jax.export
import numpy as np
import pytest

import jaxport
from jaxport import _limits
from jaxport.cli import main
from jaxport.errors import DeserializationError, SerializationError, ShapeError

DIM = "aaaaaaaaaa"  # as long as the hostile replacement below, so the blob keeps its layout


@pytest.fixture(scope="module")
def symbolic_blob() -> bytes:
  spec = jaxport.symbolic_shape(DIM)
  exp = jaxport.export(jax.jit(lambda x: x * 2.0))(jax.ShapeDtypeStruct(spec, np.float32))
  return bytes(exp.serialize())


@pytest.mark.parametrize("spec", ["a^99999999", "3^99999999", "b * a^65"])
def test_a_huge_exponent_in_a_spec_is_refused_naming_the_limit(spec):
  with pytest.raises(ShapeError, match=r"exponent \d+ .*jaxport\._limits\.MAX_DIM_EXPONENT = 64"):
    jaxport.symbolic_shape(spec)


def test_the_largest_allowed_exponent_still_parses():
  a, a64 = jaxport.symbolic_shape("a, a^64")
  assert a64 == a ** 64


def test_a_huge_power_of_a_dimension_is_refused_naming_the_limit():
  a, = jaxport.symbolic_shape("a")
  with pytest.raises(ShapeError, match="MAX_DIM_EXPONENT"):
    a ** 99999999


@pytest.mark.parametrize("spec", ["(" * 3000 + "b" + ")" * 3000,
                                  "max(" * 3000 + "a" + ", 1)" * 3000])
def test_deep_nesting_in_a_spec_is_refused_naming_the_limit(spec):
  with pytest.raises(ShapeError, match=r"nest deeper than the limit .*MAX_SPEC_NESTING = 64"):
    jaxport.symbolic_shape(spec)


def test_a_huge_spec_is_refused_naming_the_limit():
  spec = ", ".join(["a"] * _limits.MAX_SPEC_CHARS)
  with pytest.raises(ShapeError, match="MAX_SPEC_CHARS"):
    jaxport.symbolic_shape(spec)


@pytest.mark.parametrize("dim", ["a^99999999", "3^99999999"])
def test_a_blob_with_a_hostile_dimension_is_refused_by_deserialize_inspect_and_audit(
    symbolic_blob, dim, tmp_path, capsys):
  hostile = symbolic_blob.replace(DIM.encode(), dim.encode())
  with pytest.raises(DeserializationError, match="MAX_DIM_EXPONENT"):
    jaxport.deserialize(hostile)
  path = tmp_path / "model.bin"
  path.write_bytes(hostile)
  rc = main(["inspect", str(path)])
  assert rc == 2 and "MAX_DIM_EXPONENT" in capsys.readouterr().err
  rc = main(["audit", str(path), "--json"])
  assert rc == 1 and "MAX_DIM_EXPONENT" in capsys.readouterr().out


def test_a_dimension_of_thousands_of_digits_is_a_deserialization_error():
  name = "x" * 5000
  spec = jaxport.symbolic_shape(name)
  exp = jaxport.export(jax.jit(lambda x: x))(jax.ShapeDtypeStruct(spec, np.float32))
  hostile = bytes(exp.serialize()).replace(name.encode(), b"9" * len(name))
  with pytest.raises(DeserializationError):
    jaxport.deserialize(hostile)


def _nested(depth: int):
  tree = np.float32(1.0)
  for _ in range(depth):
    tree = [tree]
  return tree


class _RecursionLimit:
  """jax's recursive writer and tree code need more than Python's default limit for the
  deepest trees; jax's reader runs under the default limit."""

  def __enter__(self):
    self.old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)

  def __exit__(self, *exc):
    sys.setrecursionlimit(self.old)


def _jax_blob(depth: int) -> bytes:
  """jax.export's blob of a function of one argument nested ``depth`` lists deep."""
  with _RecursionLimit():
    return bytes(jax.export.export(jax.jit(lambda a: 1.0))(_nested(depth)).serialize())


@pytest.mark.parametrize("depth", [127, 300])
def test_jaxport_reads_its_own_deep_pytrees(depth):
  exp = jaxport.export(jax.jit(lambda a: 1.0))(_nested(depth))
  again = jaxport.deserialize(exp.serialize())
  assert again.in_tree == exp.in_tree


def test_jaxport_reads_what_jax_reads_and_deeper():
  # jax 0.10.2's reader stops near 490 levels under Python's default recursion
  # limit (fewer when called deeper in a stack, as here); jaxport reads past
  # that, up to its documented table limit.
  blob = _jax_blob(400)
  assert jaxport.deserialize(blob).in_tree == jax.export.deserialize(blob).in_tree
  deepest = _limits.MAX_TABLE_DEPTH - 4
  assert jaxport.deserialize(_jax_blob(deepest)).in_tree.num_leaves == 1


def test_a_pytree_past_the_table_limit_is_refused_naming_the_limit():
  blob = _jax_blob(_limits.MAX_TABLE_DEPTH + 10)
  with pytest.raises(DeserializationError, match="MAX_TABLE_DEPTH"):
    jaxport.deserialize(blob)


def test_serialize_refuses_a_pytree_its_reader_would_refuse():
  with _RecursionLimit():
    treedef = jax.tree_util.tree_structure(_nested(_limits.MAX_TABLE_DEPTH + 10))
  exp = jaxport.export(jax.jit(lambda a: 1.0))(np.float32(1.0))
  deep = dataclasses.replace(exp, in_tree=treedef)
  with pytest.raises(SerializationError, match="MAX_TABLE_DEPTH"):
    deep.serialize()
