"""The release-side helpers of jaxport's package (``jaxport_in_release/release_jax.py``)
for this folder's scripts, which run in release venvs where jaxport itself does not import: the
file is loaded by its path and stands in for this module."""

import importlib.util
import os
import sys

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "jaxport_in_release", "release_jax.py")
_spec = importlib.util.spec_from_file_location(__name__, _PATH)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.modules[__name__] = _module
