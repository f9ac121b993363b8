"""Call golden entries with TensorFlow's ``XlaCallModule`` op, the way TF Serving runs a jax
artifact (jax2tf, orbax-export and Keras' export all wrap the artifact in it).

Run by :mod:`jaxport.multirelease._tf_replay` inside a TensorFlow release environment:

    python tf_reader.py --root STORE --entries IDS.txt --out RESULTS.jsonl

It runs without jax and without jaxport: each entry's files are read and verified as the
release replayer reads them, the envelope with :mod:`tf_envelope`, and the outputs compared
with ``jaxport/harness/checkers.py`` (numpy only). Each line holds results only: how far the
entry got, TensorFlow's error text there, the artifact's calling convention, StableHLO version
and platforms, and whether the outputs matched; jaxport's judge
(``jaxport.harness._judge._tf_runs``) names the reason TensorFlow refused an entry. One JSON line
per entry is appended and flushed before the next entry starts, so a native crash loses only
the entry that caused it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import sys
import tempfile
import time

import numpy as np

try:
  import release_jax as _release
  import replayer as _replayer
  import tf_envelope as _envelope
except ImportError:
  from jaxport_in_release import release_jax as _release
  from jaxport_in_release import replayer as _replayer
  from jaxport_in_release import tf_envelope as _envelope

# How much of TensorFlow's error text a row keeps: enough for the unknown op and the StableHLO
# versions, which come on the error's later lines.
ERROR_CHARS = 4000


def call_kwargs(env: _envelope.Envelope, parameters) -> dict:
  """``XlaCallModule``'s attributes for ``env``, as jax2tf sets them; ``use_shardy_partitioner``
  only where the op of this TensorFlow release has it."""
  import tensorflow as tf
  kw = dict(version=env.calling_convention, module=env.module,
            Sout=[a.static_shape for a in env.out_avals],
            Tout=[tf.as_dtype(a.dtype) for a in env.out_avals],
            platforms=[p.upper() for p in env.platforms],
            disabled_checks=list(env.disabled_checks), function_list=[], dim_args_spec=[],
            has_token_input_output=False)
  if "use_shardy_partitioner" in parameters:
    kw["use_shardy_partitioner"] = env.uses_shardy
  return kw


def _inexact(dtype: str | None) -> bool:
  return dtype is not None and dtype.startswith(("float", "bfloat", "complex"))


def not_replayable(env: _envelope.Envelope) -> str | None:
  """Why the reader cannot call ``env`` as TF Serving would, None when it can."""
  if env.nr_devices > 1:
    return f"exported for {env.nr_devices} devices; the tf reader calls single-device entries"
  if env.ordered_effects:
    return "has ordered effects, which XlaCallModule threads through tokens the reader lacks"
  if any(a.dtype is None for a in (*env.in_avals, *env.out_avals)):
    return "takes or returns a PRNG key, a token or float0, which XlaCallModule cannot pass"
  if env.vjp is not None and not all(_inexact(a.dtype) for a in (*env.in_avals, *env.out_avals)):
    return ("carries a VJP over integer or boolean values, whose float0 cotangents "
            "XlaCallModule cannot pass")
  if env.vjp is not None:
    return not_replayable(env.vjp)
  return None


def call(env: _envelope.Envelope, leaves: list, op, parameters, diagnostics: list[str]) -> list:
  """``env``'s module called on the flat ``leaves`` (its kept ones passed); the outputs as numpy
  arrays, then the VJP's on ones as the cotangents, as the replay contract says
  (``jaxport/harness/_worker/_contract.py``)."""
  with captured_stderr(diagnostics):
    outs = [np.asarray(o) for o in op([leaves[i] for i in env.kept_var_idx],
                                      **call_kwargs(env, parameters))]
  if env.vjp is None:
    return outs
  cotangents = [np.ones(o.shape, o.dtype) for o in outs]
  return outs + call(env.vjp, [*leaves, *cotangents], op, parameters, diagnostics)


def replay(root: str, entry_id: str, checkers, op, parameters) -> dict:
  """One entry's row: read, verified, called and compared (results only)."""
  start = time.perf_counter()
  result: dict = {"entry_id": entry_id}

  def done(stage: str, error: str | None = None, **more):
    result.update(stage=stage, error=error, seconds=round(time.perf_counter() - start, 3), **more)
    return result

  try:
    manifest, files = _replayer.read_entry(root, entry_id)
  except Exception as e:  # noqa: BLE001  (a broken entry is a finding, not a crash)
    return done("verify", f"{type(e).__name__}: {e}")
  result["producer"] = manifest["producer"]
  result["blob_sha256"] = hashlib.sha256(files["exported.bin"]).hexdigest()
  try:
    env = _envelope.read(files["exported.bin"])
  except _envelope.EnvelopeError as e:
    return done("read", str(e))
  result.update(calling_convention=env.calling_convention,
                stablehlo=env.stablehlo_version, platforms=list(env.platforms))
  why = not_replayable(env)
  if why is not None:
    return done("read", not_replayable=why)
  try:
    inputs = _replayer.decode_arrays(files["inputs.npz"], manifest["arrays"]["inputs"])
  except Exception as e:  # noqa: BLE001
    return done("call", _text(e))
  if manifest["lowering_only"]:
    if any(not isinstance(d, int) for a in env.in_avals for d in a.shape):
      return done("read", not_replayable="a lowering-only entry with symbolic shapes: no inputs "
                  "recorded, and none made up would meet its constraints")
    inputs = [np.zeros(a.shape, a.dtype) for a in env.in_avals]
  diagnostics: list[str] = []
  try:
    actual = call(env, inputs, op, parameters, diagnostics)
  except Exception as e:  # noqa: BLE001  (TensorFlow's refusal is the finding)
    return done("call", _text(e, diagnostics))
  if manifest["lowering_only"]:
    return done("call", not_compared="a lowering-only entry: called on zeros, nothing recorded "
                "to compare")
  expected = _replayer.decode_arrays(files["expected.npz"], manifest["arrays"]["expected"])
  cmp = manifest["comparison"]
  if cmp["mode"] not in checkers.BUILTIN:
    return done("compare", not_compared=f"checker {cmp['mode']!r} is the project's own, which "
                "the tf reader does not have")
  paths = [t["path"] for t in manifest.get("tolerances") or []]
  outputs = [checkers.OutputTolerance(p, cmp["rtol"], cmp["atol"]) for p in paths] or None
  verdict = checkers.BUILTIN.check(cmp["mode"], inputs, expected, actual, rtol=cmp["rtol"],
                                   atol=cmp["atol"], outputs=outputs)
  return done("compare", matched=bool(verdict.ok),
              problems="; ".join(verdict.problems)[:500] or None)


@contextlib.contextmanager
def captured_stderr(lines: list[str]):
  """Collect what native code writes to the process's stderr meanwhile into ``lines``: some
  TensorFlow releases print MLIR's diagnostics (the unknown op, the StableHLO version they
  read) there and raise only "Cannot deserialize computation"."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile(mode="w+b") as tmp:
    os.dup2(tmp.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      tmp.seek(0)
      lines += [line for line in tmp.read().decode("utf-8", "replace").splitlines()
                if " error: " in f" {line}" or "note:" in line]


def _text(e: BaseException, diagnostics: list[str] = ()) -> str:
  """TensorFlow's error: its message (which spans lines) and the diagnostics it printed, cut
  to :data:`ERROR_CHARS`."""
  message = getattr(e, "message", None) or str(e)
  text = f"{type(e).__name__}: {message.strip()}"
  if diagnostics:
    text += "\n" + "\n".join(diagnostics)
  return text[:ERROR_CHARS]


def about() -> dict:
  """The TensorFlow release at hand: its version, the StableHLO version it reads and the
  newest calling convention its XlaCallModule takes, each from TensorFlow's own API."""
  import tensorflow as tf
  from tensorflow.compiler.mlir.stablehlo import stablehlo
  from tensorflow.compiler.tf2xla.python import xla
  newest = getattr(xla, "call_module_maximum_supported_version", None)
  return {"tf": tf.__version__, "stablehlo": stablehlo.get_current_version(),
          "max_calling_convention": newest() if newest else None}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", required=True)
  parser.add_argument("--entries", required=True, help="file with one entry id per line")
  parser.add_argument("--out", required=True, help="JSON lines file to append results to")
  parser.add_argument("--about", default=None,
                      help="JSON file to write the TensorFlow release's own facts to first")
  args = parser.parse_args(argv)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  if args.about:
    with open(args.about, "w") as f:
      json.dump(about(), f)
  from tensorflow.compiler.tf2xla.ops import gen_xla_ops
  op = gen_xla_ops.xla_call_module
  parameters = inspect.signature(op).parameters
  checkers = _release.checkers()
  _release.replay_each(args.entries, args.out,
                       lambda entry_id: replay(args.root, entry_id, checkers, op, parameters))
  return 0


if __name__ == "__main__":
  sys.exit(main())
