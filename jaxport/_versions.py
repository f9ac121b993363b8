"""Version numbers that appear on the wire or in modules, with their history.

Calling convention versions (the contract between a module and its caller).
``call`` runs every version, as jax does; ``export`` writes only
[MIN..MAX]. For versions 4 to 8 ``main`` takes what it takes today (see
docs/calling.md):
  4  (2023-03) StableHLO with compatibility guarantees; before 2023-03-28 main
     could take dimension arguments (``dim_args_spec``), which nobody passes.
  5  (2023-05) call_tf_graph support.
  6  (2023-06) disabled_checks; platforms must be non-empty.
  7  (2023-07) stablehlo.shape_assertion ops.
  8  (2023-07) the jax.uses_shape_polymorphism module attribute.
  9  (2023-12) main takes and returns real ``stablehlo.token`` values for ordered
     effects; platform index and dimension variables carry ``jax.global_constant``.
  10 (2025-10) same module text; consumers partition with Shardy.

Serialization versions (the flatbuffer layout of an Exported), dated by the
jax source that introduced them:
  1  (2023-11) first layout.
  2  (2023-12-16) float0 dtype.
  3  (2024-10-16) namedtuple and custom pytree nodes.
  4  (2025-04-07) PRNG key dtypes.
  5  (2025-11-23) AbstractValue.memory_space; nr_devices as uint32.
  6  (2026-01-15) NamedSharding over AbstractMesh.
  7  withdrawn.
  8  (2026-03-12) AbstractMesh.abstract_device.
  9  (2026-03-17) HloSharding protos no longer written.
  10 (2026-04-04) deduplicated unique_* tables with index vectors.
  11 (2026-05-15) AbstractDevice.platform.  <- written under jax up to 0.11.0
  12 (2026-07-29) real version number in the header and the producer's
     jax_version (field 26), always.  <- written under jax 0.11.1 and newer
Up to layout 11 the header says 3, so that older readers keep reading it.
The layout jaxport writes follows the installed jax: ``serialization_layout_version``.
"""

from __future__ import annotations

MIN_CALLING_CONVENTION_VERSION = 9
MAX_CALLING_CONVENTION_VERSION = 10
DEFAULT_CALLING_CONVENTION_VERSION = 10


def serialization_layout_version() -> int:
  """The layout jaxport writes under the installed jax: 12 where jax writes 12, else 11."""
  from jaxport._jaxcompat import _envelope  # local: it imports jax; this leaf must not
  return _envelope.REAL_HEADER_VERSION if _envelope.WRITES_VERSION_12 else 11


def layout_of_header(header: int, recorded: int | None = None) -> int | None:
  """The layout of a blob whose header's ``serialization_version`` is ``header``.

  From layout 12 (and for layouts 1 and 2) the header is the layout. Layouts 3
  to 11 all write the literal 3, so there the layout is unknown (None) unless
  ``recorded``, a golden manifest's ``serialization_version`` (the layout the
  recorder wrote), names one of them.
  """
  from jaxport._jaxcompat import _envelope  # local: it imports jax; this leaf must not
  legacy = _envelope.LEGACY_HEADER_VERSION
  if header <= 0:
    return None
  if header != legacy:
    return header
  if recorded is not None and legacy < recorded < _envelope.REAL_HEADER_VERSION:
    return recorded
  return None
