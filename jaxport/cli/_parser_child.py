"""The module parser child of a ``jaxport`` command (``jaxport.cli._parser``): it reads requests
as JSON lines on stdin and answers each with one JSON line, doing the native reads in this
process so that a crash or a hang here ends this process, not the command.

Requests (bytes as base64): ``{"op": "signatures", "module": ...}``, ``{"op": "donations",
"module": ...}`` (which arguments of ``main`` are donated), ``{"op": "module_text",
"module": ..., "fun_name": ...}``, ``{"op": "runs_on", "blob": ..., "manifest": JSON or null,
"where": ...}``, ``{"op": "upgrade", "blob": ..., "for_jax": ..., "source": ..., "output":
...}`` and ``{"op": "today", "manifest": JSON, "contract": ..., "where": ...}`` (today's export
of the entry's case, from the imported case modules: ``jaxport.cli._relower.Relowerer.today``).
An answer holds the result, or ``"refused"`` (the class and message of a jaxport error,
raised again by the command) or ``"error"`` (anything else, with its traceback). The first line
written, ``{"ready": true}``, says the child has imported what it needs: jaxport and jax, and
the modules named by ``--import-module`` (a project's case modules, which register the pytree
and effect types its entries need; imported from the ``--import-path`` directories first). A
module that fails to import is named by ``"import_failed"`` in that line.

For tests only: ``JAXPORT_TEST_PARSER_FAULT`` (``KIND:SHA256[,KIND:SHA256...]``) plants a fault
for the request whose module or blob has that sha256 (hex): ``crash`` sends this process
SIGSEGV, ``hang`` sleeps, ``grow`` allocates memory in 64 MiB steps. Nothing but this process
reads it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from jaxport._environment import parser_faults
from jaxport._isolation._process import add_lifeline_option, serve_as_child
from jaxport.cli import _upgrade
from jaxport.cli._parser import IMPORT_FLAG, PATH_FLAG, SOURCE_FLAG, InProcess, decode, encode
from jaxport.cli._relower import FROM_CASES, Relowerer, contract_from_json
from jaxport.errors import JaxportError
from jaxport.golden._manifest import Manifest
from jaxport.releases import MeasuredRun
from jaxport.upgrades import read_any_envelope

_GROW_STEP = 64 << 20
_GROW_MAX = 32 << 30


def _plant(faults: dict[str, str], data: bytes, blob: bool) -> None:
  """Run the fault planted for ``data`` (or for the module of the blob ``data``), if any."""
  digests = {hashlib.sha256(data).hexdigest()}
  if blob:
    try:
      digests.add(hashlib.sha256(bytes(read_any_envelope(data)[0].mlir_module_serialized))
                  .hexdigest())
    except Exception:  # noqa: BLE001 - a blob that does not read plants nothing
      pass
  kind = next((faults[d] for d in digests if d in faults), None)
  if kind == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
  elif kind == "hang":
    time.sleep(3600)
  elif kind == "grow":
    chunks = []
    while len(chunks) * _GROW_STEP < _GROW_MAX:
      chunks.append(b"\x01" * _GROW_STEP)
      time.sleep(0.02)
    time.sleep(3600)


# The case modules this child imported (``--import-module``), which ``today`` lowers.
_CASES: list[Relowerer] = []


def _handle(request: dict[str, Any], faults: dict[str, str]) -> dict[str, Any]:
  reads = InProcess()
  op = request.get("op")
  if op == "today":
    if not _CASES:
      return {"error": "no case module was imported (--import-module)"}
    where = request.get("where", "")
    manifest = Manifest.from_json(request["manifest"], where)
    recorded = request.get("contract")
    recorded = None if recorded is None else contract_from_json(recorded, f"{where}: contract")
    return {"today": _CASES[0].today(manifest, recorded, where).to_json()}
  if op in ("signatures", "module_text", "donations"):
    module = decode(request["module"])
    _plant(faults, module, blob=False)
    if op == "signatures":
      return {"signatures": [s.to_dict() for s in reads.signatures(module, "")]}
    if op == "donations":
      return {"donations": list(reads.donations(module, ""))}
    return {"text": reads.module_text(module, request.get("fun_name"), "")}
  if op in ("runs_on", "upgrade"):
    blob = decode(request["blob"])
    _plant(faults, blob, blob=True)
    if op == "runs_on":
      text = request.get("manifest")
      manifest = None if text is None else Manifest.from_json(text, request.get("where", ""))
      own = request.get("project_targets", [])
      if not isinstance(own, list) or not all(isinstance(t, str) for t in own):
        return {"error": f"project_targets must be a list of target names, got {own!r}"}
      measured = [MeasuredRun.from_json(run, f"measured.{release}", release=release)
                  for release, run in request.get("measured", {}).items()]
      return {"record": reads.runs_on_record(blob, manifest, "", own, measured).to_json()}
    data, done = _upgrade.upgrade_blob(blob, request.get("for_jax"))
    return {"data": encode(data), "report": done.to_json(),
            "text": _upgrade.text(done, Path(request["source"]), Path(request["output"]))}
  return {"error": f"unknown request op {op!r}"}


def _answer(request: dict[str, Any], faults: dict[str, str]) -> dict[str, Any]:
  try:
    return _handle(request, faults)
  except (JaxportError, NotImplementedError) as e:
    return {"refused": {"class": type(e).__name__, "message": str(e)}}
  except Exception as e:  # noqa: BLE001 - reported to the command, which names the artifact
    return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}


def main(argv: list[str] | None = None) -> NoReturn:
  """Serve requests from stdin until it closes, then exit; answers go to the original stdout
  only."""
  parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name if __spec__ else 'child'}")
  add_lifeline_option(parser)
  parser.add_argument(IMPORT_FLAG, dest="modules", action="append", default=[])
  parser.add_argument(PATH_FLAG, dest="paths", action="append", default=[])
  parser.add_argument(SOURCE_FLAG, dest="source", default=FROM_CASES)
  args = parser.parse_args(argv)
  answers = serve_as_child(args.lifeline)
  faults = parser_faults()
  ready: dict[str, Any] = {"ready": True}
  if args.modules:
    cases = Relowerer(tuple(args.modules), tuple(args.paths), args.source)
    try:
      cases.load()
    except JaxportError as e:
      ready["import_failed"] = str(e)
    else:
      _CASES.append(cases)
  answers.write(json.dumps(ready) + "\n")
  for line in sys.stdin:
    if not line.strip():
      continue
    try:
      request = json.loads(line)
    except ValueError as e:
      answer = {"error": f"the request is not JSON: {e}"}
    else:
      answer = _answer(request, faults)
    answers.write(json.dumps(answer) + "\n")
  answers.close()
  sys.stderr.flush()
  # Nothing is left to write: skip the interpreter's teardown (jax's clean-up takes time).
  os._exit(0)


if __name__ == "__main__":
  main()
