"""jaxport: an independent implementation of JAX's export system.

The public names mirror ``jax.export``; implementation modules are private.
"""

# First: refuse a jax older than the supported range before anything touches its internals.
from jaxport._jaxcompat._version import JAXPORT_VERSION as __version__
from jaxport._versions import (
    MAX_CALLING_CONVENTION_VERSION as maximum_supported_calling_convention_version,
    MIN_CALLING_CONVENTION_VERSION as minimum_supported_calling_convention_version,
)
from jaxport.calling._call import call as call
from jaxport.errors import (
    CallError as CallError,
    CustomCallError as CustomCallError,
    DeserializationError as DeserializationError,
    ExportError as ExportError,
    GoldenDataError as GoldenDataError,
    JaxportError as JaxportError,
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
from jaxport.upgrades._upgrade import upgrade as upgrade
from jaxport.shapes._api import (
    SymbolicScope as SymbolicScope,
    is_symbolic_dim as is_symbolic_dim,
    symbolic_args_specs as symbolic_args_specs,
    symbolic_shape as symbolic_shape,
)

__all__ = [
    "CallError",
    "CustomCallError",
    "DeserializationError",
    "DisabledSafetyCheck",
    "ExportError",
    "Exported",
    "GoldenDataError",
    "JaxVersionError",
    "JaxportError",
    "ShapeError",
    "SymbolicScope",
    "UntestedJaxWarning",
    "call",
    "default_export_platform",
    "deserialize",
    "export",
    "is_symbolic_dim",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
    "register_namedtuple_serialization",
    "register_pytree_node_serialization",
    "symbolic_args_specs",
    "symbolic_shape",
    "upgrade",
    "UpgradeError",
]
