"""export(): trace, lower, check and wrap a jitted function into an Exported."""

from __future__ import annotations


def default_export_platform() -> str:
  raise NotImplementedError


def export(fun_jit, *, platforms=None, disabled_checks=()):
  raise NotImplementedError("jaxport.export is being built")
