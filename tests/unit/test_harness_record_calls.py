"""Recording reads and calls each new entry with every reader, and refuses to write one a
reader cannot read or call, naming the reader and its whole error."""

import datetime

import numpy as np
import pytest

from jaxport import _limits
from jaxport.errors import RecordingError
from jaxport.harness import Case
from jaxport.harness._worker import _record_calls, _recording
from jaxport.harness._worker import _reference as _api

DAY = datetime.date(2026, 11, 29)
VERIFIER = ("Cannot lower jaxpr with verifier errors:\n"
            "\t'stablehlo.custom_call' op should have a sharding attribute\n"
            "\tsee current operation: %0 = stablehlo.custom_call @Sharding(%arg0)")


def _case(**kw) -> Case:
  return Case("double", "f", lambda x: 2 * x,
              lambda: ((np.arange(4, dtype=np.float32),), {}), **kw)


def _readers_seen(monkeypatch, fail: dict[str, str] | None = None) -> list[tuple[str, str]]:
  """The (reader, stage) pairs recording goes through; ``fail``: reader -> the stage at which
  a stand-in of it raises jax's verifier error."""
  seen: list[tuple[str, str]] = []
  real_read, real_run = _api.deserialize, _record_calls.run_exported_arrays
  by_exp: dict[int, str] = {}

  def read(blob, *, reader=_api.PRIMARY):
    seen.append((reader, "read"))
    if (fail or {}).get(reader) == "read":
      raise ValueError(VERIFIER)
    exp = real_read(blob, reader=reader)
    by_exp[id(exp)] = reader
    return exp

  def run(exp, inputs):
    reader = by_exp[id(exp)]
    seen.append((reader, "call"))
    if (fail or {}).get(reader) == "call":
      raise ValueError(VERIFIER)
    return real_run(exp, inputs)

  monkeypatch.setattr(_api, "deserialize", read)
  monkeypatch.setattr(_record_calls, "run_exported_arrays", run)
  return seen


def test_every_reader_reads_and_calls_the_new_entry(monkeypatch):
  seen = _readers_seen(monkeypatch)
  rec = _recording.record_case(_case(), DAY)
  assert seen == [(r, s) for r in _api.readers() for s in ("read", "call")]
  np.testing.assert_array_equal(rec.expected[0], 2 * np.arange(4, dtype=np.float32))


def test_a_lowering_only_entry_is_read_by_every_reader(monkeypatch):
  seen = _readers_seen(monkeypatch)
  rec = _recording.record_case(_case(lowering_only=True, platforms=("tpu",)), DAY)
  assert seen == [(r, "read") for r in _api.readers()] and rec.expected is None


@pytest.mark.parametrize("stage", ["read", "call"])
def test_an_entry_a_reader_cannot_use_is_refused_naming_it_and_its_whole_error(monkeypatch,
                                                                             stage):
  _readers_seen(monkeypatch, fail={_api.REFERENCE: stage})
  with pytest.raises(RecordingError) as e:
    _recording.record_case(_case(), DAY)
  text = str(e.value)
  assert f"case double: the {_api.REFERENCE} reader cannot {stage} the new entry" in text
  assert "nothing was recorded" in text
  assert f"ValueError: {VERIFIER}" in text


def test_a_readers_error_past_the_bound_is_cut_with_a_marker(reference_reader_raising):
  n = 3 * _limits.MAX_ERROR_LINES
  reference_reader_raising("verifier errors:\n" + "\n".join(f"\terror {i}" for i in range(n)))
  with pytest.raises(RecordingError) as e:
    _recording.record_case(_case(), DAY)
  text = str(e.value)
  assert "\terror 0\n" in text and f"\terror {n - 1}" not in text
  assert "[... cut: " in text and "MAX_ERROR_LINES" in text
