"""The worker's command line as both sides name it: the module the client starts and the flags
it passes, which the worker's argument parser reads."""

from __future__ import annotations

from jaxport._isolation._preloaded import IF_PRESENT

# Run with ``python -m``: the worker package's ``__main__``.
WORKER_MODULE = "jaxport.harness._worker"
# What a worker imports before it serves, which a CPU run's workers are forked with, imported
# once per session process (``jaxport._isolation._preloaded``): the worker's modules, the data
# every worker reads (``_inherited``), jaxport's export, which every recording and replay
# runs, and where they are installed the SciPy module jaxlib's LAPACK kernels come from, which
# a worker registers before its first replay, the MHLO dialect, which jax loads when it first
# lowers, and Pallas' TPU module, which a project's TPU kernel cases import (50 to 80 ms a
# worker; ``IF_PRESENT``: where it imports).
WORKER_PRELOAD = ("jaxport.harness._worker._main", "jaxport.harness._worker._engine",
                  "jaxport.harness._worker._jax_setup", "jaxport.harness._worker._process_state",
                  "jaxport.harness._worker._inherited", "jaxport.export._lower",
                  IF_PRESENT + "scipy.linalg.cython_lapack",
                  IF_PRESENT + "jaxlib.mlir.dialects.mhlo",
                  IF_PRESENT + "jax.experimental.pallas.tpu")
COLD_START_FLAG = "--cold-start"
ANSWER_FD_FLAG = "--answer-fd"
# The read end of the pipe the requests come on (never stdin, which case code may read).
REQUEST_FD_FLAG = "--request-fd"
STAGE_FD_FLAG = "--stage-fd"
