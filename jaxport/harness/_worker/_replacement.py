"""One function of jax replaced by the harness's own for a while, the original kept.

The worker puts memos in front of steps jax does per call (compiling a module,
making an MLIR context), and the fuzz suite turns off jax's static shape check
for a call; each is a :class:`Replacement` that can be turned on (idempotent),
calls the original through :attr:`Replacement.original`, and puts jax's
function back when turned off.

A replacement is written for the signatures of jax's function it was read
against (``written_for``). :meth:`Replacement.on` reads the installed jax's
signature first and turns on only when it is one of those; otherwise (another
signature, a missing attribute) it stays off, logs a warning, and says why in
:attr:`Replacement.status`, so that it never runs against a function it was not
written for. The signature is compared as :func:`spelling` writes it: parameter
names, kinds and defaults, which is what decides how jax's callers bind their
arguments; annotations are left out (jax's are strings that rename freely, such
as ``xc.DeviceList``, without changing a call).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

_ABSENT = object()


def spelling(fn: Callable[..., Any]) -> str:
  """``fn``'s parameters as ``inspect`` writes them, without annotations (names, kinds,
  defaults): ``(backend, computation, pgle_profiler=None)``."""
  sig = inspect.signature(fn)
  bare = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
  return str(sig.replace(parameters=bare, return_annotation=inspect.Signature.empty))


@dataclasses.dataclass(frozen=True)
class ReplacementStatus:
  """Whether a replacement is on, and when it was refused, why (the report's line)."""

  what: str
  target: str
  on: bool
  # Why the last :meth:`Replacement.on` left it off; None when on, or not asked for since
  # the last :meth:`Replacement.off`.
  reason: str | None = None

  @property
  def notice(self) -> str | None:
    """The line the harness's report carries for a refused replacement, or None."""
    return None if self.reason is None else f"{self.what} off: {self.reason}"


class Replacement:
  """``owner.name`` (a module's function or a class's method) replaced by ``replacement``
  between :meth:`on` and :meth:`off`, only where jax's function has a signature in
  ``written_for`` (as :func:`spelling` writes it)."""

  def __init__(self, owner: Any, name: str, replacement: Callable[..., Any], *,
               written_for: Sequence[str], what: str) -> None:
    assert written_for, f"a replacement of {name} must name the signatures it was written for"
    self.owner, self.name, self.replacement = owner, name, replacement
    self.written_for = tuple(written_for)
    self.what = what
    # jax's function while on (what the replacement calls), else None.
    self.saved: Callable[..., Any] | None = None
    self._raw: Any = _ABSENT  # the owner's own attribute, put back as it was
    self._reason: str | None = None

  @property
  def target(self) -> str:
    """``module.name`` or ``module.Class.name`` of jax's function."""
    owner = self.owner
    where = getattr(owner, "__qualname__", None)
    module = getattr(owner, "__module__", None) if where is not None else None
    base = f"{module}.{where}" if module else getattr(owner, "__name__", repr(owner))
    return f"{base}.{self.name}"

  @property
  def original(self) -> Callable[..., Any]:
    """jax's function: the one replaced, or the one in place while off."""
    return self.saved if self.saved is not None else getattr(self.owner, self.name)

  @property
  def is_on(self) -> bool:
    """Whether jax's function is replaced now."""
    return self.saved is not None

  @property
  def status(self) -> ReplacementStatus:
    """On or off, and why the last :meth:`on` was refused (for the log and the report)."""
    return ReplacementStatus(self.what, self.target, self.is_on,
                             None if self.is_on else self._reason)

  def mismatch(self) -> str | None:
    """Why the installed jax's function is not one this replacement was written for, or None."""
    found = getattr(self.owner, self.name, _ABSENT)
    if found is _ABSENT:
      return f"jax has no {self.target}"
    try:
      got = spelling(found)
    except (TypeError, ValueError) as e:
      return f"the signature of jax's {self.target} cannot be read ({e})"
    if got in self.written_for:
      return None
    return (f"jax's {self.name} has signature {got}, written for "
            f"{' or '.join(self.written_for)} ({self.target})")

  def on(self) -> bool:
    """Replace jax's function unless it has another signature; whether it is on now."""
    if self.saved is not None:
      return True
    reason = self.mismatch()
    if reason is not None:
      self._reason = reason
      logger.warning("%s stays off: %s", self.what, reason)
      return False
    self._reason = None
    self._raw = vars(self.owner).get(self.name, _ABSENT)
    self.saved = getattr(self.owner, self.name)
    setattr(self.owner, self.name, self.replacement)
    return True

  def off(self) -> None:
    """Put jax's function back as it was, and forget why it was refused (idempotent)."""
    self._reason = None
    if self.saved is None:
      return
    if self._raw is _ABSENT:
      delattr(self.owner, self.name)  # it was inherited: uncover it again
    else:
      setattr(self.owner, self.name, self._raw)
    self.saved, self._raw = None, _ABSENT
