"""Public names of a package resolved on first use, so that importing the package stays cheap.

``import jaxport.harness._controller._plugin`` (what every pytest run of an opted-in project
does, in the controller and in each xdist worker) must not pay for importing jax
when that process never traces or runs anything. A package lists its public
names with the module that defines each; :func:`attach` gives it the module
``__getattr__`` and ``__dir__`` (PEP 562) that import the defining module on
first access and cache the name in the package's namespace.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def attach(namespace: dict,
           exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
  """``(__getattr__, __dir__)`` for the package whose ``globals()`` is ``namespace``.

  ``exports`` maps each public name to the module defining it; the attribute has
  the same name there. A resolved name is stored in ``namespace``, so later
  lookups never reach ``__getattr__`` again.
  """
  package = namespace["__name__"]

  def __getattr__(name: str) -> object:
    module = exports.get(name)
    if module is None:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value

  def __dir__() -> list[str]:
    return sorted(set(namespace) | set(exports))

  return __getattr__, __dir__


def unshadow(namespace: dict, name: str) -> None:
  """Keep the public ``name`` resolving lazily although a subpackage has the same name.

  Importing a subpackage binds it in its parent's namespace, which would hide the
  lazy public name of the same name once anything imports the subpackage. The
  subpackage is imported now (its ``__init__`` must be empty and cheap) and its
  binding dropped; later imports of its modules do not bind it again.
  """
  importlib.import_module(f"{namespace['__name__']}.{name}")
  namespace.pop(name, None)
