"""``jaxport upgrade IN -o OUT``: revive a serialized artifact for the installed jax.

Two rewrites, each only where needed: an envelope the installed jax refuses as
expired is written again in the layout it reads, and custom calls today's
jaxlib no longer registers are rewritten into their successors. The input is
a blob file or a golden entry directory; the output is a new blob (never the
input, never an existing file unless ``--force``, never a directory, FIFO or
device), written atomically by :func:`jaxport.report._files.write_atomically`.
What was rewritten goes to stdout (JSON with ``--json``); a rule whose
preconditions fail refuses with the target, location and reason.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from jaxport.cli import _artifacts
from jaxport.errors import JaxportError
from jaxport.golden._manifest import MANIFEST_FILE
from jaxport.report._files import check_output, write_atomically
from jaxport.upgrades import EnvelopeRewrite, UpgradeReport, read_any_envelope, upgrade_with_report
from jaxport.upgrades._envelope import vjp_depth


def add_parser(add) -> None:
  p = add("upgrade", help="rewrite expired envelopes and custom calls today's jaxlib no longer "
                          "registers",
          description="Rewrite a serialized Exported (a blob file or a golden entry directory) "
                      "so that the installed jax runs it: an envelope it refuses as expired in "
                      "the layout it reads, legacy custom calls into today's targets; see "
                      "docs/upgrade.md.")
  p.add_argument("source", metavar="IN", help="blob file or golden entry directory")
  p.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the new blob")
  p.add_argument("--force", action="store_true", help="replace OUT if it exists")
  p.add_argument("--json", action="store_true", help="print JSON")


def _read(source: Path) -> bytes:
  if source.is_dir() and (source / MANIFEST_FILE).is_file():
    entry = _artifacts.entry_at(source)
    entry.verify()
    return entry.blob()
  if not source.is_file():
    raise JaxportError(f"{source}: no such blob file or golden entry directory.")
  return source.read_bytes()


@dataclasses.dataclass(frozen=True)
class FileUpgrade:
  """What ``jaxport upgrade`` did to one artifact: the envelope rewrite (None: none) and the
  custom calls rewritten."""
  envelope: EnvelopeRewrite | None
  module: UpgradeReport

  def to_json(self) -> dict[str, Any]:
    return {**self.module.to_json(),
            "envelope": None if self.envelope is None else self.envelope.to_json()}


def _check_new(path: Path, force: bool) -> None:
  """Refuse an OUT that exists without ``--force``, and one that is not a regular file at all."""
  if os.path.lexists(path) and not force:
    raise JaxportError(f"{path} exists; choose another -o or pass --force.")
  check_output(path, JaxportError)


def upgrade_file(source: Path, output: Path, *, force: bool = False) -> FileUpgrade:
  """Upgrade the artifact at ``source`` and write the result to ``output``."""
  if output.resolve() == source.resolve() or output.resolve().is_relative_to(source.resolve()):
    raise JaxportError(f"-o {output} would overwrite the input {source}; "
                       "write the upgraded blob elsewhere.")
  _check_new(output, force)  # before the work, so a bad -o fails fast
  blob = _read(source)
  exp, envelope = read_any_envelope(blob)
  report = upgrade_with_report(exp)
  data = bytes(report.exported.serialize(vjp_order=vjp_depth(report.exported)))
  _check_new(output, force)
  write_atomically(output, data, JaxportError)
  return FileUpgrade(envelope, report)


def text(done: FileUpgrade, source: Path, output: Path) -> str:
  report, env = done.module, done.envelope
  if not report.rewrites and env is None:
    return f"{source}: nothing to upgrade; wrote an unchanged copy to {output}\n"
  lines = [f"{source}: rewrote "
           + " and ".join((["the expired envelope"] if env else [])
                          + ([f"{len(report.rewrites)} custom call(s)"] if report.rewrites else []))
           + f", wrote {output}"]
  if env is not None:
    lines.append(f"  envelope: header version {env.from_version} -> {env.to_version} "
                 f"(layout {env.layout}: {env.reason}); producer "
                 f"{env.producer or 'unknown (the blob names no jax version)'}")
  for r in report.rewrites:
    attrs = ", ".join(f"{k}={v!r}" for k, v in r.attributes)
    lines.append(f"  {r.legacy_target} -> {r.target} (rule {r.rule}) at {r.location}"
                 + (f"; attributes {attrs}" if attrs else "")
                 + (f"; dropped operands {', '.join(r.dropped_operands)}" if r.dropped_operands else ""))
  return "\n".join(lines) + "\n"
