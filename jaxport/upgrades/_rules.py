"""One small function per upgrade rule: the legacy flag operands -> the successor's attributes.

Each function receives the call being rewritten (``CallView``) and returns the
successor's ``backend_config`` entries: one-byte characters as ints, the way
jaxlib's typed kernels read them (``uplo = 'L'``, ``mode = 'V'``), or
:class:`Int32` where the kernel reads a 32-bit integer (gehrd's ``low``). A flag
operand that is not a constant, or holds a value the successor cannot express,
refuses the upgrade through ``call.refuse``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from jaxport.errors import UpgradeError


class CallView(Protocol):
  """What a rule function may ask of the call it rewrites."""

  def flag(self, name: str) -> int | float | complex:
    """The constant value of flag operand ``name`` (refuses when it is not a constant)."""

  def refuse(self, reason: str) -> UpgradeError:
    """The error that refuses this call, naming target, location and ``reason``."""


class Int32(int):
  """An attribute the successor reads as a signed 32-bit integer (others are one-byte characters)."""


def _char(value: str) -> int:
  return ord(value)


def _choice(call: CallView, name: str, mapping: dict[int, str]) -> int:
  value = call.flag(name)
  if value not in mapping:
    raise call.refuse(f"operand {name!r} is {value!r}; the successor only expresses "
                      f"{sorted(mapping)} ({', '.join(f'{k} -> {v!r}' for k, v in mapping.items())})")
  return _char(mapping[value])


def _uplo(call: CallView) -> int:
  return _choice(call, "lower", {1: "L", 0: "U"})


def potrf(call: CallView) -> dict[str, int]:
  """Cholesky: ``lower`` (0/1) becomes ``uplo`` ('U'/'L')."""
  return {"uplo": _uplo(call)}


def no_attributes(call: CallView) -> dict[str, int]:
  """getrf, geqrf, orgqr/ungqr: every legacy scalar is a size the successor reads from types."""
  return {}


def syevd(call: CallView) -> dict[str, int]:
  """Symmetric/Hermitian eigendecomposition: ``uplo`` from ``lower``; legacy always computed vectors."""
  return {"uplo": _uplo(call), "mode": _char("V")}


def geev(call: CallView) -> dict[str, int]:
  """Eigendecomposition: ``jobvl``/``jobvr`` (the characters 'N'/'V') become ``compute_left/right``."""
  jobs = {ord("N"): "N", ord("V"): "V"}
  return {"compute_left": _choice(call, "jobvl", jobs), "compute_right": _choice(call, "jobvr", jobs)}


def gesdd(call: CallView) -> dict[str, int]:
  """SVD: ``full_matrices`` and ``compute_uv`` become one ``mode`` ('A', 'S')."""
  if call.flag("compute_uv") != 1:
    raise call.refuse("compute_uv is not 1: the legacy call then still returned u and vt "
                      "buffers shaped as if computed, which the successor's 'N' mode does not; "
                      "no rule covers singular values alone")
  return {"mode": _choice(call, "full_matrices", {1: "A", 0: "S"})}


def gees(call: CallView) -> dict[str, int]:
  """Schur: ``jobvs`` becomes ``mode``; ``sort`` must be 'N' (the legacy kernel never sorted)."""
  if call.flag("sort") != ord("N"):
    raise call.refuse(f"sort is {call.flag('sort')!r}, not ord('N'); sorting was never supported")
  return {"mode": _choice(call, "jobvs", {ord("N"): "N", ord("V"): "V"}), "sort": _char("N")}


def sytrd(call: CallView) -> dict[str, int]:
  """Tridiagonal reduction (sytrd/hetrd): ``lower`` becomes ``uplo``."""
  return {"uplo": _uplo(call)}


def gehrd(call: CallView) -> dict[str, int]:
  """Hessenberg reduction: the 1-based row range ``ilo``/``ihi`` becomes ``low``/``high``."""
  low, high = call.flag("ilo"), call.flag("ihi")
  if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
    raise call.refuse(f"ilo = {low!r}, ihi = {high!r} is not a 1-based row range")
  return {"low": Int32(low), "high": Int32(high)}


def _alpha_is_one(call: CallView) -> None:
  alpha = call.flag("alpha")
  if alpha != 1:
    raise call.refuse(f"alpha is {alpha!r}; the successor solves op(a) x = b, which equals the "
                      "legacy alpha * b only when alpha is 1")


def blas_trsm(call: CallView) -> dict[str, int]:
  """BLAS triangular solve: four integer flags become side/uplo/trans_x/diag; alpha must be 1."""
  _alpha_is_one(call)
  return {"side": _choice(call, "left_side", {1: "L", 0: "R"}),
          "uplo": _uplo(call),
          "trans_x": _choice(call, "trans_a", {0: "N", 1: "T", 2: "C"}),
          "diag": _choice(call, "diag", {1: "U", 0: "N"})}


def trsm_alpha(call: CallView) -> dict[str, int]:
  """The 3-operand ``lapack_?trsm_ffi`` of jax 0.5.x: drop alpha after checking it is 1."""
  _alpha_is_one(call)
  return {}


FUNCTIONS: dict[str, Callable[[CallView], dict[str, int]]] = {
    f.__name__: f for f in (potrf, no_attributes, syevd, geev, gesdd, gees, sytrd, gehrd, blas_trsm,
                            trsm_alpha)
}
