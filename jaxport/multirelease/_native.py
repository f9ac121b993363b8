"""A project's own native kernel that does not register under the release a replay ran on.

A project that calls a custom-call target of its own (an XLA FFI kernel it builds and
registers) replays under another release only where its build registers there: a kernel built
against another jax's FFI headers may not. Such a replay says nothing of whether the entry's
blob runs under the release; it says the project's build does not. :func:`unregistered_kernel`
names the kernel from the release reader's error, so that the entry is skipped with that
reason, never measured as "does not run".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jaxport.releases import jax_knows

# What jaxlib says when a module calls a target nothing registered with it (its FFI registry,
# or its custom-call registry), with the target's name where the message gives it.
_NOT_REGISTERED = (
    re.compile(r"No FFI handler registered for ([A-Za-z0-9_.]+)"),
    re.compile(r"No registered implementation for (?:untyped |typed |FFI )?custom call to "
               r"([A-Za-z0-9_.]+)"),
    re.compile(r"No FFI handler registered"),
)


def project_targets(targets: Iterable[str]) -> tuple[str, ...]:
  """Of an entry's custom-call ``targets``, those no release of jax knows: the project's own."""
  return tuple(sorted({t for t in targets if not jax_knows(t)}))


def unregistered_kernel(message: str, targets: Iterable[str]) -> str | None:
  """The project's own target among ``targets`` that ``message`` (a reader's error) says is not
  registered, else None (a target of jax's own that the release lacks is a real refusal)."""
  own = project_targets(targets)
  if not own:
    return None
  for pattern in _NOT_REGISTERED:
    found = pattern.search(message)
    if found is None:
      continue
    named = found.group(1) if pattern.groups else None
    if named is None:
      mentioned = [t for t in own if t in message]
      return (mentioned or list(own))[0]
    return named if named in own else None
  return None


def skip_reason(target: str, version: str) -> str:
  """The reason an entry calling ``target`` is skipped under jax ``version``."""
  return (f"the project's native kernel {target} does not register under jax {version} (built "
          f"for another jax's FFI?); rebuild it in the release's environment to measure the "
          "entry there")
