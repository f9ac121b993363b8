"""The arrays of an imported artifact: its npz files checked leaf by leaf against the blob's
avals, or inputs made from the avals, and the jax configuration they run under.

An npz beside a blob holds the flattened leaves in order as ``np.savez(f, *leaves)`` writes
them (``arr_0``, ``arr_1``...). Each member's header is read and compared with its aval
(count, dtype, rank, static sizes, one size per symbolic dimension) before any data is read,
and the data is then read without pickle and within jaxport's size limits.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax import tree_util

from jaxport import _bounded, _limits
from jaxport.errors import GoldenDataError
from jaxport.golden._manifest import ArraySpec
from jaxport.golden._npz import ZIP_MEMBER_OVERHEAD, decode_arrays, positional_specs
from jaxport.shapes import _expr
from jaxport.shapes._api import is_symbolic_dim

_X64_KEY = "jax_enable_x64"


class ArtifactRefused(GoldenDataError):
  """One blob that cannot be imported: the message names it and why; nothing was written."""


def _refused(blob: Path, why: str) -> ArtifactRefused:
  return ArtifactRefused(f"{blob}: refused: {why}")


def _leaf_name(path: tuple[Any, ...], what: str) -> str:
  """``args[0]['x']`` for an input leaf (the tree is (args, kwargs)), ``output[1]`` for an
  output."""
  if what == "input" and path and isinstance(path[0], tree_util.SequenceKey):
    return ("args" if path[0].idx == 0 else "kwargs") + tree_util.keystr(path[1:])
  return what + tree_util.keystr(path)


def leaf_names(tree: Any, count: int, what: str) -> list[str]:
  """A name for each flattened leaf of ``tree``, by position where the tree does not say."""
  try:
    paths = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(tree, range(count)))[0]
    names = [_leaf_name(tuple(p), what) for p, _ in paths]
  except Exception:  # noqa: BLE001  (a tree that does not rebuild is named by position)
    names = []
  return names if len(names) == count else [f"{what} {i}" for i in range(count)]


def _vars(avals: Sequence[Any]) -> list[str]:
  found: dict[str, None] = {}
  for a in avals:
    for d in a.shape:
      if is_symbolic_dim(d):
        found.update(dict.fromkeys(sorted(d._get_vars())))
  return list(found)


def _check_leaf(blob: Path, where: str, spec: ArraySpec, aval: Any,
                env: dict[str, int]) -> None:
  """Refuse ``spec`` unless it fits ``aval``; binds the symbolic dimensions it fixes."""
  want = np.dtype(aval.dtype).name
  shape = tuple(aval.shape)
  aval_text = f"{want}[{', '.join(map(str, shape))}]"
  static = all(not is_symbolic_dim(d) for d in shape)
  if (spec.dtype != want or len(spec.shape) != len(shape)
      or static and tuple(spec.shape) != tuple(int(d) for d in shape)):
    raise _refused(blob, f"{where} is {spec.dtype}{list(spec.shape)}, but the blob's aval is "
                         f"{aval_text}")
  for axis, (d, size) in enumerate(zip(shape, spec.shape)):
    if is_symbolic_dim(d) and d._get_vars() == {str(d)}:
      if env.setdefault(str(d), size) != size:
        raise _refused(blob, f"{where} gives dimension {d} the size {size} at axis {axis}, "
                             f"but the inputs and the leaves before it make {d} = "
                             f"{env[str(d)]}")
  for axis, (d, size) in enumerate(zip(shape, spec.shape)):
    if is_symbolic_dim(d) and not d._get_vars() <= set(env):
      continue  # a dimension no leaf so far fixes: a later leaf, or the call, checks it
    value = _expr.evaluate(d, env)
    if value != size:
      raise _refused(blob, f"{where} has size {size} at axis {axis}, but the blob's aval "
                           f"{aval_text} makes it {value} there ({d} with "
                           f"{', '.join(f'{k}={v}' for k, v in sorted(env.items()))})")


def read_npz(blob: Path, path: Path, avals: Sequence[Any], what: str,
             env: Mapping[str, int] | None, tree: Any) -> list[np.ndarray]:
  """The arrays of the npz file ``path`` beside ``blob``, checked against ``avals`` (the
  blob's inputs or outputs, ``what``, flattened from ``tree``); ``env`` binds the symbolic
  dimensions the inputs fixed."""
  most = (len(avals) + 1) * (_limits.MAX_ARRAY_BYTES + _limits.MAX_NPY_HEADER_BYTES
                             + ZIP_MEMBER_OVERHEAD)
  try:
    data = _bounded.read_regular(path, str(path), GoldenDataError, "MAX_ARRAY_BYTES", most=most,
                                 how="one array per leaf, each at most")
    specs = positional_specs(data, str(path))
  except GoldenDataError as e:
    raise _refused(blob, str(e)) from None
  names = leaf_names(tree, len(avals), what)
  if len(specs) != len(avals):
    raise _refused(blob, f"{path.name} holds {len(specs)} arrays, but the blob has "
                         f"{len(avals)} {what} leaves ({', '.join(names) or 'none'})")
  bound = dict(env or {})
  for i, (spec, aval) in enumerate(zip(specs, avals)):
    _check_leaf(blob, f"{path.name}: arr_{i} ({names[i]})", spec, aval, bound)
  try:
    return decode_arrays(data, specs, str(path))
  except GoldenDataError as e:
    raise _refused(blob, str(e)) from None


def bindings(avals: Sequence[Any], inputs: Sequence[np.ndarray]) -> dict[str, int]:
  """The size of each symbolic dimension the inputs fix (plain variables only)."""
  env: dict[str, int] = {}
  for aval, x in zip(avals, inputs):
    for d, size in zip(aval.shape, np.shape(x)):
      if is_symbolic_dim(d) and d._get_vars() == {str(d)}:
        env.setdefault(str(d), int(size))
  return env


def dims_for(blob: Path, avals: Sequence[Any], dims: Mapping[str, int]) -> dict[str, int]:
  """The sizes ``--dims`` gives the symbolic dimensions of ``avals``; refused naming each
  one left unbound."""
  names = _vars(avals)
  missing = [n for n in names if n not in dims]
  if missing:
    example = " ".join(f"{n}=4" for n in missing)
    raise _refused(blob, f"its inputs have the symbolic dimension(s) {', '.join(missing)}, "
                         f"which nothing binds: ship {blob.stem}.inputs.npz beside it, or "
                         f"pass --dims {example}")
  return {n: int(dims[n]) for n in names}


def made_inputs(avals: Sequence[Any], env: Mapping[str, int]) -> list[np.ndarray]:
  """Deterministic inputs of the avals' shapes and dtypes: small positive numbers that vary
  along the array (integers 0..6, alternating booleans), the same on every run."""
  out = []
  for aval in avals:
    shape = tuple(int(_expr.evaluate(d, dict(env))) for d in aval.shape)
    dt = np.dtype(aval.dtype)
    base = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    if dt.kind == "b":
      x = base % 2 == 0
    elif dt.kind in "iu":
      x = base % 7
    elif dt.kind == "c":
      x = 1 + (base % 7) / 8 + 0.5j
    else:
      x = 1 + (base % 7) / 8
    out.append(np.asarray(x).astype(dt))
  return out


def shape_specs(avals: Sequence[Any]) -> tuple[str | None, ...] | None:
  """The input shapes as polymorphic-shape text (None for an input of static shape), or None
  when no input is symbolic."""
  if not any(is_symbolic_dim(d) for a in avals for d in a.shape):
    return None
  return tuple(f"({', '.join(str(d) for d in a.shape)})"
               if any(is_symbolic_dim(d) for d in a.shape) else None for a in avals)


def constraints(exp: Any) -> tuple[str, ...]:
  """The explicit constraints of the symbolic scope the blob's avals share."""
  for aval in (*exp.in_avals, *exp.out_avals):
    for d in aval.shape:
      scope = getattr(d, "scope", None)
      if scope is not None:
        return tuple(str(c) for c in getattr(scope, "constraints", ()))
  return ()


def jax_config_for(exp: Any) -> dict[str, bool]:
  """The configuration the blob runs under: 64-bit types on when an aval has one."""
  wide = any(np.dtype(a.dtype).itemsize == 8 and np.dtype(a.dtype).kind in "iuf"
             or np.dtype(a.dtype).name == "complex128" for a in (*exp.in_avals, *exp.out_avals))
  return {_X64_KEY: wide}


@contextlib.contextmanager
def x64_for(exp: Any) -> Iterator[None]:
  """Run with :func:`jax_config_for`'s configuration, then restore jax's."""
  wanted = jax_config_for(exp)[_X64_KEY]
  saved = bool(getattr(jax.config, _X64_KEY))
  jax.config.update(_X64_KEY, wanted)
  try:
    yield
  finally:
    jax.config.update(_X64_KEY, saved)
