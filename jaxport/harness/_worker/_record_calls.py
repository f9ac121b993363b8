"""Calling a new entry with every reader before it is written.

An entry is immutable: one that a reader cannot read or call fails every later replay.
Recording therefore reads the new blob with each reader (primary first) and, unless the
case is lowering-only, calls it on the stored inputs, under the configuration replay
will use (:func:`calling_jax_config`: the entry's own, with Shardy on). The primary
reader's outputs are the entry's expected outputs; the other readers' calls compile
the same module, which a worker sharing executables compiles once.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxport.errors import RecordingError
from jaxport.harness._worker import _reference as _api
from jaxport.harness._worker._case_runs import run_exported_arrays
from jaxport.harness._worker._error_text import error_text


def call_with_every_reader(case_id: str, blob: bytes, inputs: list[np.ndarray],
                           run: bool) -> list[Any] | None:
  """The primary reader's flat outputs of ``blob`` on ``inputs`` (None without ``run``),
  once every reader has read it and (with ``run``) called it; a reader that cannot is a
  :class:`RecordingError` naming the case, the reader, the stage and its whole error (up
  to the report's bound). Runs under the jax configuration the caller set."""
  primary = None
  for reader in _api.readers():
    stage = "read"
    try:
      exp = _api.deserialize(blob, reader=reader)
      if run:
        stage = "call"
        outs = jax.block_until_ready(run_exported_arrays(exp, inputs))
        if reader == _api.PRIMARY:
          primary = outs
    except Exception as e:  # noqa: BLE001  (any failure of a reader refuses the entry)
      raise RecordingError(
          f"case {case_id}: the {reader} reader cannot {stage} the new entry, so every replay "
          f"of it would fail; nothing was recorded. Readers {stage} an entry with Shardy on "
          "whatever the case's use_shardy (docs/shardings.md). Fix the case (its function, "
          f"shardings or partitioner) until both readers {stage} it. The {reader} reader's "
          f"error:\n{error_text(e)}") from None
  return primary
