"""Cases a cuda machine records and replays: the cuda lowering-only cases' functions, run.

Every cuda row of the lowering-only table (``_lowering_only``) is also a case
whose host is cuda: the same function, inputs, targets and jax flags, exported
for cuda, run on a cuda device, and judged by the checker of the CPU case of
the same operation with the tolerance of its dtype (``default_tolerance``, as
the CPU LAPACK cases). So the eleven stable cuda targets each get an entry with
real outputs under ``compat_data/cuda/``, besides the lowering-only entries a
CPU host records under ``compat_data/cpu/lowering_cuda/``.

A CPU run checks these entries without running them (both readers, targets,
signatures); a cuda run (``pytest harness/ --platform=cuda``) records and
replays them with numerics, and ``tools/accelerator/replay_on_accelerator.sh``
also compares each recorded output with the case's result on the CPU.
"""

from __future__ import annotations

from harness.cases import _lowering_only
from jaxport.harness import Case

PLATFORM = "cuda"
FAMILY = "run_cuda"
PREFIX = "cuda_run_"

# The checker of each cuda row's results: the CPU LAPACK case's of the same operation, or
# ``allclose`` where the result is unique (permutations, solutions, random bits).
CHECKERS = {
    "cholesky_f32": "cholesky",
    "qr_f32": "qr",
    "lu_f32": "lu",
    "lu_pivots_to_permutation": "allclose",
    "eigh_f32": "eigh",
    "svd_qr_f32": "svd",
    "svd_jacobi_f32": "svd",
    "tridiagonal_f32": "tridiagonal",
    "tridiagonal_solve_f32": "allclose",
    "threefry2x32": "allclose",
}


def cases() -> list[Case]:
  """One case per cuda row of the lowering-only table, recorded and replayed on cuda."""
  out = []
  for platform, suffix, fun, make, targets, flags in _lowering_only._TABLE:
    if platform != PLATFORM or fun is None:
      continue
    if suffix not in CHECKERS:
      raise ValueError(f"harness/cases/_cuda.py: the cuda lowering-only row {suffix!r} has no "
                       "checker; add it to CHECKERS (the CPU case's checker of the same "
                       "operation, or 'allclose' for a unique result)")
    out.append(Case(f"{PREFIX}{suffix}", FAMILY, fun, make, targets=targets,
                    checker=CHECKERS[suffix], host_platform=PLATFORM, jax_flags=flags))
  return out
