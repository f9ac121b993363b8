"""The public face of jaxport: exactly the names it promises, mirroring jax.export."""

import types

import jax.export

import jaxport

EXTRA_PUBLIC_NAMES = {
    "call", "CallError", "CustomCallError", "DeserializationError", "ExportError",
    "GoldenDataError", "JaxportError", "JaxportWarning", "JaxVersionError", "ShapeError",
    "UntestedJaxWarning", "upgrade", "UpgradeError", "ExpiredEnvelopeError", "upgrade_envelope",
    # jax.export has it from jax 0.12 on; jaxport under every supported jax.
    "symbolic_dim_bounds",
}


def test_all_lists_exactly_the_public_names():
  public = {n for n in dir(jaxport)
            if not n.startswith("_") and not isinstance(getattr(jaxport, n), types.ModuleType)}
  assert set(jaxport.__all__) == public


def test_every_jax_export_name_is_mirrored():
  missing = set(jax.export.__all__) - set(jaxport.__all__) if hasattr(jax.export, "__all__") else set()
  jax_names = {n for n in dir(jax.export) if not n.startswith("_")}
  assert jax_names - set(jaxport.__all__) == set(), missing
  assert set(jaxport.__all__) - jax_names <= EXTRA_PUBLIC_NAMES


def test_calling_convention_range_matches_jax():
  assert jaxport.minimum_supported_calling_convention_version == jax.export.minimum_supported_calling_convention_version
  assert jaxport.maximum_supported_calling_convention_version == jax.export.maximum_supported_calling_convention_version


def test_the_golden_store_the_harness_and_the_report_have_public_faces():
  import jaxport.golden
  import jaxport.harness
  import jaxport.report
  for package in (jaxport.golden, jaxport.harness, jaxport.report):
    public = {n for n in dir(package) if not n.startswith("_")
              and not isinstance(getattr(package, n), types.ModuleType)}
    assert set(package.__all__) == public, package.__name__
    assert all(getattr(package, n).__doc__ for n in package.__all__), package.__name__
  assert {"GoldenStore", "Entry", "Manifest"} <= set(jaxport.golden.__all__)
  assert {"Case", "register_checker", "random_matrix", "default_tolerance"} <= set(
      jaxport.harness.__all__)
