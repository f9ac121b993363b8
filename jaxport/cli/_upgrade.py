"""``jaxport upgrade IN -o OUT``: revive a serialized artifact for the installed jax.

Two rewrites, each only where needed: an envelope the installed jax refuses as
expired is written again in the layout it reads, and custom calls today's
jaxlib no longer registers are rewritten into their successors. The input is
a blob file or a golden entry directory; the output is a new blob (never the
input, never an existing file unless ``--force``, never a directory, FIFO or
device), written atomically by :func:`jaxport.report._files.write_atomically`.
What was rewritten goes to stdout (JSON with ``--json``); a rule whose
preconditions fail refuses with the target, location and reason.

``--for-jax VERSION`` names the consumer instead of the installed jax (the
default): the envelope is written in a layout that release reads, the module
for the StableHLO its jaxlib reads, and what it cannot run is refused
(``jaxport.export._for_jax``), as ``jaxport.export(..., for_jax=...)`` does.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.cli import _artifacts, _parser
from jaxport.errors import JaxportError
from jaxport.golden._manifest import MANIFEST_FILE
from jaxport.report._files import check_output, write_atomically
from jaxport.export import _for_jax
from jaxport.upgrades import EnvelopeRewrite, UpgradeReport, read_any_envelope, upgrade_with_report
from jaxport.upgrades._envelope import consumer, vjp_depth


def _read(source: Path) -> bytes:
  if source.is_dir() and (source / MANIFEST_FILE).is_file():
    entry = _artifacts.entry_at(source)
    entry.verify()
    return entry.blob()
  if not source.is_file():
    raise JaxportError(f"{source}: no such blob file or golden entry directory.")
  return source.read_bytes()


_record = json_record(Strict.raising(JaxportError))


@_record
@dataclasses.dataclass(frozen=True)
class ForJax:
  """The release an upgrade wrote its artifact for, and what writing it for that release
  changed: the StableHLO version it was serialized anew for, the calling convention moved
  (each ``[from, to]``; None: unchanged)."""
  release: str
  stablehlo_version: str
  calling_convention_version: int
  header_version: int
  layout: str
  stablehlo_rewritten: tuple[str, str] | None
  calling_convention_changed: tuple[int, int] | None

  @classmethod
  def of(cls, target: _for_jax.ConsumerTarget, retargeting: _for_jax.Retargeting) -> ForJax:
    return cls(target.release, target.stablehlo_version, target.calling_convention_version,
               target.header_version, target.layout, retargeting.stablehlo,
               retargeting.calling_convention)


# The upgrade's JSON: the module's rewrites (its function's name, the rules applied and each
# rewrite), the envelope's rewrite and the release it was written for.
@json_record(Strict.raising(JaxportError), also=("fun_name", "rules_applied", "rewrites",
                                                 "for_jax"))
@dataclasses.dataclass(frozen=True)
class FileUpgrade:
  """What ``jaxport upgrade`` did to one artifact: the envelope rewrite (None: none) and the
  custom calls rewritten."""
  envelope: EnvelopeRewrite | None
  module: UpgradeReport = key(skip=True)
  retargeting: _for_jax.Retargeting | None = key(skip=True, default=None)
  target: _for_jax.ConsumerTarget | None = key(skip=True, default=None)

  @property
  def fun_name(self) -> str:
    return self.module.fun_name

  @property
  def rules_applied(self) -> tuple[str, ...]:
    return self.module.rules_applied

  @property
  def rewrites(self) -> tuple[Any, ...]:
    return self.module.rewrites

  @property
  def for_jax(self) -> ForJax | None:
    """None: written for the installed jax."""
    if self.target is None or self.retargeting is None:
      return None
    return ForJax.of(self.target, self.retargeting)


def _check_new(path: Path, force: bool) -> None:
  """Refuse an OUT that exists without ``--force``, and one that is not a regular file at all."""
  if os.path.lexists(path) and not force:
    raise JaxportError(f"{path} exists; choose another -o or pass --force.")
  check_output(path, JaxportError)


def upgrade_blob(blob: bytes, for_jax: str | None = None) -> tuple[bytes, FileUpgrade]:
  """The upgraded blob for ``for_jax`` (None: the installed jax) and what was done: every
  native read of the module happens here, in the module parser child of the command."""
  target = consumer(for_jax)
  exp, envelope = read_any_envelope(blob, for_jax)
  report = upgrade_with_report(exp)
  new, retargeting = _for_jax.retarget(report.exported, target)
  data = bytes(new.serialize(vjp_order=vjp_depth(new)))
  return data, FileUpgrade(envelope, report, retargeting, None if for_jax is None else target)


@dataclasses.dataclass(frozen=True)
class Upgraded:
  """What ``jaxport upgrade`` reports of one artifact: its JSON and its text."""
  report: dict[str, Any]
  text: str


def upgrade_file(source: Path, output: Path, *, force: bool = False,
                 for_jax: str | None = None, parser: Any = None) -> Upgraded:
  """Upgrade the artifact at ``source`` for ``for_jax`` (None: the installed jax) and write
  the result to ``output``; ``parser`` does the native reads (default: a module parser child,
  ``jaxport.cli._parser``)."""
  if output.resolve() == source.resolve() or output.resolve().is_relative_to(source.resolve()):
    raise JaxportError(f"-o {output} would overwrite the input {source}; "
                       "write the upgraded blob elsewhere.")
  _check_new(output, force)  # before the work, so a bad -o fails fast
  consumer(for_jax)  # an unknown release fails before anything is read
  blob = _read(source)
  own = parser is None
  parser = _parser.ModuleParser() if own else parser
  try:
    data, report, said = parser.upgrade(blob, for_jax, source, output, str(source))
  finally:
    if own:
      parser.close()
  _check_new(output, force)
  write_atomically(output, data, JaxportError)
  return Upgraded(report, said)


def text(done: FileUpgrade, source: Path, output: Path) -> str:
  report, env, moved = done.module, done.envelope, done.retargeting
  retargeted = moved is not None and moved.changed
  if not report.rewrites and env is None and not retargeted:
    return f"{source}: nothing to upgrade; wrote an unchanged copy to {output}\n"
  lines = [f"{source}: rewrote "
           + " and ".join((["the envelope" if done.target else "the expired envelope"] if env else [])
                          + ([f"{len(report.rewrites)} custom call(s)"] if report.rewrites else [])
                          + ([f"the module for jax {moved.release}"] if retargeted else []))
           + f", wrote {output}"]
  if done.target is not None:
    t = done.target
    lines.append(f"  for jax {t.release}: StableHLO {t.stablehlo_version}, calling convention "
                 f"{t.calling_convention_version}, envelope layout {t.layout} (header version "
                 f"{t.header_version})")
  if retargeted and moved.stablehlo is not None:
    lines.append(f"  module: StableHLO {moved.stablehlo[0]} -> {moved.stablehlo[1]}")
  if retargeted and moved.calling_convention is not None:
    lines.append(f"  calling convention: {moved.calling_convention[0]} -> "
                 f"{moved.calling_convention[1]}")
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
