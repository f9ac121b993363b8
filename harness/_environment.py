"""The repository's own environment variables, read here and nowhere else in ``harness/`` and
``tools/`` (the package's are :mod:`jaxport._environment`'s).

- ``JAXPORT_JAX_FINDINGS``: a file the fuzzing appends jax.export's own findings to, one JSON
  line each, for the nightly's summary;
- ``JAXPORT_FUZZ_EXAMPLES``: how many examples the ``budgeted`` Hypothesis profile runs;
- ``JAXPORT_CONFORMANCE_MODE``, ``_OUT``, ``_UTIL``: what the conformance plugin runs jax's
  suites through (``jax`` or ``jaxport``), the results file it writes, and the copied
  back-compat test utility it loads.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from jaxport.errors import SettingsError

JAX_FINDINGS_ENV = "JAXPORT_JAX_FINDINGS"
FUZZ_EXAMPLES_ENV = "JAXPORT_FUZZ_EXAMPLES"
CONFORMANCE_MODE_ENV = "JAXPORT_CONFORMANCE_MODE"
CONFORMANCE_OUT_ENV = "JAXPORT_CONFORMANCE_OUT"
CONFORMANCE_UTIL_ENV = "JAXPORT_CONFORMANCE_UTIL"
CONFORMANCE_MODES = ("jax", "jaxport")


def jax_findings_file() -> Path | None:
  """The file jax.export's findings are listed in, or None when ``JAXPORT_JAX_FINDINGS`` is
  unset or empty."""
  path = os.environ.get(JAX_FINDINGS_ENV)
  return Path(path) if path else None


def fuzz_examples(default: int) -> int:
  """The examples of the ``budgeted`` profile: ``JAXPORT_FUZZ_EXAMPLES``, else ``default``; a
  value that is not a positive whole number is a ``SettingsError`` naming it."""
  text = os.environ.get(FUZZ_EXAMPLES_ENV, "").strip()
  if not text:
    return default
  if not text.isdigit() or int(text) < 1:
    raise SettingsError(f"{FUZZ_EXAMPLES_ENV}={text!r} is not a number of examples; set it to "
                        "a positive whole number, or unset it for the default "
                        f"({default})")
  return int(text)


@dataclasses.dataclass(frozen=True)
class ConformanceSettings:
  """What a conformance run of jax's suites asks of its pytest plugin."""
  mode: str
  out: Path
  util: Path


def conformance_settings() -> ConformanceSettings:
  """The conformance plugin's settings; a ``SettingsError`` naming the variable that is unset
  or wrong (``tools/conformance/run_jax_suites.py`` sets all three)."""
  mode = os.environ.get(CONFORMANCE_MODE_ENV)
  if mode not in CONFORMANCE_MODES:
    raise SettingsError(f"{CONFORMANCE_MODE_ENV} must be one of {', '.join(CONFORMANCE_MODES)}, "
                        f"not {mode!r}; run the suites through tools/conformance/run_jax_suites.py")
  paths = {}
  for name in (CONFORMANCE_OUT_ENV, CONFORMANCE_UTIL_ENV):
    value = os.environ.get(name)
    if not value:
      raise SettingsError(f"{name} is unset; run the suites through "
                          "tools/conformance/run_jax_suites.py, which sets it")
    paths[name] = Path(value)
  return ConformanceSettings(mode, paths[CONFORMANCE_OUT_ENV], paths[CONFORMANCE_UTIL_ENV])
