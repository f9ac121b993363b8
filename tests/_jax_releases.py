"""Every test that needs a newer jax than the oldest supported release, in one place.

jaxport runs on each supported jax release; a few tests check a behaviour that
only newer releases have. Each gets one of the markers below, which skip it on
older releases with the reason. Keep this list short (at most ten skipped tests
per release) and prefer tests that hold on every release.
"""

import functools

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport._jaxcompat import _version

JAX_RELEASE = _version.release_tuple(jax.__version__)

# jax.export writes serialization layout 11 (the layout jaxport writes) from jax
# 0.10.1 on; 0.10.0 writes layout 10 and 0.9.x layouts 6 to 8, without the
# deduplicated tables. jaxport reads all of them; its bytes equal jax's only
# when jax writes the same layout.
JAX_WRITES_JAXPORTS_LAYOUT = JAX_RELEASE >= (0, 10, 1)

same_bytes_as_jax = pytest.mark.skipif(
    not JAX_WRITES_JAXPORTS_LAYOUT,
    reason=f"jax {jax.__version__}'s jax.export writes an older serialization layout than "
           "jaxport (layout 11, from jax 0.10.1), so the bytes cannot be equal")

# jax 0.11.1 dropped records that carry HloShardings only: its Exported has no
# _has_named_shardings field, in_shardings_jax ignores in_shardings_hlo, and its
# reader refuses HloSharding protos as expired (tests/integration/test_envelope_versions.py
# covers jaxport's refusal). A test comparing such a record with jax's needs an older jax.
jax_keeps_hlo_sharding_records = pytest.mark.skipif(
    jax_envelope.REFUSES_EXPIRED,
    reason=f"jax {jax.__version__} has no HloSharding-only records to compare with (jax 0.11.1 "
           "dropped Exported._has_named_shardings and refuses HloSharding protos as expired)")


def as_jax_record(record):
  """jax's ``Exported`` with the fields of jaxport's ``record`` (for releases that keep
  ``_has_named_shardings``, its value too)."""
  import dataclasses
  import jax.export
  names = {f.name for f in dataclasses.fields(jax.export.Exported)}
  fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
  if "_has_named_shardings" in names:
    fields["_has_named_shardings"] = record._has_named_shardings
  return jax.export.Exported(**fields)


abstract_device_platform = pytest.mark.skipif(
    not jax_mesh.HAS_PLATFORM,
    reason=f"jax {jax.__version__} has no AbstractDevice.platform (added in jax 0.10.1)")

# jax 0.10.0 added hipsolver_gesdd_ffi, hipsolver_sytrd_ffi and
# hip_threefry2x32_ffi to jax.export's allow-list, which jaxport's table holds.
jax_allow_list_of_0_10 = pytest.mark.skipif(
    JAX_RELEASE < (0, 10, 0),
    reason=f"jax {jax.__version__}'s custom-call allow-list predates the three ROCm targets "
           "jax 0.10.0 added; jaxport's table is 0.10's")

# The golden store's current entries were recorded by jax 0.10.2. On an older jax
# a reader's failure on them is outside the forward window (reported as an
# expected failure), so a test that plants a reader fault in them needs 0.10.2.
entries_of_a_newer_release = pytest.mark.skipif(
    JAX_RELEASE < (0, 10, 2),
    reason=f"the entries were recorded by jax 0.10.2; on jax {jax.__version__} a reader's failure "
           "on them is outside the forward window and reported, not failed")

# The table of jax corpus families and the cases that match them is read off the
# corpus jax 0.10.2 ships; older releases ship fewer datasets and cases.
corpus_of_jax_0_10_2 = pytest.mark.skipif(
    JAX_RELEASE < (0, 10, 2),
    reason=f"the expected family-to-case pairs are those of jax 0.10.2's corpus; jax "
           f"{jax.__version__} ships another corpus")


@functools.cache
def _cpu_mesh_places_in_host_memory() -> bool:
  """Whether this jax runs a jit that places a sharded output in pinned host memory on CPU devices."""
  mesh = jax.make_mesh((jax.device_count(),), ("x",))
  host = NamedSharding(mesh, PartitionSpec("x"), memory_kind="pinned_host")
  try:
    jax.jit(lambda x: x * 2, out_shardings=host)(np.ones((jax.device_count(), 2), np.float32))
  except jax.errors.JaxRuntimeError:
    return False
  return True


def skip_without_memory_kinds_on_cpu_mesh() -> None:
  """Skip a multi-device test of memory kinds where jax itself cannot run them on CPU devices.

  jax before 0.10.2 refuses ``annotate_device_placement`` on a multi-device CPU
  mesh ("Side-effect ops cannot be replicated"), for plain ``jax.jit`` too.
  Detected by running one such jit (in the eight-device test child only).
  """
  if not _cpu_mesh_places_in_host_memory():
    pytest.skip(f"jax {jax.__version__} cannot place sharded values in host memory on a "
                "multi-device CPU mesh (Side-effect ops cannot be replicated), even in plain jax.jit")
