"""XLA's native log threshold for the command line, set on import, before jaxlib loads.

jaxlib reads ``TF_CPP_MIN_LOG_LEVEL`` once, when it loads; its INFO lines ("PjRt-IFRT device
count: ...") are not the command's output. The threshold is set only where the caller has not
chosen one; warnings and errors still show, and child processes inherit it. ``_main`` imports
this module before any module that imports jax.
"""

import os

NATIVE_LOG_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
NATIVE_LOG_LEVEL = "1"

os.environ.setdefault(NATIVE_LOG_LEVEL_ENV, NATIVE_LOG_LEVEL)
