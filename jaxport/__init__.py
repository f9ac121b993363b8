"""jaxport: an independent implementation of JAX's export system.

The public names mirror ``jax.export``; implementation modules are private.
Each public name is imported on first use (``jaxport._lazy``), so that
``import jaxport`` and its light subpackages do not import jax until something
needs it; the installed jax's version is still checked at once.
"""

# First: refuse a jax older than the supported range before anything touches its internals.
from jaxport._jaxcompat._version import JAXPORT_VERSION as __version__
import typing as _typing

from jaxport import _lazy
from jaxport._versions import (
    MAX_CALLING_CONVENTION_VERSION as maximum_supported_calling_convention_version,
    MIN_CALLING_CONVENTION_VERSION as minimum_supported_calling_convention_version,
)

_EXPORTS = {
    "call": "jaxport.calling._call",
    **dict.fromkeys(
        ["CallError", "CustomCallError", "DeserializationError", "ExpiredEnvelopeError",
         "ExportError", "GoldenDataError", "JaxportError", "JaxportWarning", "JaxVersionError",
         "ShapeError", "UntestedJaxWarning", "UpgradeError"],
        "jaxport.errors"),
    "DisabledSafetyCheck": "jaxport.export._disabled_checks",
    "Exported": "jaxport.export._exported",
    "default_export_platform": "jaxport.export._lower",
    "export": "jaxport.export._lower",
    "register_namedtuple_serialization": "jaxport.serde._pytrees",
    "register_pytree_node_serialization": "jaxport.serde._pytrees",
    "deserialize": "jaxport.serde._read",
    "upgrade": "jaxport.upgrades._upgrade",
    "upgrade_envelope": "jaxport.upgrades._envelope",
    "SymbolicScope": "jaxport.shapes._api",
    "is_symbolic_dim": "jaxport.shapes._api",
    "symbolic_args_specs": "jaxport.shapes._api",
    "symbolic_dim_bounds": "jaxport.shapes._api",
    "symbolic_shape": "jaxport.shapes._api",
}

if _typing.TYPE_CHECKING:  # the same names, for type checkers and editors
  from jaxport.calling._call import call as call
  from jaxport.errors import (
      CallError as CallError,
      CustomCallError as CustomCallError,
      DeserializationError as DeserializationError,
      ExpiredEnvelopeError as ExpiredEnvelopeError,
      ExportError as ExportError,
      GoldenDataError as GoldenDataError,
      JaxportError as JaxportError,
      JaxportWarning as JaxportWarning,
      JaxVersionError as JaxVersionError,
      ShapeError as ShapeError,
      UntestedJaxWarning as UntestedJaxWarning,
      UpgradeError as UpgradeError,
  )
  from jaxport.export._disabled_checks import DisabledSafetyCheck as DisabledSafetyCheck
  from jaxport.export._exported import Exported as Exported
  from jaxport.export._lower import (
      default_export_platform as default_export_platform,
      export as export,
  )
  from jaxport.serde._pytrees import (
      register_namedtuple_serialization as register_namedtuple_serialization,
      register_pytree_node_serialization as register_pytree_node_serialization,
  )
  from jaxport.serde._read import deserialize as deserialize
  from jaxport.upgrades._envelope import upgrade_envelope as upgrade_envelope
  from jaxport.upgrades._upgrade import upgrade as upgrade
  from jaxport.shapes._api import (
      SymbolicScope as SymbolicScope,
      is_symbolic_dim as is_symbolic_dim,
      symbolic_args_specs as symbolic_args_specs,
      symbolic_dim_bounds as symbolic_dim_bounds,
      symbolic_shape as symbolic_shape,
  )

__all__ = sorted([*_EXPORTS, "maximum_supported_calling_convention_version",
                  "minimum_supported_calling_convention_version"])
__getattr__, __dir__ = _lazy.attach(globals(), _EXPORTS)
_lazy.unshadow(globals(), "export")  # the function, not the subpackage of the same name
