"""How the Mosaic payloads of Pallas TPU kernels moved between jax releases, read from the store.

    python tools/pallas_payloads.py [--store compat_data] [--family lowering_tpu_kernels]
                                    [--json]

For each case of the store whose entries call ``tpu_custom_call`` and were recorded by more
than one jax release, and for each pair of consecutive releases (the newest entry of each),
prints whether each kernel's payload (the call's ``backend_config``) changed and how: the
size of its module (bytecode as stored, and text without source locations), the operations
whose counts differ, and the other fields of the call's configuration that differ. Payloads
are compared without source locations: jax's kernels live in each environment's
site-packages, so the files they name differ from machine to machine. Markdown by default
(the table of docs/harness.md, "Pallas payloads across releases"); ``--json`` for the rows.

A payload written by a newer jaxlib than the one running may not read: its row says so. Run
the command with the newest jax of the store.
"""

from __future__ import annotations

import argparse
import base64
import collections
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from jaxport.errors import JaxportError
from jaxport.golden import GoldenStore

TARGET = "tpu_custom_call"
# An operation's name at the start of a line of MLIR text: ``%0 = arith.addf``,
# ``tpu.sem_signal``, ``"tpu.wait_dma2"(...)`` (generic form), ``func.func @k``.
_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([A-Za-z_][\w$]*\.[\w$.]+)"?[\s(<{@]', re.MULTILINE)
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")
_VERSION = re.compile(r"stable_mosaic\.version = (\d+)")
# The prefix of the operation names of a serialized Mosaic module (``stable_mosaic.arith.addf``).
_SERIALIZED = "stable_mosaic."
# The most operations a row names; the rest are counted.
_MOST = 8


class PayloadTableError(JaxportError):
  """A tpu_custom_call whose backend_config is not a Mosaic payload this command can read."""


@dataclasses.dataclass(frozen=True)
class Payload:
  """One kernel's Mosaic payload: its name, its module (bytecode size, text without locations,
  or why the text cannot be read) and the rest of its call configuration."""

  kernel: str
  bytecode_size: int
  text: str | None
  unreadable: str | None
  config: dict[str, Any]

  def ops(self) -> collections.Counter:
    return collections.Counter(_op_names(self.text or ""))

  def version(self) -> str | None:
    found = _VERSION.search(self.text or "")
    return found.group(1) if found else None


def _op_names(text: str) -> list[str]:
  return [name.removeprefix(_SERIALIZED) for name in _OP.findall(text)]


def _listed(items: Sequence[str]) -> str:
  more = len(items) - _MOST
  return ", ".join(items[:_MOST]) + (f" and {more} more" if more > 0 else "")


@dataclasses.dataclass(frozen=True)
class Change:
  """How one kernel's payload differs between two releases (``changed`` False: it does not)."""

  kernel: str
  changed: bool
  sizes: tuple[int, int]
  text_sizes: tuple[int, int] | None
  ops: tuple[str, ...]
  config: tuple[str, ...]
  version: tuple[str | None, str | None] = (None, None)
  lines: tuple[int, tuple[str, ...]] = (0, ())
  note: str = ""

  def how(self) -> str:
    """One line saying how the payload changed."""
    if not self.changed:
      return "same"
    parts = [f"{self.sizes[0]} → {self.sizes[1]} bytes"]
    if self.text_sizes is not None:
      parts.append(f"text {self.text_sizes[0]} → {self.text_sizes[1]}")
    if self.version[0] != self.version[1]:
      parts.append(f"Mosaic version {self.version[0]} → {self.version[1]}")
    if self.ops:
      parts.append(f"op counts {_listed(self.ops)}")
    elif self.lines[0]:
      where = f" (ops {_listed(self.lines[1])})" if self.lines[1] else ""
      many = "s differ" if self.lines[0] > 1 else " differs"
      parts.append(f"same ops, {self.lines[0]} line{many}{where}")
    if self.config:
      parts.append(f"config {', '.join(self.config)}")
    if self.note:
      parts.append(self.note)
    return "; ".join(parts)


def _unquoted(attribute: str) -> str:
  """The text of an MLIR string attribute as printed (``"{\\22a\\22: 1}"``)."""
  if len(attribute) < 2 or attribute[0] != '"' or attribute[-1] != '"':
    raise PayloadTableError(f"backend_config {attribute[:60]!r} is not an MLIR string")
  return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), attribute[1:-1])


def payload(kernel: str, backend_config: str) -> Payload:
  """The payload of a ``tpu_custom_call`` whose ``backend_config`` attribute (as the manifest
  records it) is ``backend_config``."""
  from jaxport._jaxcompat import _mosaic

  try:
    config = json.loads(_unquoted(backend_config))
    call = dict(config["custom_call_config"])
    body = base64.b64decode(call.pop("body"), validate=True)
  except (ValueError, KeyError, TypeError) as e:
    raise PayloadTableError(f"kernel {kernel!r}: its backend_config is not a Mosaic payload "
                            f"({type(e).__name__}: {e})") from None
  rest = {**{k: v for k, v in config.items() if k != "custom_call_config"}, **call}
  try:
    return Payload(kernel, len(body), _mosaic.mosaic_text(body), None, rest)
  except _mosaic.MosaicPayloadError as e:
    return Payload(kernel, len(body), None, str(e), rest)


def compare(old: Payload, new: Payload) -> Change:
  """How ``new`` differs from ``old``, source locations aside."""
  config = tuple(sorted(k for k in set(old.config) | set(new.config)
                        if old.config.get(k) != new.config.get(k)))
  sizes = (old.bytecode_size, new.bytecode_size)
  if old.text is None or new.text is None:
    return Change(new.kernel, True, sizes, None, (), config,
                  note=f"not compared: {old.unreadable or new.unreadable}")
  a, b = old.ops(), new.ops()
  ops = tuple(f"{name} {a[name]}→{b[name]}" for name in sorted(set(a) | set(b))
              if a[name] != b[name])
  differing = [line[1:] for line in difflib.unified_diff(
      old.text.splitlines(), new.text.splitlines(), lineterm="", n=0)
      if line[:1] in "+-" and line[:3] not in ("+++", "---")]
  at = tuple(sorted({n for line in differing
                     for n in _op_names(line + " ") or (["module"] if line.lstrip().startswith(
                         "module") else [])}))
  return Change(new.kernel, old.text != new.text or bool(config), sizes,
                (len(old.text), len(new.text)), ops, config, (old.version(), new.version()),
                (len(differing) // 2 if not ops else 0, at))


def _release_key(release: str) -> tuple[int, ...]:
  return tuple(int(p) for p in re.findall(r"\d+", release))


def payloads_of(signatures: Iterable[Any]) -> list[Payload]:
  """The payloads of the ``tpu_custom_call`` signatures among ``signatures``, in their order."""
  out = []
  for s in signatures:
    if s.target == TARGET and "backend_config" in s.attributes:
      name = s.attributes.get("kernel_name", '"?"').strip('"')
      out.append(payload(name, s.attributes["backend_config"]))
  return out


def _pairs(names_old: Sequence[str], names_new: Sequence[str]) -> list[tuple[int, int]]:
  """Kernels of two entries matched by name, then by position among those of that name."""
  seen: dict[str, list[int]] = collections.defaultdict(list)
  for i, n in enumerate(names_new):
    seen[n].append(i)
  out = []
  for i, n in enumerate(names_old):
    if seen[n]:
      out.append((i, seen[n].pop(0)))
  return out


def rows(store: GoldenStore, family: str | None = None) -> list[dict[str, Any]]:
  """One row per case, consecutive release pair and kernel of the store's entries that call
  ``tpu_custom_call``."""
  newest: dict[str, dict[str, Any]] = collections.defaultdict(dict)
  for entry in store.entries(family=family):
    m = entry.manifest
    if not any(s.target == TARGET for s in m.custom_call_targets):
      continue
    release = m.producer.jax
    held = newest[m.case_id].get(release)
    if held is None or str(held.entry_id) < str(entry.entry_id):
      newest[m.case_id][release] = entry
  out = []
  for case_id in sorted(newest):
    releases = sorted(newest[case_id], key=_release_key)
    loaded = {r: payloads_of(newest[case_id][r].manifest.custom_call_targets) for r in releases}
    for old, new in zip(releases, releases[1:]):
      a, b = loaded[old], loaded[new]
      matched = _pairs([p.kernel for p in a], [p.kernel for p in b])
      for i, j in matched:
        change = compare(a[i], b[j])
        out.append({"case": case_id, "releases": [old, new], "kernel": change.kernel,
                    "changed": change.changed, "how": change.how()})
      gone = sorted(set(range(len(a))) - {i for i, _ in matched})
      came = sorted(set(range(len(b))) - {j for _, j in matched})
      for i in gone:
        out.append({"case": case_id, "releases": [old, new], "kernel": a[i].kernel,
                    "changed": True, "how": "kernel removed"})
      for j in came:
        out.append({"case": case_id, "releases": [old, new], "kernel": b[j].kernel,
                    "changed": True, "how": "kernel added"})
  return out


def markdown(table: Sequence[dict[str, Any]]) -> str:
  lines = ["| case | releases | kernel | payload |", "|---|---|---|---|"]
  for r in table:
    lines.append(f"| `{r['case']}` | {r['releases'][0]} → {r['releases'][1]} | "
                 f"`{r['kernel']}` | {r['how']} |")
  return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--store", default="compat_data", help="the golden store (compat_data)")
  parser.add_argument("--family", default=None,
                      help="only this family of entries (default: every one with a kernel)")
  parser.add_argument("--json", action="store_true", help="the rows as JSON")
  args = parser.parse_args(argv)
  try:
    table = rows(GoldenStore(args.store), args.family)
  except JaxportError as e:
    print(f"pallas_payloads.py: {e}", file=sys.stderr)
    return 1
  sys.stdout.write(json.dumps(table, indent=1) + "\n" if args.json else markdown(table))
  return 0


if __name__ == "__main__":
  sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
  sys.exit(main())
