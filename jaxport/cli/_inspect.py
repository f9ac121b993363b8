"""``jaxport inspect``: what one artifact (a blob, or an entry of a store) holds and where it
runs, read as the other commands read it; its strings escaped before they reach a terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.cli import _artifact_read, _artifacts, _parser
from jaxport.cli._project_args import (DEFAULT_ROOT, EXIT_OK, import_project_types, measured_of,
                                       print_json, read_project, store_of)
from jaxport.errors import GoldenDataError, UnregisteredTypeError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import MANIFEST_FILE
from jaxport.golden._store import GoldenStore
from jaxport.harness._project import ProjectTargets
from jaxport.releases import _features as artifact_runs_on
from jaxport.releases._measured import serves_on_tf_json, serves_on_tf_lines

def run(args, extra) -> int:
  """``jaxport inspect``: one artifact described, its module read in the parser child."""
  with _parser.from_args(args) as parser:
    return _inspect_with(args, parser)


def _inspect_with(args, parser: _parser.ModuleParser) -> int:
  """``jaxport inspect``, its module read by ``parser`` (a crash there is the artifact's error)."""
  path = Path(args.artifact)
  entry = None
  project = read_project(args)
  if path.is_file():
    blob = path.read_bytes()
  elif path.is_dir() and (path / MANIFEST_FILE).exists():
    entry = _artifacts.entry_at(path)
  elif path.is_dir():
    raise GoldenDataError(f"{path}: a directory but not a golden entry (no {MANIFEST_FILE}); "
                          "pass a blob file, an entry directory or an entry id.")
  elif not _artifacts.looks_like_entry_id(args.artifact):
    raise GoldenDataError(f"{path}: no such file or directory (nor an entry id "
                          "'<platform>/<family>/<case_id>/<YYYY-MM-DD>[.<revision>]_jax-<version>').")
  else:
    root = args.root or (store_of(project, "--root") if project is not None else DEFAULT_ROOT)
    entry = GoldenStore(root).entry(EntryId.parse(args.artifact.strip("/")))
  if entry is not None:
    entry.verify()
    blob = entry.blob()
  label = str(entry.entry_id) if entry else str(path)
  try:
    read = _artifact_read.read_artifact(blob, parser, label)
  except UnregisteredTypeError as e:
    if project is None:
      raise UnregisteredTypeError(
          f"{e}\nA project's own pytree type is registered when its case modules are "
          "imported: pass --project DIR (the project's directory) to inspect its "
          "entries.") from None
    import_project_types(project, parser)
    read = _artifact_read.read_artifact(blob, parser, label)
  exp = read.exported
  recorded = entry.manifest.serialization_version if entry is not None else None
  # An envelope the running jax refuses as it is is described all the same, the refusal
  # stated (``read_as_is``): inspecting is not loading.
  info: dict[str, Any] = {"artifact": label,
                          "exported": _artifacts.describe_exported(
                              exp, blob, recorded, reader=parser, label=label,
                              signatures=read.signatures),
                          "read_as_is": read.loading.to_json()}
  if entry is not None:
    info["manifest"] = json.loads(entry.manifest.to_json())
  declared = project.targets if project is not None else None
  if args.stable_targets:
    given = ProjectTargets.read(args.stable_targets)
    declared = given if declared is None else declared.union(given)
  own = frozenset(t for p in exp.platforms for t in declared.stable(p)) if declared else frozenset()
  measured = measured_of(project)
  sha = None if entry is None else entry.manifest.files.get("exported.bin")
  runs = () if measured is None or entry is None else measured.of(entry.entry_id, sha)
  info.update(read.runs_on(entry.manifest if entry is not None else None, parser, label, own,
                           runs).to_json())
  if entry is not None:
    info.update(serves_on_tf_json(measured.served_by(entry.entry_id, sha) if measured else ()))
  if args.mlir:
    info["mlir"] = parser.module_text(bytes(exp.mlir_module_serialized), exp.fun_name, label)
  if args.json:
    print_json(info)
    return EXIT_OK
  lines = [info["artifact"]]
  for k, v in info["exported"].items():
    if k == _artifacts.HEADER_NOTE_KEY:
      continue
    if k == "serialization_version":
      lines.append(f"  {k}: {v} ({info['exported'][_artifacts.HEADER_NOTE_KEY]})")
    elif k == "serialization_layout":
      lines.append(f"  {k}: {'unknown' if v is None else v}")
    elif isinstance(v, list):
      lines.append(f"  {k}: " + ("(none)" if not v else ""))
      lines.extend(f"    {x}" for x in v)
    else:
      lines.append(f"  {k}: {'not recorded' if v is None else v}")
  if entry is not None:
    m = entry.manifest
    lines.append(f"  manifest: case {m.case_id}, family {m.family}, recorded {m.record_date} "
                 f"with jax {m.producer.jax or 'unknown'}, comparison {m.comparison.mode} "
                 f"(rtol {m.comparison.rtol:g}, atol {m.comparison.atol:g})"
                 + (", lowering only" if m.lowering_only else "")
                 + (f", imported from {m.imported_from.source}" if m.imported_from else ""))
    if m.tolerances is not None:
      lines.append("  tolerances per output:" + ("" if m.tolerances else " (none)"))
      lines.extend(f"    {t.path} ({t.dtype}): rtol {t.rtol:g}, atol {t.atol:g}"
                   for t in m.tolerances)
    if m.no_cotangent is not None:
      lines.append("  inputs without a cotangent (no VJP output stored): "
                   + (", ".join(m.no_cotangent) or "none"))
  lines.append(f"  read as it is by jax {installed_jax_version()}: {read.loading.text()}")
  lines.extend(artifact_runs_on.runs_on_lines(info))
  lines.extend(serves_on_tf_lines(info))
  if args.mlir:
    lines.extend(info["mlir"].split("\n"))
  # A blob's strings are the artifact's, not ours: shown escaped, one line each.
  sys.stdout.write("\n".join(map(_terminal_safe, lines)) + "\n")
  return EXIT_OK


def _terminal_safe(line: str) -> str:
  """``line`` with every character a terminal would act on (escape sequences, a newline that
  forges a line, a carriage return) written as a Python escape instead."""
  return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                 for c in line)
