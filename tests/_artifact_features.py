"""An artifact's features as the release table judges them: a small CPU module calling one
LAPACK target, with any field replaced, for the tests of ``runs_on``."""

from __future__ import annotations

from jaxport.releases._runs_on import ArtifactFeatures, CustomCall


def artifact_features(**over) -> ArtifactFeatures:
  base = dict(platforms=("cpu",), calling_convention=10, envelope_layout="legacy-vectors",
              serialization_version=3, has_nr_devices=True, stablehlo_version="1.13.7",
              vhlo_ops=frozenset({"add_v1", "func_v1", "return_v1", "custom_call_v1"}),
              custom_calls=(CustomCall("lapack_sgeqrf_ffi", 1),))
  base.update(over)
  return ArtifactFeatures(**base)
