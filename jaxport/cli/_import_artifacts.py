"""``jaxport import-artifacts PATH... (--store DIR | --project DIR)``: shipped blobs as entries.

Exit status: 0 when every blob was imported (or was already), 1 when some were refused (the
others are imported), 2 for a usage error. The module of each blob is read in the module
parser child, as ``import-jax-testdata`` reads jax's, so a module that crashes jaxlib refuses
that blob only.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

from jaxport.cli import _harness_run, _parser
from jaxport.corpus import _artifacts
from jaxport._vocabulary import PLATFORMS

COMMAND = "import-artifacts"
STATUSES = ("imported", "exists", "refused")


def _dims(text: str) -> tuple[str, int]:
  import argparse  # local: only a malformed --dims needs its error type
  name, sep, value = text.partition("=")
  if not sep or not name.isidentifier() or not value.isdigit() or int(value) < 1:
    raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=SIZE, a dimension name and a "
                                     "positive size, e.g. b=4")
  return name, int(value)


def add_parser(add: Any) -> None:
  p = add(COMMAND, help="import the jax.export artifacts a project ships as golden entries",
          description="Write one golden entry per blob (NAME.bin, the bytes "
                      "Exported.serialize() wrote), its bytes kept as they are, with the "
                      "inputs and outputs of NAME.inputs.npz and NAME.expected.npz beside it "
                      "(np.savez(f, *leaves)); without them, inputs are made from the input "
                      "avals and outputs computed by the installed jax (docs/downstream.md).")
  p.add_argument("paths", nargs="+", metavar="PATH", help="a blob, or a folder of them (*.bin)")
  p.add_argument("--store", default=None, metavar="DIR", help="the golden store to write")
  p.add_argument("--project", default=None, metavar="DIR",
                 help="write into the jaxport_store of the project at DIR")
  p.add_argument("--family", default=None,
                 help="the family of every entry (default: each blob's folder name)")
  p.add_argument("--dims", type=_dims, action="append", default=[], metavar="NAME=SIZE",
                 help="the size of a symbolic dimension, for blobs without NAME.inputs.npz "
                      "(repeat for each)")
  p.add_argument("--host-platform", choices=PLATFORMS, default="cpu",
                 help="the platform that replays the store (default cpu): a blob exported "
                      "for others becomes a lowering-only entry, checked without running")
  p.add_argument("--rtol", type=float, default=None, help="override the dtype-based rtol")
  p.add_argument("--atol", type=float, default=None, help="override the dtype-based atol")
  p.add_argument("--json", action="store_true", help="print JSON")
  _parser.add_options(p)


def usage_error(args: Any) -> str | None:
  """What is wrong with the options, for the parser's usage error (None: nothing)."""
  if (args.store is None) == (args.project is None):
    return "name the store to write: either --store DIR or --project DIR (not both)"
  return None


def run(args: Any, extra: Any = None) -> int:
  """Import the blobs ``args`` name; 1 when any was refused."""
  if args.store is not None:
    store = args.store
  else:
    store = str(_harness_run.read_project(args.project, COMMAND).store)
  options = _artifacts.Options(family=args.family, dims=dict(args.dims), rtol=args.rtol,
                               atol=args.atol, today=datetime.date.today(),
                               host_platform=args.host_platform)
  with _parser.from_args(args) as parser:
    result = _artifacts.run_import(
        args.paths, store, options, read_signatures=parser.signatures,
        read_text=lambda module, label: parser.module_text(module, None, label))
  if args.json:
    sys.stdout.write(json.dumps({**result, "store": store}, indent=2, sort_keys=True) + "\n")
  else:
    for status in STATUSES:
      for message in result[status]:
        sys.stdout.write(f"{status}: {message}\n")
    others = len(result["others"])
    sys.stdout.write(", ".join(f"{len(result[s])} {s}" for s in STATUSES)
                     + f"; {others} other file{'' if others == 1 else 's'} left alone; "
                       f"store {store}\n")
  return 1 if result["refused"] else 0

