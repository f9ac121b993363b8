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
from jaxport.cli._arguments import IMPORT_ARTIFACTS
from jaxport.corpus import _artifacts

STATUSES = ("imported", "exists", "refused")


def run(args: Any, extra: Any = None) -> int:
  """Import the blobs ``args`` name; 1 when any was refused."""
  if args.store is not None:
    store = args.store
  else:
    store = str(_harness_run.read_project(args.project, IMPORT_ARTIFACTS).store)
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

