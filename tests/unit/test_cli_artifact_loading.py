"""What ``audit`` and ``inspect`` say of whether the running jax reads an artifact as it is
(``jaxport.cli._artifact_read``): yes; only after ``jaxport upgrade``, naming the header
versions; or no, with why the upgrade does not help. A nested module the parser cannot read
makes the runs-on record say so rather than fail the artifact."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxport
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.cli import _artifact_read
from jaxport.cli._parser import InProcess
from jaxport.errors import ModuleCrashError
from jaxport.serde import _verify
from jaxport.upgrades._envelope import EnvelopeRewrite

# A blob jax 0.8.0 wrote, in the envelope jax 0.11.1 and newer refuse as expired.
OLD_BLOB = (Path(__file__).resolve().parents[2] / "compat_data/cpu/lapack_trsm/"
            "release_triangular_solve_f32/2026-11-29_jax-0.8.0/exported.bin")
REWRITE = EnvelopeRewrite("expired", "short-device-count", 3, 12, "0.8.0")


@pytest.fixture(scope="module")
def blob_with_vjp() -> bytes:
  exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
  return bytes(exp.serialize(vjp_order=1))


@pytest.mark.parametrize("loading,reads,text", [
    (_artifact_read.Loading(), "yes", "yes"),
    (_artifact_read.Loading("expired envelope", REWRITE), "after_upgrade",
     "only after `jaxport upgrade BLOB -o NEW.bin` (envelope header version 3 to 12): "
     "expired envelope"),
    (_artifact_read.Loading("expired envelope", upgrade_error="ExportError: too new"), "no",
     "no: expired envelope; `jaxport upgrade` does not make it load: ExportError: too new"),
])
def test_each_loading_says_whether_and_how_the_running_jax_reads_it(loading, reads, text):
  assert loading.reads_as_is == reads
  assert loading.text() == text
  record = loading.to_json()
  assert record["reads_as_is"] == reads
  assert _artifact_read.loading_text(record) == text


def test_a_blob_the_rewrite_cannot_read_is_described_as_written(blob_with_vjp):
  fields = _verify.decode(blob_with_vjp)
  exp, loading = _artifact_read._upgraded(b"\x00" * 16, fields, "refused")
  assert exp.fun_name == "sin"
  assert loading.reads_as_is == "no"
  assert loading.upgrade_error.startswith("DeserializationError: Not a valid serialized Exported")
  assert "\n" not in loading.upgrade_error


def test_a_blob_the_rewrite_leaves_alone_is_said_to_need_no_rewrite(blob_with_vjp):
  fields = _verify.decode(blob_with_vjp)
  exp, loading = _artifact_read._upgraded(blob_with_vjp, fields, "refused")
  assert exp.fun_name == "sin"
  assert loading == _artifact_read.Loading("refused", upgrade_error="it finds nothing to rewrite")


def test_an_expired_blob_reads_after_the_rewrite_where_the_running_jax_refuses_it():
  blob = OLD_BLOB.read_bytes()
  exp, loading = _artifact_read._upgraded(blob, _verify.decode(blob), "refused")
  assert exp.platforms == ("cpu",)
  # Where the running jax reads the old envelope, the rewrite has nothing to change.
  assert (loading.rewrite is not None) == jax_envelope.REFUSES_EXPIRED
  assert loading.refusal == "refused"


class _CrashingReader:
  def signatures(self, module: bytes, label: str):
    raise ModuleCrashError(f"{label}: reading its module crashed the module parser process")


def test_a_nested_module_the_parser_cannot_read_is_said_in_the_runs_on_record(blob_with_vjp):
  read = _artifact_read.read_artifact(blob_with_vjp, InProcess(), "m.bin")
  assert read.loading.reads_as_is == "yes"
  assert read.runs_on(None, InProcess(), "m.bin").error is None
  record = read.runs_on(None, _CrashingReader(), "m.bin")
  assert record.runs_on is None
  assert record.error == ("ModuleCrashError: m.bin: reading its module crashed the module "
                          "parser process")
