"""Replay golden entries with the jax installed in THIS interpreter's environment.

Run by :mod:`jaxport.multirelease._replay`, normally inside an older release's environment:

    python replayer.py --root STORE --entries IDS.txt --out RESULTS.jsonl [--effects NAME=PATH]

It reads entries without jaxport (which needs a newer jax): the manifest as
JSON, every file checked against its sha256, npz files without pickle. Each
entry is deserialized with the release's own ``jax.export.deserialize``,
called on the stored inputs as ``jaxport/harness/_worker/_contract.py`` says, and its outputs
compared with ``jaxport/harness/checkers.py`` (numpy only). Each line holds results only (how
far the entry got, what went wrong there, whether it matched); jaxport's judge
(``jaxport.harness._judge._release_runs``) makes its status. One JSON line per entry is appended and flushed before the next entry
starts, so a native crash loses only the entry that caused it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import time

import numpy as np

# What the release scripts share (the replay contract among it). Run as a script, this
# folder is first on sys.path; imported by the tests, jaxport's package is.
try:
  import release_jax as _release
except ImportError:
  from jaxport_in_release import release_jax as _release


def register_effects(name: str, path: str) -> str | None:
  """Import the module of effect types at ``path`` as ``name`` (jax looks effect types up by
  the qualified name of their class when deserializing); the error's first line if it fails.
  It needs only jax; on a release whose internals differ the entries using it fail to
  deserialize, and that is reported per entry."""
  try:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
  except Exception as e:  # noqa: BLE001
    return _release.first_line(e)
  sys.modules[name] = module
  return None


# The words of jax's refusal to deserialize a pytree node type nobody registered in the process.
_UNREGISTERED_PYTREE = "containing an unregistered type"


class EntryError(Exception):
  """The entry's files do not match its manifest."""


def read_entry(root: str, entry_id: str) -> tuple[dict, dict[str, bytes]]:
  """The manifest and the verified file contents of one entry."""
  path = os.path.join(root, *entry_id.split("/"))
  with open(os.path.join(path, "manifest.json"), "rb") as f:
    manifest = json.loads(f.read().decode("utf-8"))
  files = {}
  for name, sha in sorted(manifest["files"].items()):
    with open(os.path.join(path, name), "rb") as f:
      data = f.read()
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha:
      raise EntryError(f"{entry_id}/{name}: sha256 {actual}, the manifest records {sha}")
    files[name] = data
  return manifest, files


# The most bytes an npz member may declare beyond its array's elements (the .npy
# header), and the widest element: jaxport's golden store bounds members the same
# way (jaxport/_limits.py), which this script, running without jaxport, cannot import.
_NPY_HEADER_BYTES = 64 * 2**10
_WIDEST_ITEM_BYTES = 16


def decode_arrays(data: bytes, specs: list[dict]) -> list[np.ndarray]:
  """Arrays ``arr_0``... of an npz, never unpickling; ml_dtypes types from their uint storage.

  A member whose declared size exceeds what its manifest shape can need is refused
  before it is decompressed, so a small npz cannot inflate into gigabytes.
  """
  import io
  import zipfile
  with zipfile.ZipFile(io.BytesIO(data)) as zf:
    for i, spec in enumerate(specs):
      info = zf.getinfo(f"arr_{i}.npy")
      bound = int(np.prod(spec["shape"], dtype=object)) * _WIDEST_ITEM_BYTES + _NPY_HEADER_BYTES
      if info.file_size > bound:
        raise EntryError(f"member arr_{i}.npy declares {info.file_size} bytes once inflated, "
                         f"more than the {bound} its shape {spec['shape']} can need")
  with np.load(io.BytesIO(data), allow_pickle=False) as npz:
    out = []
    for i, spec in enumerate(specs):
      raw = npz[f"arr_{i}"]
      if raw.dtype.name != spec["dtype"]:
        import ml_dtypes
        raw = raw.view(np.dtype(getattr(ml_dtypes, spec["dtype"])))
      out.append(raw.reshape(spec["shape"]))
    return out


def _initialise_lapack() -> None:
  """Before jax 0.10 a LAPACK artifact replayed first in a process could crash
  unless one native linear-algebra call had registered the kernels."""
  import jax.numpy as jnp
  jnp.linalg.cholesky(jnp.eye(2, dtype=jnp.float32)).block_until_ready()


def replay(root: str, entry_id: str, release, contract, checkers) -> dict:
  start = time.perf_counter()
  result = {"entry_id": entry_id}

  def done(stage: str, error: str | None = None, **more):
    """The result of the entry: how far it got (``stage``), what went wrong there, and
    whatever else was found (results only: jaxport's judge weighs them)."""
    result.update(stage=stage, error=error, seconds=round(time.perf_counter() - start, 3),
                  **more)
    return result

  try:
    manifest, files = read_entry(root, entry_id)
  except Exception as e:  # noqa: BLE001  (a broken entry is a finding, not a crash)
    return done("verify", f"{type(e).__name__}: {e}")
  result["producer"] = manifest["producer"]
  result["imported_from"] = manifest.get("imported_from")
  try:
    exp = release.deserialize(files["exported.bin"])
  except Exception as e:  # noqa: BLE001
    if _UNREGISTERED_PYTREE in str(e):
      # A type its producer registers for serialization; this process knows only jax's own.
      return done("deserialize", not_replayable=_release.first_line(e) + " (the release replayer "
                  "registers no project's pytree types; a consumer that does can load it)")
    return done("deserialize", _release.first_line(e))
  devices = int(getattr(exp, "nr_devices", 1))
  if devices > 1:
    # Placing sharded inputs needs each release's own mesh API; the harness replays these.
    return done("devices", not_replayable=f"exported for {devices} devices; the release "
                "replayer calls single-device entries only")
  if manifest["lowering_only"]:
    return done("deserialize")
  try:
    inputs = decode_arrays(files["inputs.npz"], manifest["arrays"]["inputs"])
    expected = decode_arrays(files["expected.npz"], manifest["arrays"]["expected"])
    actual = contract.run_exported(exp, inputs, call=release.call)
  except Exception as e:  # noqa: BLE001
    return done("run", _release.first_line(e))
  cmp = manifest["comparison"]
  if cmp["mode"] not in checkers.BUILTIN:
    return done("compare", not_compared=f"loaded and ran; outputs not compared: checker "
                f"{cmp['mode']!r} is the project's own, which the release replayer does not have")
  # Each output's path, so that a built-in checker judges the function's outputs and a VJP's
  # by tolerance; all with the entry's one comparison, as before.
  paths = [t["path"] for t in manifest.get("tolerances") or []]
  outputs = [checkers.OutputTolerance(p, cmp["rtol"], cmp["atol"]) for p in paths] or None
  verdict = checkers.BUILTIN.check(cmp["mode"], inputs, expected, actual, rtol=cmp["rtol"],
                                   atol=cmp["atol"], outputs=outputs)
  return done("compare", matched=bool(verdict.ok), exact=bool(verdict.exact),
              problems="; ".join(verdict.problems)[:500] or None)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", required=True)
  parser.add_argument("--entries", required=True, help="file with one entry id per line")
  parser.add_argument("--out", required=True, help="JSON lines file to append results to")
  parser.add_argument("--effects", action="append", default=[], metavar="NAME=PATH",
                      help="a module of effect types to import as NAME first (repeatable)")
  args = parser.parse_args(argv)

  import jax
  jax.config.update("jax_enable_x64", True)
  contract = _release.contract()
  release = contract.ReleaseExport(_release.export_module())
  checkers = _release.checkers()
  for spec in args.effects:
    name, _, path = spec.partition("=")
    error = register_effects(name, path)
    if error:
      print(f"effects {name} not registered: {error}", file=sys.stderr)
  _initialise_lapack()
  _release.replay_each(args.entries, args.out,
                       lambda entry_id: replay(args.root, entry_id, release, contract, checkers))
  return 0


if __name__ == "__main__":
  sys.exit(main())
