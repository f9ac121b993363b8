"""jax's lowering internals jaxport builds on, imported in one place: the lowering context and
rules (``mlir``), the partitioned lowering (``pxla``), lowered stages, and the MLIR IR with
the dialects jaxport writes (``ir``, ``passmanager``, ``func_dialect``, ``hlo``, ``sdy``).
"""

from __future__ import annotations

from jax._src import stages
from jax._src.interpreters import mlir, pxla
from jax._src.lib.mlir import ir, passmanager
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.lib.mlir.dialects import hlo, sdy

__all__ = ["func_dialect", "hlo", "ir", "mlir", "passmanager", "pxla", "sdy", "stages"]
