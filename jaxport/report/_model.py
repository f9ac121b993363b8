"""The harness's JSON compatibility report as typed records: one loader, one writer.

The harness (``pytest harness/ --compat-report=RUN.json``) writes the report;
everything in this package reads it through :func:`load_report` and works on
the records (this module, ``_entries`` and ``_sections``), never on the raw dictionaries; the harness session builds a
:class:`RunReport` and writes it with ``to_json``. ``RunReport.to_json`` gives
back exactly the dictionary that was read (for the keys this module knows,
plus any unknown top-level and entry keys, kept as they were), so a merged
report is written in the harness's own format.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._record_codec import json_record, key
from jaxport._vocabulary import FindingKind, Status
from jaxport.errors import ReportError
from jaxport.report._entries import EntryResult
from jaxport.report._fields import REPORT_FORMAT, STRICT, bad, declared_field
from jaxport.report._files import write_text_atomically
from jaxport.report._sections import (RECORD_ACTIONS, CorpusImport, DriftItem, PlatformTargets,
                                      Recorded, ShardRef, Skip, Targets, Updated, Window)

# An update run replays, then records the cases that changed (``--compat-update``).
MODES = ("replay", "record", "update")


def other_host_passes(entries: Iterable[Any]) -> int:
  """How many passing entries (outcomes or report entries) matched the recorded outputs within
  tolerance but not bitwise on a host of another class than the recording one: counted
  apart from the bitwise passes."""
  return sum(1 for e in entries
             if e.status == Status.PASS and FindingKind.NUMERICS_OTHER_HOST in e.kinds)


# The top-level report key listing the hosts that replayed the run (one per shard machine).
REPLAY_HOSTS_KEY = "replay_hosts"
# The top-level key of the project's own declared stable targets (platform -> targets), as its
# ``jaxport_stable_targets`` file lists them; absent from reports written before it was kept.
DECLARED_TARGETS_KEY = "declared_targets"
# The top-level key of each producer release's position in jax's compat window against the
# replaying jax (producer -> Window), known from release dates alone, with or without an
# expected-status table; absent from reports written before it was kept.
RELEASE_WINDOWS_KEY = "release_windows"
# The top-level key of the other platforms' coverage by lowering-only entries.
LOWERING_ONLY_TARGETS_KEY = "lowering_only_targets"
# The summary key counting passes within tolerance on another host class.
OTHER_HOST_KEY = "pass_other_host"
# The summary key counting executables loaded from the cross-run compile cache.
FROM_CACHE_KEY = "from_cache"
# The summary keys counting the replay's work: readers' deserialize-and-call runs, and today's
# exports of the entries' cases (the same in a warm run as in a cold one).
READER_RUNS_KEY = "reader_runs"
EXPORTS_TODAY_KEY = "exports_today"


@json_record(STRICT, unknown_keys=True)
@dataclasses.dataclass(frozen=True)
class Summary:
  """The counts of the run: entries per status, present and replayed, recording actions."""
  # The count of each status, and of each record action, as keys of the summary itself.
  counts: Mapping[Status, int] = key(inline=tuple(str(s) for s in Status))
  present: int
  replayed: int
  actions: Mapping[str, int] = key(inline=RECORD_ACTIONS)
  # Entries that ran after jaxport.upgrade; written only when some did.
  upgraded: int = key(default=0, omit_default=True)
  # Passes within tolerance on another host class (other_host_passes); written only when some did.
  other_host: int = key(name=OTHER_HOST_KEY, default=0, omit_default=True)
  # Executables loaded from the cross-run compile cache; None: the run kept no such cache.
  from_cache: int | None = key(name=FROM_CACHE_KEY, default=None, omit_default=True)
  # Readers' runs and today's exports done for the replayed entries; None: not counted (a
  # report written before they were).
  reader_runs: int | None = key(name=READER_RUNS_KEY, default=None, omit_default=True)
  exports_today: int | None = key(name=EXPORTS_TODAY_KEY, default=None, omit_default=True)

  def work_line(self) -> str:
    """What the replay did beside its verdicts, e.g. "; 12 reader runs, 6 of today's exports;
    4 executables loaded from the compile cache" ("" where nothing was counted)."""
    parts = []
    if self.reader_runs is not None and self.exports_today is not None:
      parts.append(f"{self.reader_runs} reader runs, {self.exports_today} of today's exports")
    if self.from_cache is not None:
      parts.append(f"{self.from_cache} executables loaded from the compile cache")
    return "".join(f"; {p}" for p in parts)


_TOP_KEYS = ("format", "mode", "platform", "today", "compat_window_days", "strict", "readers",
             "producer", "versions", "entries", "targets", "skips", "drift", "recorded",
             "session_failures", "session_warnings", "summary", "shard",
             LOWERING_ONLY_TARGETS_KEY, "jax_corpus", REPLAY_HOSTS_KEY)


@dataclasses.dataclass(frozen=True)
class RunReport:
  """One harness run's compatibility report (``source`` names the file it came from)."""
  mode: str
  platform: str
  today: datetime.date
  compat_window_days: int
  strict: bool
  readers: tuple[str, ...]
  producer: str
  versions: Mapping[str, str | None]
  entries: tuple[EntryResult, ...]
  targets: Targets
  skips: tuple[Skip, ...]
  drift: tuple[DriftItem, ...]
  recorded: tuple[Recorded, ...]
  session_failures: tuple[str, ...]
  session_warnings: tuple[str, ...]
  summary: Summary
  # The part of a sharded run this report is (None: the whole run, or a merged one).
  shard: ShardRef | None = None
  # Per other platform the host lowers for, its targets' coverage by lowering-only entries.
  lowering_only_targets: Mapping[str, PlatformTargets] = dataclasses.field(default_factory=dict)
  # What importing jax's corpus did (None: the run replayed the project's store).
  jax_corpus: CorpusImport | None = None
  # The host records (``jaxport.golden._host.Host.to_json``) of the machines that replayed it.
  replay_hosts: tuple[Mapping[str, Any], ...] = ()
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  source: str = dataclasses.field(default="<report>", compare=False)
  # The changed cases an update run recorded (None: not an update run's report).
  updated: tuple[Updated, ...] | None = None
  # The project's declared stable targets per platform (``any`` included); None: not recorded.
  declared_targets: Mapping[str, tuple[str, ...]] | None = None
  # Per producer release of the entries, its compat-window position; None: not recorded.
  release_windows: Mapping[str, Window] | None = None

  def declares(self, target: str, platform: str) -> bool:
    """Whether the project declared ``target`` stable for ``platform`` (or for any platform).

    A report written before the declarations were kept counts its required targets as
    declared for its own platform (the project's declarations are among them)."""
    if self.declared_targets is None:
      return platform == self.platform and target in self.targets.required
    return target in self.declared_targets.get(platform, ())

  def window_of(self, producer: str) -> Window | None:
    """The compat-window position of ``producer``: from an entry's release annotation, else
    from the run's release windows; None when no release date is known."""
    for e in self.entries:
      if e.producer == producer and e.release is not None and e.release.window is not None:
        return e.release.window
    return (self.release_windows or {}).get(producer)

  @property
  def ok(self) -> bool:
    """Whether the run passed: no failing entry and no session failure."""
    return not self.session_failures and not any(e.status == Status.FAIL for e in self.entries)

  # Written by hand, not by jaxport._record_codec: a report's format is judged before any of
  # its keys (an older report says so, not which key it lacks), its keys are named
  # "FILE: key", the keys of a newer report are kept as they were, and the sections older
  # reports lack are written only when known.
  @classmethod
  def from_json(cls, d: Any, source: str = "<report>") -> RunReport:
    """Validate and convert the decoded JSON of a report; errors name ``source`` and the key path."""
    STRICT.obj(d, source, ("format",))
    if isinstance(d["format"], int) and not isinstance(d["format"], bool) and (
        d["format"] < REPORT_FORMAT):
      raise ReportError(f"{source}: report format {d['format']}, written by an older jaxport; "
                        f"this one reads format {REPORT_FORMAT}. Replay again with this jaxport "
                        "to write the report anew "
                        "(or render it with the jaxport release that wrote it).")
    if d["format"] != REPORT_FORMAT:
      raise ReportError(f"{source}: report format {d['format']!r}, but this jaxport reads format "
                        f"{REPORT_FORMAT}. Render it with the jaxport release that wrote it, or "
                        "re-run the harness with this one.")
    STRICT.obj(d, source, _TOP_KEYS)
    def at(key: str) -> str:
      return f"{source}: {key}"

    def items(key: str, kind: Any) -> tuple[Any, ...]:
      return tuple(kind.from_json(x, at(f"{key}[{i}]"))
                   for i, x in enumerate(STRICT.of(d[key], list, at(key))))

    mode = STRICT.of(d["mode"], str, at("mode"))
    if mode not in MODES:
      raise bad(at("mode"), f"expected one of {', '.join(MODES)}, got {mode!r}")
    versions = STRICT.of(d["versions"], Mapping, at("versions"))
    for k, v in versions.items():
      STRICT.of(v, str, at(f"versions.{k}"), nullable=True)
    return cls(
        mode=mode,
        platform=STRICT.of(d["platform"], str, at("platform")),
        today=STRICT.date(d["today"], at("today")),
        compat_window_days=STRICT.of(d["compat_window_days"], int, at("compat_window_days")),
        strict=STRICT.of(d["strict"], bool, at("strict")),
        readers=STRICT.strs(d["readers"], at("readers")),
        producer=STRICT.of(d["producer"], str, at("producer")),
        versions=dict(versions),
        entries=items("entries", EntryResult),
        targets=Targets.from_json(d["targets"], at("targets")),
        skips=items("skips", Skip),
        drift=items("drift", DriftItem),
        recorded=items("recorded", Recorded),
        session_failures=STRICT.strs(d["session_failures"], at("session_failures")),
        session_warnings=STRICT.strs(d["session_warnings"], at("session_warnings")),
        summary=Summary.from_json(d["summary"], at("summary")),
        shard=None if d["shard"] is None else ShardRef.from_json(d["shard"], at("shard")),
        lowering_only_targets={
            p: PlatformTargets.from_json(c, at(f"{LOWERING_ONLY_TARGETS_KEY}.{p}"))
            for p, c in STRICT.of(d[LOWERING_ONLY_TARGETS_KEY], Mapping,
                                  at(LOWERING_ONLY_TARGETS_KEY)).items()},
        jax_corpus=(None if d["jax_corpus"] is None
                    else CorpusImport.from_json(d["jax_corpus"], at("jax_corpus"))),
        replay_hosts=tuple(STRICT.of(h, Mapping, at(f"{REPLAY_HOSTS_KEY}[{i}]")) for i, h in
                           enumerate(STRICT.of(d[REPLAY_HOSTS_KEY], list, at(REPLAY_HOSTS_KEY)))),
        updated=items("updated", Updated) if "updated" in d else None,
        declared_targets=declared_field(d.get(DECLARED_TARGETS_KEY), at(DECLARED_TARGETS_KEY)),
        release_windows=_windows(d.get(RELEASE_WINDOWS_KEY), at(RELEASE_WINDOWS_KEY)),
        extra={k: v for k, v in d.items() if k not in _TOP_KEYS and k not in _OPTIONAL_KEYS},
        source=source)

  def to_json(self) -> dict[str, Any]:
    """The report as the harness writes it (``json.dump`` with sorted keys gives its bytes)."""
    return {**self.extra, "format": REPORT_FORMAT, "mode": self.mode, "platform": self.platform,
            "today": self.today.isoformat(), "compat_window_days": self.compat_window_days,
            "strict": self.strict, "readers": list(self.readers), "producer": self.producer,
            "versions": dict(self.versions), "entries": [e.to_json() for e in self.entries],
            "targets": self.targets.to_json(), "skips": [s.to_json() for s in self.skips],
            "drift": [x.to_json() for x in self.drift],
            "recorded": [r.to_json() for r in self.recorded],
            "session_failures": list(self.session_failures),
            "session_warnings": list(self.session_warnings), "summary": self.summary.to_json(),
            "shard": None if self.shard is None else self.shard.to_json(),
            LOWERING_ONLY_TARGETS_KEY: {p: c.to_json()
                                        for p, c in self.lowering_only_targets.items()},
            "jax_corpus": None if self.jax_corpus is None else self.jax_corpus.to_json(),
            REPLAY_HOSTS_KEY: [dict(h) for h in self.replay_hosts],
            **({} if self.updated is None else {"updated": [u.to_json() for u in self.updated]}),
            **({} if self.declared_targets is None else {DECLARED_TARGETS_KEY: {
                p: list(ts) for p, ts in self.declared_targets.items()}}),
            **({} if self.release_windows is None else {RELEASE_WINDOWS_KEY: {
                p: w.to_json() for p, w in self.release_windows.items()}})}


# Top-level keys read into typed fields when present (older reports lack them).
_OPTIONAL_KEYS = ("format", "updated", DECLARED_TARGETS_KEY, RELEASE_WINDOWS_KEY)


def _windows(value: Any, where: str) -> Mapping[str, Window] | None:
  if value is None:
    return None
  STRICT.of(value, Mapping, where)
  return {p: Window.from_json(w, f"{where}.{p}") for p, w in value.items()}


def load_report(path: str | os.PathLike) -> RunReport:
  """Read and validate the report at ``path``; a :class:`ReportError` names the file and the problem."""
  path = Path(path)
  if not os.path.lexists(path):
    raise ReportError(f"{path}: no such report. Write one with `pytest "
                      f"--compat-report={path}`.")
  data = _json.load_file(path, str(path), ReportError, "Pass a report the harness wrote "
                         "(--compat-report); one cut short by a killed job is the usual cause "
                         "of invalid JSON, and running the harness again writes it whole.",
                         bytes_limit="MAX_REPORT_BYTES")
  return RunReport.from_json(data, source=str(path))


def write_report(report: RunReport, path: str | os.PathLike) -> None:
  """Write ``report`` as the harness does (indented, sorted keys), atomically."""
  write_text_atomically(path, json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
