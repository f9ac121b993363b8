"""The ``jaxport`` command line."""

import os

# XLA's native log threshold, set before anything loads jaxlib (which reads it once): its INFO
# lines ("PjRt-IFRT device count: ...") are not the command's output. Only where the caller has
# not chosen one; warnings and errors still show, and child processes inherit it.
NATIVE_LOG_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
os.environ.setdefault(NATIVE_LOG_LEVEL_ENV, "1")

from jaxport.cli._main import main as main  # noqa: E402

__all__ = ["main"]
