"""An artifact's features come from its envelope decoded once: the layout, header, producer
and device-count fields are read from that one decoded table, and agree with the readers that
take each from the blob alone."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from jaxport.golden import EntryId, GoldenStore
from jaxport.releases._features import features_of_blob
from jaxport.serde import _read, _verify
from jaxport.upgrades import envelope_layout, read_any_envelope

STORE = GoldenStore(Path(__file__).resolve().parents[2] / "compat_data")
ENTRIES = ["cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2",
           "cpu/feature_shape_poly/release_poly_gram_f32/2026-11-30_jax-0.4.26"]


@pytest.mark.parametrize("entry_id", ENTRIES)
def test_the_features_decode_the_envelope_once_and_agree_with_the_blob_readers(entry_id):
  entry = STORE.entry(EntryId.parse(entry_id))
  blob = entry.blob()
  with mock.patch.object(_verify, "decode", wraps=_verify.decode) as decode:
    read_any_envelope(blob, layout=envelope_layout(blob))
    reading = decode.call_count - 1
    decode.reset_mock()
    features = features_of_blob(blob, entry.manifest)
  # Once for the features, beside what reading the record itself takes.
  assert decode.call_count == reading + 1, (decode.call_count, reading)
  assert features.envelope_layout == envelope_layout(blob)
  assert features.serialization_version == _read.read_serialization_version(blob)
  assert features.producer == (_read.read_jax_version(blob) or entry.manifest.producer.jax)
