"""One artifact read once, for ``audit`` and ``inspect``: its envelope decoded once, its module
parsed once (by the command's module parser), and what the running jax makes of it as it is.

Everything the two commands show of a blob comes from this one reading: the envelope's
layout and header version, the jax that wrote it, the Exported record, the module's custom
calls and the features the release table's prediction needs. Whether the running jax reads
the bytes as they are is told apart from whether jaxport can read them: an envelope the
running jax refuses as expired is still described (read with every legacy layout accepted),
and ``jaxport upgrade``'s rewrite is tried once to say whether it makes the blob load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import ExpiredEnvelopeError, JaxportError
from jaxport.golden._manifest import CustomCallSignature
from jaxport.releases import MeasuredRun
from jaxport.releases import _features
from jaxport.serde import _read, _verify
from jaxport.upgrades import rewrite_envelope
from jaxport.upgrades._envelope import EnvelopeRewrite, layout_of_fields

# What a loading's ``reads_as_is`` says.
READS = "yes"
AFTER_UPGRADE = "after_upgrade"
REFUSED = "no"


@json_record(Strict.raising(JaxportError), also=("reads_as_is",))
@dataclasses.dataclass(frozen=True)
class Loading:
  """Whether the running jax reads an artifact's bytes as they are: ``refusal`` None when it
  does; else its refusal, and ``rewrite`` (what ``jaxport upgrade`` rewrote, after which the
  blob loads) or ``upgrade_error`` (why that rewrite does not make it load)."""
  refusal: str | None = None
  rewrite: EnvelopeRewrite | None = key(name="upgrade_rewrite", default=None)
  upgrade_error: str | None = None

  @property
  def reads_as_is(self) -> str:
    if self.refusal is None:
      return READS
    return AFTER_UPGRADE if self.rewrite is not None else REFUSED

  def text(self) -> str:
    """One line: yes; no, with the reason; or only after ``jaxport upgrade``."""
    if self.refusal is None:
      return "yes"
    if self.rewrite is not None:
      return (f"only after `jaxport upgrade BLOB -o NEW.bin` (envelope header version "
              f"{self.rewrite.from_version} to {self.rewrite.to_version}): {self.refusal}")
    return f"no: {self.refusal}; `jaxport upgrade` does not make it load: {self.upgrade_error}"


@dataclasses.dataclass(frozen=True)
class ArtifactRead:
  """What one reading of a blob found: ``exported`` (as the running jax reads it, or as it
  reads ``jaxport upgrade``'s rewrite; as written where neither reads), the envelope's
  ``fields`` and ``layout``, ``loading`` and the module's ``signatures``."""
  exported: Any
  fields: list[Any]
  layout: str
  loading: Loading
  signatures: tuple[CustomCallSignature, ...]

  @property
  def header_version(self) -> int:
    return self.fields[_read._X.serialization_version] or 0

  @property
  def producer(self) -> str | None:
    """The jax that wrote the blob, where its envelope names it."""
    return self.fields[_read._X.jax_version] or None

  def envelope_json(self) -> dict[str, Any]:
    """The versions audit and inspect show: layout, header, calling convention, writer."""
    return {"envelope_layout": self.layout, "serialization_version": self.header_version,
            "calling_convention_version": self.exported.calling_convention_version,
            "writing_jax": self.producer, **self.loading.to_json()}

  def runs_on(self, manifest: Any, reader: Any, label: str, project_targets: Iterable[str] = (),
              measured: Sequence[MeasuredRun] = ()) -> _features.RunsOnRecord:
    """The releases it runs on, from this reading (no decode or parse of the main module
    again; the modules of nested VJPs are parsed by ``reader``)."""
    try:
      features = _features.features_of_read(
          self.fields, self.layout, self.exported, manifest,
          signatures=lambda m: reader.signatures(m, label), main=self.signatures)
    except JaxportError as e:
      return _features.RunsOnRecord(None, error=f"{type(e).__name__}: {e}")
    return _features.runs_on_of(features, manifest, project_targets, measured)


def loading_text(record: Any) -> str:
  """:meth:`Loading.text` of the JSON :meth:`Loading.to_json` wrote (within ``record``)."""
  rewrite = record["upgrade_rewrite"]
  return Loading(record["refusal"],
                 None if rewrite is None else EnvelopeRewrite(**rewrite),
                 record["upgrade_error"]).text()


def read_artifact(blob: bytes, reader: Any, label: str) -> ArtifactRead:
  """``blob`` read once: the envelope decoded, the record read, the module's custom calls read
  by ``reader`` (the command's module parser). An unreadable envelope raises
  ``DeserializationError``; a module the parser cannot read, its error."""
  fields = _verify.decode(bytes(blob))
  layout = layout_of_fields(fields)
  try:
    exp = _read.deserialize_fields(fields)
    loading = Loading()
  except ExpiredEnvelopeError as e:
    exp, loading = _upgraded(blob, fields, _first_line(e))
  sigs = tuple(reader.signatures(bytes(exp.mlir_module_serialized), label))
  return ArtifactRead(exp, fields, layout, loading, sigs)


def _upgraded(blob: bytes, fields: list[Any], refusal: str) -> tuple[Any, Loading]:
  """The record of a blob the running jax refuses as it is, as it reads the rewrite
  ``jaxport upgrade`` makes (read back, the proof that it loads); the record as written
  where the rewrite fails."""
  try:
    new, rewrite = rewrite_envelope(blob)
    exp = _read.deserialize(new)
  except JaxportError as e:
    return (_read.deserialize_fields(fields, read_expired=True),
            Loading(refusal, upgrade_error=_first_line(e)))
  if rewrite is None:
    return (_read.deserialize_fields(fields, read_expired=True),
            Loading(refusal, upgrade_error="it finds nothing to rewrite"))
  return exp, Loading(refusal, rewrite)


def _first_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0] if lines else ''}"
