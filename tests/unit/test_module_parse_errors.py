"""A module bytecode that does not parse gets a message that says why it may not: a newer
StableHLO than this jaxlib reads, or damaged bytes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport._jaxcompat._mlir import current_stablehlo_version
from jaxport.export._mlir import artifact_version, module_from_bytes, scratch_context


def _module() -> bytes:
  exp = jaxport.export(jax.jit(jnp.sin))(np.ones(3, np.float32))
  return bytes(exp.mlir_module_serialized)


def test_an_artifact_declares_the_stablehlo_version_it_was_written_for():
  written = artifact_version(_module())
  assert written is not None and written.count(".") == 2
  current = current_stablehlo_version()
  assert current is not None
  assert tuple(map(int, written.split("."))) <= tuple(map(int, current.split(".")))
  assert artifact_version(b"not bytecode") is None


def test_a_module_written_for_a_newer_stablehlo_is_refused_naming_both_versions():
  module = _module()
  written = artifact_version(module)
  newer = ".".join("9" * len(part) for part in written.split("."))   # same length, newer
  bumped = module.replace(f"StableHLO_v{written}".encode(), f"StableHLO_v{newer}".encode(), 1)
  # This jaxlib parses what it can whatever the declared version; a module that uses what it
  # cannot read fails to parse, here made by cutting the body short.
  bumped = bumped[:len(bumped) // 2]
  with scratch_context(), pytest.raises(jaxport.DeserializationError) as e:
    module_from_bytes(bumped, "sin")
  assert f"written for StableHLO {newer}, newer than the {current_stablehlo_version()}" in str(e.value)
  assert "load it with a newer jax" in str(e.value)


def test_damaged_bytes_are_called_damaged():
  module = _module()
  with scratch_context(), pytest.raises(jaxport.DeserializationError,
                                        match="corrupted or are not a StableHLO portable"):
    module_from_bytes(module[:40] + b"\xff" * 30, "sin")


def test_a_record_whose_module_does_not_parse_is_a_refused_upgrade_not_a_harness_error():
  import dataclasses
  from jaxport.harness._worker import _stopwatch, _upgraded_run
  from jaxport.harness._protocol._answers import ReaderResult, Stage
  from jaxport.harness._judge._findings import reproduced
  exp = jaxport.export(jax.jit(jnp.sin))(np.ones(3, np.float32))
  broken = dataclasses.replace(exp, mlir_module_serialized=_module()[:40] + b"\xff" * 30)
  run = _upgraded_run.upgrade_and_run(broken, [np.ones(3, np.float32)], _stopwatch.Stopwatch())
  assert run.refused is not None and "cannot be parsed" in run.refused
  failed = ReaderResult("jaxport", Stage.RUN, error="DeserializationError: before")
  result, arrays = run.taken(failed)
  assert arrays is None and not reproduced(result) and result.stage is Stage.RUN
  assert result.error == "DeserializationError: before"
  assert "cannot be parsed" in result.upgrade_refused
