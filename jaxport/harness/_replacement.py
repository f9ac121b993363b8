"""One function of a jax module replaced by the harness's own for a while, the original kept.

The worker puts memos in front of steps jax does per call (compiling a module,
making an MLIR context); each is a :class:`Replacement` that can be turned on
(idempotent), calls the original through :attr:`Replacement.original`, and puts
jax's function back when turned off.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any


class Replacement:
  """``module.name`` replaced by ``replacement`` between :meth:`on` and :meth:`off`."""

  def __init__(self, module: ModuleType, name: str, replacement: Callable[..., Any]):
    self.module, self.name, self.replacement = module, name, replacement
    self.saved: Callable[..., Any] | None = None

  @property
  def original(self) -> Callable[..., Any]:
    """jax's function: the one replaced, or the one in place while off."""
    return self.saved if self.saved is not None else getattr(self.module, self.name)

  def on(self) -> None:
    if self.saved is None:
      self.saved = getattr(self.module, self.name)
      setattr(self.module, self.name, self.replacement)

  def off(self) -> None:
    if self.saved is not None:
      setattr(self.module, self.name, self.saved)
      self.saved = None
