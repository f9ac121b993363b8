"""Property tests: arrays and manifests survive the golden store bit for bit."""

import datetime
import json

import ml_dtypes
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
import pytest

from jaxport.errors import GoldenDataError

from jaxport.golden import _npz
from jaxport._platforms import PLATFORMS
from jaxport.golden._manifest import (
    Comparison, CustomCallSignature, ImportSource, Manifest, Producer)

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]
EXTENDED = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4]


@st.composite
def arrays(draw):
  shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
  if draw(st.booleans()):
    dt = np.dtype(draw(st.sampled_from(EXTENDED)))
    bits = draw(hnp.arrays(np.dtype(f"u{dt.itemsize}"), shape))
    if dt == np.dtype(ml_dtypes.int4):
      bits = bits & 0x0F
    return bits.view(dt)
  dt = np.dtype(draw(st.sampled_from(DTYPES)))
  if dt.kind in "biu":
    return draw(hnp.arrays(dt, shape))
  # Floats from raw bytes, so NaN payloads, -0.0 and subnormals are all exercised.
  raw = draw(hnp.arrays(np.uint8, shape + (dt.itemsize,)))
  return np.ascontiguousarray(raw).view(dt).reshape(shape)

@settings(max_examples=60, deadline=None)
@given(st.lists(arrays(), max_size=4))
def test_arrays_round_trip_bit_exactly(arrs):
  data, specs = _npz.encode_arrays(arrs, "p")
  back = _npz.decode_arrays(data, specs, "p")
  assert len(back) == len(arrs)
  for a, b in zip(arrs, back):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()
  assert _npz.encode_arrays(back, "p")[0] == data


names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,20}", fullmatch=True).filter(lambda s: ".." not in s)
text = st.text(max_size=30)
finite = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def manifests(draw):
  sigs = draw(st.lists(st.builds(
      CustomCallSignature, target=text.filter(bool), operand_types=st.lists(text, max_size=3),
      result_types=st.lists(text, max_size=3),
      attributes=st.dictionaries(text, text, max_size=3)), max_size=3))
  return Manifest(
      case_id=draw(names), family=draw(names), platform=draw(st.sampled_from(PLATFORMS)),
      record_date=draw(st.dates(min_value=datetime.date(2000, 1, 1))),
      producer=Producer(*(draw(st.one_of(st.none(), names)) for _ in range(6))),
      calling_convention_version=draw(st.integers(0, 2**16)),
      serialization_version=draw(st.integers(0, 2**16)), custom_call_targets=sigs,
      polymorphic_shapes=draw(st.one_of(st.none(), st.lists(st.one_of(st.none(), text), max_size=3))),
      constraints=draw(st.one_of(st.none(), st.lists(text, max_size=3))),
      lowering_only=draw(st.booleans()),
      comparison=Comparison(draw(text.filter(bool)), draw(finite), draw(finite)),
      imported_from=draw(st.one_of(st.none(), st.builds(
          ImportSource, source=text.filter(bool),
          details=st.dictionaries(text, st.one_of(st.none(), st.integers(), text), max_size=3)))))


@settings(max_examples=60, deadline=None)
@given(manifests())
def test_manifest_json_round_trips_and_detects_any_edit(m):
  text_ = m.to_json()
  assert Manifest.from_json(text_, "m") == m
  assert Manifest.from_json(text_.encode("utf-8"), "m").to_json() == text_
  d = json.loads(text_)
  d["comparison"]["rtol"] = d["comparison"]["rtol"] + 1
  with pytest.raises(GoldenDataError, match="m: digest mismatch"):
    Manifest.from_json(json.dumps(d), "m")
