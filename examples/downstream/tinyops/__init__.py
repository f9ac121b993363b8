"""tinyops: a small library of JAX functions that ships serialized artifacts.

It stands for any project that exports its functions and keeps golden tests of
them with jaxport's compat harness (see ``tinyops/golden_cases.py``).
"""

from tinyops.layers import mlp as mlp
from tinyops.layers import normalize_rows as normalize_rows
from tinyops.layers import scores as scores
from tinyops.linalg import whiten as whiten
from tinyops.stats import RunningStats as RunningStats
from tinyops.stats import update_stats as update_stats

__all__ = ["RunningStats", "mlp", "normalize_rows", "scores", "update_stats", "whiten"]
