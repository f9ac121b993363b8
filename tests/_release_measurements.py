"""Stand-ins for what a jax release's own interpreter prints when the release table is measured:
the scripts it runs are replaced by small ones the running interpreter runs, and a measurement's
output is built here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxport.multirelease._table_measure import UNKNOWN_TARGET


def script(path: Path, body: str, **names: Any) -> Path:
  """The Python file ``path``: ``names`` as its constants, then ``body``."""
  path.write_text("".join(f"{k} = {v!r}\n" for k, v in names.items()) + body)
  return path


def measured(version: str, statuses: dict[str, str], fields: dict[str, bool | None] | None = None,
             probes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
  """What measuring ``version`` gives: the measurement script's output (its reader reading each
  layout as ``statuses`` says) and the probes of its targets."""
  return {
      "jax": version, "jaxlib": version, "python": "3.11.7",
      "stablehlo": {"writes": "1.9.5", "reads_min": "0.9.0"}, "vhlo_ops": ["abs_v1", "sine_v2"],
      "calling_conventions": {"default": 9, "call": [9, 10], "export": [9, 10]},
      "stable_table": ["lapack_spotrf_ffi", "cusolver_getrf_ffi", "Sharding"],
      "envelope_layouts": {layout: {"status": s, "error": None if s == "reads" else f"E: {s}"}
                           for layout, s in statuses.items()},
      "device_count_fields": fields or {"nr_devices": True, "nr_devices_short": True},
      "newer_stablehlo": {"version": "1.15.0", "reads": False, "error": "E: too new"},
      "sdy_dialect": {"reads": True, "error": None},
      "calling_convention_above_max": {"version": 11, "refused": True, "error": "call: E"},
      "probes": probes if probes is not None else {
          "lapack_spotrf_ffi": {"registered": True, "error": None, "operands": 1},
          "lapack_spotrf": {"registered": False, "error": "not registered"},
          "Sharding": {"registered": False, "xla_builtin": True, "error": "aborted"},
          UNKNOWN_TARGET: {"registered": False, "error": "not registered"}},
  }
