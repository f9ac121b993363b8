"""The worker's command line as both sides name it: the module the client starts and the flags
it passes, which the worker's argument parser reads."""

from __future__ import annotations

# Run with ``python -m``: the worker package's ``__main__``.
WORKER_MODULE = "jaxport.harness._worker"
COLD_START_FLAG = "--cold-start"
ANSWER_FD_FLAG = "--answer-fd"
# The read end of the pipe the requests come on (never stdin, which case code may read).
REQUEST_FD_FLAG = "--request-fd"
STAGE_FD_FLAG = "--stage-fd"
