"""Calling golden entries with a TensorFlow release's ``XlaCallModule``, in its environment.

The reading script (``jaxport_in_release/tf_reader.py``) runs in the release's environment
without jax or jaxport and writes one JSON line per entry, flushed before the next starts, so a
native crash costs only the entry that caused it: the driver here starts it again on what is
left. Entries the release's measured facts refuse (a calling convention outside its range, no
platform it serves: ``jaxport.harness._judge._tf_runs.precheck``) are not sent to TensorFlow;
their rows are made here. The reader also reports the release's own facts (its version, the
StableHLO version it reads, its newest calling convention), which must be the table's: an
environment that disagrees is refused, not trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jaxport._bounded import read_regular
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.harness._judge._tf_runs import precheck
from jaxport.harness._protocol._tf_rows import (PRECHECK, TfAbout, TfRow, TfRowError,
                                              read_tf_row)
from jaxport.multirelease._replay import (ENTRY_TIMEOUT_S, IN_RELEASE, read_results,
                                          release_env)
from jaxport.multirelease._tf_envs import ensure_tf_env
from jaxport.releases._tf_table import TfRelease
from jaxport_in_release import tf_envelope

logger = logging.getLogger(__name__)

TF_READER = IN_RELEASE / "tf_reader.py"


class TfReplayError(JaxportError, RuntimeError):
  """The ``tf`` reader could not call the entries it was given, or its TensorFlow is not the
  release the table measured."""


def tf_env() -> dict[str, str]:
  """The reader's environment: this process's, minus what would leak its packages, with
  TensorFlow's native logging quiet."""
  env = release_env()
  env.pop("JAX_PLATFORMS", None)
  env["TF_CPP_MIN_LOG_LEVEL"] = "3"
  return env


def prechecked(root: Path, entry_ids: Sequence[EntryId],
               release: TfRelease) -> tuple[dict[EntryId, TfRow], list[EntryId]]:
  """The rows of the entries ``release``'s facts refuse, and the ids left for TensorFlow (an
  entry whose blob does not read goes to the reader, which reports why)."""
  refused, left = {}, []
  for entry_id in entry_ids:
    text = str(require_entry_id(entry_id, "prechecked"))
    try:
      blob = read_regular(root / text / "exported.bin", text, TfReplayError,
                          "MAX_BLOB_BYTES", follow_links=False)
      env = tf_envelope.read(blob)
    except (TfReplayError, tf_envelope.EnvelopeError):
      left.append(entry_id)
      continue
    if precheck(env.calling_convention, env.platforms, release) is None:
      left.append(entry_id)
      continue
    refused[entry_id] = TfRow(entry_id, PRECHECK, calling_convention=env.calling_convention,
                              stablehlo=env.stablehlo_version, platforms=env.platforms,
                              blob_sha256=hashlib.sha256(blob).hexdigest())
  return refused, left


def check_about(about: TfAbout, release: TfRelease) -> None:
  """Refuse an environment whose TensorFlow is not what the table measured for ``release``."""
  wrong = []
  if about.tf != release.version:
    wrong.append(f"version {about.tf}")
  if about.stablehlo != release.stablehlo:
    wrong.append(f"StableHLO {about.stablehlo} (the table: {release.stablehlo})")
  high = release.calling_convention[1]
  if about.max_calling_convention not in (None, high):
    wrong.append(f"calling conventions up to {about.max_calling_convention} (the table: {high})")
  if wrong:
    raise TfReplayError(f"the environment's TensorFlow is not the {release.version} the table "
                        f"measured: it reports {'; '.join(wrong)}. Remove the environment to "
                        "have it built again, or measure the release anew.")


def _about(path: Path, python: str, tail: str) -> TfAbout:
  """The release facts the reader wrote first; refused, with the reader's last words, when
  it wrote none (TensorFlow did not import) or they do not read."""
  try:
    return TfAbout.from_json(json.loads(path.read_text()))
  except (OSError, ValueError, TfRowError) as e:
    raise TfReplayError(f"the tf reader ({python}) did not report its TensorFlow release ({e}); "
                        f"its last words:\n{tail}") from None


def replay_with_tf(python: str, root: Path, entry_ids: Sequence[EntryId], work: Path,
                   release: TfRelease, *, timeout_s: float = ENTRY_TIMEOUT_S) -> list[TfRow]:
  """Call ``entry_ids`` of the store ``root`` with TensorFlow ``release`` in ``python``'s
  environment; one row per entry, in order."""
  refused, pending = prechecked(root, entry_ids, release)
  results_path, about_path = work / "results.jsonl", work / "about.json"
  checked = False
  while pending:
    ids_file = work / "entries.txt"
    # The reader runs without jaxport: it takes and writes the ids' text.
    ids_file.write_text("\n".join(map(str, pending)) + "\n")
    cmd = [python, str(TF_READER), "--root", str(root), "--entries", str(ids_file),
           "--out", str(results_path), "--about", str(about_path)]
    limit = timeout_s * (len(pending) + 1)
    try:
      proc = subprocess.run(cmd, env=tf_env(), capture_output=True, text=True, timeout=limit)
      tail = proc.stderr[-1500:]
    except subprocess.TimeoutExpired:
      tail = f"timed out after {limit} s"
    if not checked:
      check_about(_about(about_path, python, tail), release)
      checked = True
    done = read_results(results_path)
    remaining = [e for e in pending if str(e) not in done]
    if len(remaining) == len(pending):
      raise TfReplayError(f"the tf reader made no progress ({python}):\n{tail}")
    if remaining:
      logger.warning("tf reader stopped early (%d left): %s", len(remaining),
                     tail.splitlines()[-1:])
    pending = remaining
  results = read_results(results_path)
  rows = []
  for entry_id in entry_ids:
    row = refused.get(entry_id)
    rows.append(row if row is not None else read_tf_row(results[str(entry_id)]))
  return rows


def replay_store_with_tf(store: Path, entry_ids: Sequence[EntryId],
                         release: TfRelease) -> list[TfRow]:
  """Call ``entry_ids`` of ``store`` with TensorFlow ``release``, its environment built (or
  reused) first, in a scratch folder removed after; one row per entry, in order."""
  python = ensure_tf_env(release)
  with tempfile.TemporaryDirectory(prefix=f"jaxport-tf-{release.version}-") as tmp:
    return replay_with_tf(str(python), store, entry_ids, Path(tmp), release)


def row_json(row: TfRow) -> dict:
  """``row`` as the JSON object a report keeps."""
  d = dataclasses.asdict(row)
  d["entry_id"] = str(row.entry_id)
  d["platforms"] = None if row.platforms is None else list(row.platforms)
  return d
