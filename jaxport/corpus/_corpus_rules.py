"""What a dataset of jax's back-compat corpus is: its operation, and the checker that judges it.

A dataset's family (its file's stem without the platform, e.g. ``eig_lapack_geev``)
names the operation in front; where it does not, the custom-call targets of its
module do (``lapack_sgeev_ffi`` is an eig). Results of several operations are
unique only up to a choice (eigenvector phases, singular-vector signs, Schur
bases, pivots among ties, the order of equal top-k values), so each operation
maps to one of the harness's invariant checkers (``jaxport/harness/checkers.py``, by
name). jax's corpus functions build most operands inside the module and return
``lax.linalg``'s raw outputs, hence the ``jax_*`` adapters of those checkers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

# Operations of the corpus, longest first, as the family's leading words.
_OPS = ("lu_pivots_to_permutation", "tridiagonal_solve", "triangular_solve", "rng_bit_generator",
        "approx_top_k", "approxtopk", "reduce_window", "threefry2x32", "tridiagonal", "hessenberg",
        "cholesky", "top_k", "eigh", "eig", "schur", "svd", "qr", "lu")
_OP_ALIASES = {"approxtopk": "approx_top_k"}
# Family prefixes that say how the op was lowered, not what it computes.
_FAMILY_PREFIXES = ("stablehlo_dynamic_",)

# Custom-call target patterns, for families whose name says nothing.
_TARGET_OPS = (
    (re.compile(r"geev"), "eig"),
    (re.compile(r"syev|heev|^Eigh$"), "eigh"),
    (re.compile(r"gesdd|gesvd"), "svd"),
    (re.compile(r"geqrf|^Qr$"), "qr"),
    (re.compile(r"getrf|^Lu$"), "lu"),
    (re.compile(r"gees"), "schur"),
    (re.compile(r"potrf"), "cholesky"),
    (re.compile(r"gehrd"), "hessenberg"),
    (re.compile(r"sytrd|hetrd"), "tridiagonal"),
    (re.compile(r"approx_top_k|ApproxTopK"), "approx_top_k"),
    (re.compile(r"top_k"), "top_k"),
)

DEFAULT_CHECKER = "allclose"

# Operation -> (checker of jaxport/harness/checkers.py, why).
_CHECKERS = {
    "cholesky": ("cholesky", "L L^H reconstructs the operand"),
    "eig": ("jax_eig", "eigenvectors are unique only up to phase; eigenvalues compared as a multiset"),
    "eigh": ("jax_eigh", "eigenvectors are unique only up to phase"),
    "qr": ("jax_qr", "Q and R are unique only up to the signs of R's diagonal"),
    "lu": ("jax_lu", "pivots among equal candidates may differ"),
    "svd": ("jax_svd", "singular vectors are unique only up to signs"),
    "schur": ("schur", "the Schur form and basis are unique only up to ordering and phase"),
    "tridiagonal": ("jax_tridiagonal", "the reduction is judged by its spectrum and |off-diagonal|"),
    "top_k": ("top_k", "equal values may come back in another order"),
    "approx_top_k": ("top_k", "equal values may come back in another order"),
}


@dataclasses.dataclass(frozen=True)
class CheckerChoice:
  """The checker chosen for a dataset, the operation it was chosen for, and why."""

  checker: str
  op: str | None
  reason: str


def operation(family: str, targets: Iterable[str]) -> str | None:
  """The operation a dataset computes: from its family's leading words, else its targets."""
  name = family.lower()
  for prefix in _FAMILY_PREFIXES:
    if name.startswith(prefix):
      name = name[len(prefix):]
  for op in _OPS:
    if name == op or name.startswith(op + "_"):
      return _OP_ALIASES.get(op, op)
  for target in sorted(targets):
    for pattern, op in _TARGET_OPS:
      if pattern.search(target):
        return op
  return None


def choose_checker(family: str, targets: Iterable[str]) -> CheckerChoice:
  """The checker for a dataset of ``family`` whose module calls ``targets``."""
  op = operation(family, targets)
  if op in _CHECKERS:
    checker, why = _CHECKERS[op]
    return CheckerChoice(checker, op, f"{op}: {why}")
  return CheckerChoice(DEFAULT_CHECKER, op, f"{op or 'unknown operation'}: results are unique, "
                                             "compared elementwise")


def checker_names() -> frozenset[str]:
  """Every checker name the importer may write into a manifest."""
  return frozenset({DEFAULT_CHECKER, "none", *(c for c, _ in _CHECKERS.values())})
