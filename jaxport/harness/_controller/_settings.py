"""The harness's settings, defined once: every ``--compat-*`` option, its default, help text and
validator, the ``jaxport_*`` configuration keys, and the named presets.

The pytest entry point (``jaxport_pytest``) declares its options from :data:`FIELDS`, the
plugin resolves them into one :class:`Settings` (defaults, then the preset, then the options
given), and help text, documentation and the CLI quote the defaults from here. Jax-free, and
of jaxport it imports only leaves (``_vocabulary``, ``_limits``, ``errors``, ``_files``), the
shard parser and the cache folder's default, so that every pytest run can load it.

A harness session runs with :class:`Options`: the settings resolved for the run once, here
(the run's date, pytest's own strict mode, absolute folders), and what pytest's configuration
adds (the golden store's root, a narrowed selection, the project's root). Every setting is read
under its option's own name, ``options.settings.X``.

A preset (``--compat-preset NAME``) is a named set of option values plus the Hypothesis
profile it selects for a project's property tests; options given on the command line
override the preset's values.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jaxport import _limits
from jaxport._files import refuse_links
from jaxport._vocabulary import EXPIRY_WINDOW_DAYS, MAX_WORKER_TIMEOUT_S, PLATFORMS, WORKER_TIMEOUT_S
from jaxport.errors import PrivatePathError, SettingsError
from jaxport.harness._controller._cache_folder import DEFAULT_FOLDER
from jaxport.harness._controller._shard import Shard, ShardError, read_costs

# The configuration keys of a project ([tool.pytest.ini_options] or pytest.ini).
INI_CASES = "jaxport_cases"
INI_STORE = "jaxport_store"
INI_TARGETS = "jaxport_stable_targets"
INI_ON_CHANGE = "jaxport_on_change"
INI_EXPECTATIONS = "jaxport_expectations"
INI_BUILTIN_TARGETS = "jaxport_require_builtin_targets"
INI_TESTS = "jaxport_tests"
# What the multi-release commands need beyond the harness: modules whose cases each release's
# own jax.export records (record --with-jax), and modules of the effect types the project's
# functions use, which a release's replayer imports first (replay --with-jax, bisect, matrix).
INI_RELEASE_CASES = "jaxport_release_cases"
INI_EFFECTS = "jaxport_effect_modules"
# What an imported artifact whose envelope the running jax refuses as expired does: "fail"
# (a shipped artifact is judged as shipped) or "warn".
INI_SHIPPED_EXPIRED = "jaxport_shipped_expired"


def opted_in(config: Any) -> bool:
  """Whether the project's pytest configuration (a ``pytest.Config``) opts in: it names case
  modules, or a golden store (a project whose entries are all imported artifacts has no case
  module; ``jaxport_cases = []`` beside its store says so)."""
  return bool(config.getini(INI_CASES)) or bool(config.getini(INI_STORE))


DEFAULT_PLATFORM = "cpu"
# Megabytes (MiB) of ``--compat-worker-memory-mb``: the default limit, and the range allowed
# (under 64 MiB the interpreter and jax alone pass it; past a pebibyte is a mistake).
DEFAULT_WORKER_MEMORY_MB = _limits.MAX_WORKER_RSS_BYTES // 2**20
MIN_WORKER_MEMORY_MB = 64
MAX_WORKER_MEMORY_MB = 2**30
PRESET_FLAG = "--compat-preset"


def command_line_option(name: str, flag: str) -> dict[str, Any]:
  """``add_argument`` keywords of a command's ``flag`` that sets the harness setting ``name``:
  its default, help and validation from :data:`FIELDS` (an error names ``flag``), so that a
  command and the harness never disagree on what the setting means."""
  field = FIELDS_BY_NAME[name]
  if field.switch:
    return {"action": "store_true", "default": field.default, "help": field.help_text()}

  def parse(text: str) -> Any:
    try:
      return field.validate(text) if field.validate is not None else text
    except SettingsError as e:
      raise argparse.ArgumentTypeError(str(e).replace(field.flag, flag)) from None

  return {"type": parse, "default": field.default, "help": field.help_text(),
          "metavar": field.metavar}


def dest(flag: str) -> str:
  """The attribute of ``config.option`` an option is stored in (``--compat-x-y`` -> ``compat_x_y``)."""
  return flag.lstrip("-").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class Field:
  """One setting: its ``Settings`` attribute and type, its option, default, help and validator.

  ``help`` may quote ``{default}``; ``shown_default`` is how help and docs write a default
  that is computed when the run starts (today's date). ``validate`` turns a value from the
  command line (a string, or what ``argtype`` made of it) or from a preset into the typed
  value, or raises :class:`~jaxport.errors.SettingsError` naming the option and the fix.
  """

  name: str
  flag: str
  help: str
  # The type of the validated value, as the run's Settings declares it.
  kind: str = "str | None"
  default: Any = None
  switch: bool = False
  metavar: str | None = None
  argtype: Callable[[str], Any] | None = None
  choices: tuple[str, ...] | None = None
  validate: Callable[[Any], Any] | None = None
  shown_default: str | None = None
  # Given several times on the command line, every value is kept (a list), in order.
  repeatable: bool = False

  @property
  def dest(self) -> str:
    return dest(self.flag)

  def help_text(self) -> str:
    shown = self.shown_default if self.shown_default is not None else self.default
    if isinstance(shown, float):
      shown = f"{shown:g}"
    return self.help.format(default=shown)

  def argparse_kwargs(self) -> dict[str, Any]:
    """Keyword arguments of ``parser.addoption``: every default is None, so that the harness
    tells an option given from one left out (and a preset fills the latter)."""
    kwargs: dict[str, Any] = {"dest": self.dest, "default": None, "help": self.help_text()}
    if self.switch:
      kwargs["action"] = "store_true"
    elif self.repeatable:
      kwargs["action"] = "append"
    if self.metavar is not None:
      kwargs["metavar"] = self.metavar
    if self.argtype is not None:
      kwargs["type"] = self.argtype
    if self.choices is not None:
      kwargs["choices"] = self.choices
    return kwargs


def _today(value: Any) -> datetime.date | None:
  if value is None or isinstance(value, datetime.date):
    return value
  try:
    return datetime.date.fromisoformat(str(value))
  except ValueError:
    raise SettingsError(f"--compat-today={value!r}: expected a date YYYY-MM-DD") from None


def _window_days(value: Any) -> int:
  if isinstance(value, bool) or not isinstance(value, int):
    try:
      value = int(str(value).strip())
    except ValueError:
      raise SettingsError(f"--compat-window-days={value!r}: expected a whole number of days "
                          f"(>= 0), such as --compat-window-days={EXPIRY_WINDOW_DAYS}") from None
  if value < 0:
    raise SettingsError(f"--compat-window-days must be >= 0, got {value}")
  return value


def worker_timeout(value: object) -> float:
  """The ``--compat-worker-timeout`` in seconds: a finite number above 0 and at most a week."""
  try:
    seconds = float(value)  # type: ignore[arg-type]
  except (TypeError, ValueError):
    seconds = math.nan
  if not 0 < seconds <= MAX_WORKER_TIMEOUT_S:  # also false for nan
    raise SettingsError(
        f"--compat-worker-timeout={value}: expected seconds above 0 and at most "
        f"{MAX_WORKER_TIMEOUT_S:g} (a week), such as --compat-worker-timeout="
        f"{WORKER_TIMEOUT_S:g}; a timeout of 0 or less would report every entry as a "
        "compatibility break.")
  return seconds


def worker_memory_mb(value: object) -> int:
  """The ``--compat-worker-memory-mb``: a whole number of MiB from 64 to 2**30."""
  try:
    mb = int(str(value).strip())
  except ValueError:
    mb = 0
  if not MIN_WORKER_MEMORY_MB <= mb <= MAX_WORKER_MEMORY_MB:
    raise SettingsError(
        f"--compat-worker-memory-mb={value}: expected a whole number of megabytes (MiB) from "
        f"{MIN_WORKER_MEMORY_MB} to {MAX_WORKER_MEMORY_MB}, such as --compat-worker-memory-mb="
        f"{DEFAULT_WORKER_MEMORY_MB} (the default, {_limits.name('MAX_WORKER_RSS_BYTES')}); "
        f"under {MIN_WORKER_MEMORY_MB} MiB the worker's interpreter alone passes the limit and "
        "every entry would be reported as a compatibility break.")
  return mb


def _platform(value: Any) -> str:
  if value not in PLATFORMS:
    raise SettingsError(f"--compat-platform={value!r}: expected one of {', '.join(PLATFORMS)}")
  return value


def _shard(value: Any) -> Shard | None:
  if value is None or isinstance(value, Shard):
    return value
  try:
    return Shard.parse(str(value))
  except ShardError as e:
    raise SettingsError(str(e)) from None


def _costs(value: Any) -> dict[str, float] | None:
  """The per-entry seconds of one ``--compat-timings`` file or several (each shard writes its
  own): merged, an entry timed in two files keeping the larger figure."""
  if value is None:
    return None
  merged: dict[str, float] = {}
  for path in value if isinstance(value, (list, tuple)) else [value]:
    try:
      costs = read_costs(path)
    except ShardError as e:
      raise SettingsError(str(e)) from None
    for entry_id, seconds in costs.items():
      merged[entry_id] = max(seconds, merged.get(entry_id, 0.0))
  return merged


def _cache_dir(value: Any) -> str | None:
  if value and Path(value).exists() and not Path(value).is_dir():
    raise SettingsError(f"--compat-cache-dir={value} is a file; pass a directory (it is "
                        "created when missing).")
  return value or None


def _artifacts(value: Any) -> str | None:
  if value and Path(value).exists() and not Path(value).is_dir():
    raise SettingsError(f"--compat-artifacts={value} is a file; pass a directory (it is "
                        "created when an entry fails).")
  return value or None


def _text(value: Any) -> str | None:
  return None if value is None else str(value)


def _output_file(flag: str) -> Callable[[Any], str | None]:
  """The validator of an option naming a file the run writes at its end: checked before the
  run, so that a run never ends losing its report. A directory, a device, a FIFO or a socket
  is refused by its type (replacing a device node would destroy it), and so is a folder the
  file cannot be created in."""
  def check(value: Any) -> str | None:
    if value is None:
      return None
    path = Path(str(value)).absolute()
    try:
      st = path.stat()
    except OSError:
      st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
      raise SettingsError(f"{flag}={value}: a directory; name a file in it, such as "
                          f"{path / 'report.json'}")
    if st is not None and not stat.S_ISREG(st.st_mode):
      raise SettingsError(f"{flag}={value}: not a regular file (a device, FIFO or socket); name "
                          "a file to write")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
      folder = folder.parent  # the report's folders are created at the end
    try:
      with tempfile.TemporaryFile(dir=folder):
        pass
    except OSError as e:
      raise SettingsError(f"{flag}={value}: no file can be written in {folder} "
                          f"({e.strerror or e}); name a file in a writable folder") from None
    return str(value)
  return check


def _switch(value: Any) -> bool:
  return bool(value)


FIELDS: tuple[Field, ...] = (
    Field("platform", "--compat-platform", "platform whose golden entries are replayed or "
          "recorded (default: {default})", default=DEFAULT_PLATFORM, choices=PLATFORMS,
          validate=_platform, kind="str"),
    Field("record", "--compat-record", "record a new dated golden entry for every selected case "
          "instead of replaying", default=False, switch=True, validate=_switch, kind="bool"),
    Field("update", "--compat-update", "replay, then record a new dated entry for each case "
          "whose function changed, and show what changed", default=False, switch=True,
          validate=_switch, kind="bool"),
    Field("strict", "--compat-strict", "warnings fail too: drift, a custom-call target nothing "
          "promises, an expired entry or one dated after today (in a pytest run, pytest's own "
          "strict mode implies it)", default=False, switch=True, validate=_switch,
          kind="bool"),
    Field("report", "--compat-report", "write the compatibility report here", metavar="FILE.json",
          validate=_output_file("--compat-report")),
    Field("window_days", "--compat-window-days", "entries older than this are reported as "
          "expired (default {default})", default=EXPIRY_WINDOW_DAYS, metavar="DAYS", argtype=int,
          validate=_window_days, kind="int"),
    Field("store", "--compat-store", "golden store to replay or record into (default: the "
          f"project's {INI_STORE})", metavar="DIR", validate=_text),
    Field("today", "--compat-today", "the date used for recording and expiry (default: "
          "{default})", metavar="YYYY-MM-DD", validate=_today, shown_default="today",
          kind="datetime.date | None"),
    Field("worker_timeout_s", "--compat-worker-timeout", "seconds one entry may take before its "
          "worker is killed (default {default})", default=WORKER_TIMEOUT_S, metavar="SECONDS",
          validate=worker_timeout, kind="float"),
    Field("worker_memory_mb", "--compat-worker-memory-mb", "megabytes (MiB) of resident memory a "
          "worker may use while it replays or records an entry before it is killed (default "
          "{default})", default=DEFAULT_WORKER_MEMORY_MB, metavar="MB", validate=worker_memory_mb,
          kind="int"),
    Field("jax_corpus", "--compat-jax-corpus", "import the installed jax's own back-compat "
          "corpus into a temporary store and replay it", default=False, switch=True,
          validate=_switch, kind="bool"),
    Field("cache_dir", "--compat-cache-dir", "keep compiled executables in DIR for later runs, "
          "readable by its owner only (default: .jaxport_cache/xla in the project)",
          metavar="DIR", validate=_cache_dir),
    Field("no_cache", "--compat-no-cache", "compile every module, sharing no executable within "
          "the run and keeping none for later runs", default=False, switch=True,
          validate=_switch, kind="bool"),
    Field("cold", "--compat-cold", "replay each reader of each entry in a fresh process that has "
          "compiled nothing before", default=False, switch=True, validate=_switch, kind="bool"),
    Field("shard", "--compat-shard", "replay only shard I of N of the store", metavar="I/N",
          validate=_shard, kind="Shard | None"),
    Field("costs", "--compat-costs", "per-entry seconds written by --compat-timings, to balance "
          "--compat-shard (give it once per file: each shard writes its own)",
          metavar="FILE.json", validate=_costs, repeatable=True, kind="Mapping[str, float] | None"),
    Field("timings", "--compat-timings", "write each replayed entry's seconds here",
          metavar="FILE.json", validate=_output_file("--compat-timings")),
    Field("only", "--compat-only", "run only the golden replay or record items (those in "
          f"{INI_TESTS} when the project lists them)", default=False, switch=True,
          validate=_switch, kind="bool"),
    Field("artifacts", "--compat-artifacts", "for each failing entry, write its obtained "
          "outputs, today's module text and a diff of the recorded module and today's into a "
          "folder of DIR (for a CI job to upload)", metavar="DIR", validate=_artifacts),
)
FIELDS_BY_NAME: Mapping[str, Field] = {f.name: f for f in FIELDS}


@dataclasses.dataclass(frozen=True)
class Preset:
  """A named set of option values, and the Hypothesis profile it selects (the profile a
  project's property tests load; the project registers the profiles themselves)."""

  name: str
  summary: str
  values: Mapping[str, Any]
  hypothesis_profile: str

  def flags(self) -> str:
    """The preset's options as they would be written on the command line."""
    out = []
    for name, value in self.values.items():
      field = FIELDS_BY_NAME[name]
      out.append(field.flag if field.switch else f"{field.flag}={value}")
    return " ".join(out)


# The presets by name: jaxport's own, then any a project registers (register_preset).
PRESETS: dict[str, Preset] = {}


def register_preset(name: str, summary: str, values: Mapping[str, Any],
                    hypothesis_profile: str | None = None, parent: str | None = None) -> Preset:
  """Make ``--compat-preset NAME`` select ``values`` (setting name -> value, as the options
  would give them), over those of the preset ``parent`` when one is named; the Hypothesis
  profile is the parent's unless given. A project registers its own from its ``conftest.py``.
  Settings are validated when a run resolves them; an unknown setting, an unknown parent or a
  name taken is refused here, naming it."""
  if not isinstance(name, str) or not name or name in PRESETS:
    taken = f"; {name!r} is taken ({PRESETS[name].flags()})" if name in PRESETS else ""
    raise SettingsError(f"register_preset: a preset needs a new non-empty name{taken}; the "
                        f"known ones are {sorted(PRESETS)}.")
  unknown = sorted(set(values) - set(FIELDS_BY_NAME))
  if unknown:
    raise SettingsError(f"register_preset({name!r}): unknown settings {unknown}; the known "
                        f"ones are {sorted(FIELDS_BY_NAME)}.")
  merged: dict[str, Any] = {}
  if parent is not None:
    if parent not in PRESETS:
      raise SettingsError(f"register_preset({name!r}): no preset {parent!r} to inherit from; "
                          f"the known ones are {sorted(PRESETS)}.")
    merged.update(PRESETS[parent].values)
    if hypothesis_profile is None:
      hypothesis_profile = PRESETS[parent].hypothesis_profile
  merged.update(values)
  made = Preset(name, summary, merged, hypothesis_profile or "default")
  PRESETS[name] = made
  return made


register_preset("ci", "what a CI job of each change runs: the CPU replay, failing entries' "
                "artifacts kept for upload, derandomized property tests",
                {"platform": "cpu", "artifacts": "compat-artifacts"}, hypothesis_profile="ci")
register_preset("nightly", "the nightly replay: as ci, and drift, staleness and expiry fail, "
                "the JSON report is written for the job summary and the next night's "
                "comparison, with the long property-test budget",
                {"strict": True, "report": "compat-report.json"}, hypothesis_profile="nightly",
                parent="ci")
register_preset("strict-cold", "the most independent check: each reader of each entry in a "
                "fresh process, and drift, staleness and expiry fail",
                {"strict": True, "cold": True}, hypothesis_profile="ci")

PRESET_FIELD = Field("preset", PRESET_FLAG, "a named set of --compat-* options (" +
                     ", ".join(PRESETS) + ", or one the project registers); options given "
                     "as well override it", metavar="NAME")


def preset(name: str | None) -> Preset | None:
  """The preset ``name`` (None for none); an unknown name is an error naming the known ones."""
  if name is None:
    return None
  found = PRESETS.get(name)
  if found is None:
    known = "; ".join(f"{p.name} ({p.flags()})" for p in PRESETS.values())
    raise SettingsError(f"{PRESET_FLAG}={name}: no such preset; the known ones are {known}. "
                        f"Pass one of them, or the options themselves.")
  return found


def _settings_class() -> type:
  """The class of a run's settings, derived from :data:`FIELDS`: one attribute per field, of its
  kind and default, then the preset chosen, the Hypothesis profile it selects, and ``given``."""

  def worker_max_rss_bytes(self) -> int:
    return self.worker_memory_mb * 2**20

  def day(self) -> datetime.date:
    """The run's date: ``--compat-today``, else today."""
    return self.today if self.today is not None else datetime.date.today()

  fields = [(f.name, f.kind, dataclasses.field(default=f.default)) for f in FIELDS]
  fields += [("preset", "str | None", dataclasses.field(default=None)),
             ("hypothesis_profile", "str | None", dataclasses.field(default=None)),
             ("given", "frozenset[str]", dataclasses.field(default=frozenset()))]
  cls = dataclasses.make_dataclass(
      "Settings", fields, frozen=True, namespace={
          "__doc__": "Every setting of one run, validated; ``given`` names those set by an "
                     "option or the preset (the rest are defaults).",
          "worker_max_rss_bytes": property(worker_max_rss_bytes), "day": day})
  cls.__module__ = __name__
  return cls


Settings = _settings_class()


def resolve(given: Mapping[str, Any], preset_name: str | None = None) -> Settings:
  """The run's settings from the options ``given`` (field name -> value, None when left out):
  each field's default, overridden by the preset's value, overridden by the option given;
  each validated, then checked against the others."""
  chosen = preset(preset_name)
  unknown = sorted(set(given) - set(FIELDS_BY_NAME))
  if unknown:
    raise SettingsError(f"unknown harness settings {unknown}; the known ones are "
                        f"{sorted(FIELDS_BY_NAME)}")
  raw: dict[str, Any] = {f.name: f.default for f in FIELDS}
  named: set[str] = set()
  if chosen is not None:
    raw.update(chosen.values)
    named |= set(chosen.values)
  for name, value in given.items():
    if value is not None:
      raw[name] = value
      named.add(name)
  values = {name: (FIELDS_BY_NAME[name].validate(value) if FIELDS_BY_NAME[name].validate
                   else value) for name, value in raw.items()}
  settings = Settings(**values, preset=chosen.name if chosen else None,
                      hypothesis_profile=chosen.hypothesis_profile if chosen else None,
                      given=frozenset(named))
  _check_together(settings)
  return settings


def _check_together(s: Settings) -> None:
  """Refuse settings that contradict each other."""
  if s.record and s.update:
    raise SettingsError("--compat-record records every case and --compat-update only the "
                        "changed ones; pass one of them.")
  if s.jax_corpus and (s.store or s.record or s.update):
    raise SettingsError("--compat-jax-corpus replays its own temporary store; it cannot be "
                        "combined with --compat-store, --compat-record or --compat-update")
  if s.update and s.shard is not None:
    raise SettingsError("--compat-update records the changed cases of the whole store; it "
                        "cannot be combined with --compat-shard")
  if s.cache_dir and s.no_cache:
    raise SettingsError("--compat-cache-dir and --compat-no-cache contradict each other; "
                        "pass one.")


@dataclasses.dataclass(frozen=True)
class Options:
  """What one harness session runs with: the run's settings resolved for the run (made by
  :meth:`for_run`; each read as ``options.settings.X``) and what pytest's configuration adds."""

  settings: Settings
  golden_root: Path
  # A narrowed selection (-k, -m, --deselect, node ids): whole-store checks are deferred.
  partial: bool
  # The project's root, below which the cache folder's parents are made private too.
  project_root: Path | None = None
  # Why the run keeps no compile cache and reads no measurements: its private folder is reached
  # through a link (said once, as a session warning); None where nothing was refused.
  cache_refused: str | None = None

  def __post_init__(self) -> None:
    if self.settings.today is None:
      raise SettingsError("a harness session's settings must be resolved for the run (they "
                          "hold no date): make its options with Options.for_run")

  @classmethod
  def for_run(cls, settings: Settings, *, golden_root: Path, partial: bool = False,
              project_root: Path | None = None, invocation_dir: Path | None = None,
              pytest_strict: bool = False) -> Options:
    """The options of a run with ``settings``: the settings whose value depends on the run
    resolved once, so that every part of the session reads the same one.

    ``today`` is the run's date (``--compat-today``, else the day the run starts);
    ``strict`` holds in pytest's own strict mode too; ``artifacts`` and ``cache_dir`` are
    absolute, relative paths read from ``invocation_dir`` (where pytest was started, by
    default the working directory), and ``cache_dir`` defaults to ``.jaxport_cache/xla``
    under ``project_root`` (none without a project root, or with ``--compat-no-cache``).

    The private folder (``cache_dir``, else the project's ``.jaxport_cache``, which keeps the
    measurements) is refused where it, or a folder between it and ``project_root``, is a link,
    before anything is read or written there: the run then keeps no cache and reads no
    measurements, and ``cache_refused`` says why."""
    base = invocation_dir if invocation_dir is not None else Path.cwd()
    if settings.cache_dir:
      cache_dir: Path | None = base / settings.cache_dir
    elif project_root is not None and not settings.no_cache:
      cache_dir = project_root / DEFAULT_FOLDER
    else:
      cache_dir = None
    private = cache_dir if cache_dir is not None else (
        None if project_root is None else project_root / DEFAULT_FOLDER.parent)
    refused = None
    if private is not None:
      try:
        refuse_links(private, project_root, "compiled executables and measurements")
      except PrivatePathError as e:
        refused, cache_dir = (f"{e}. This run keeps no executables for later runs and goes on "
                              "without the compile cache and without measurements"), None
    run = dataclasses.replace(
        settings, today=settings.day(), strict=settings.strict or pytest_strict,
        cache_dir=None if cache_dir is None else str(cache_dir.resolve()),
        artifacts=str((base / settings.artifacts).resolve()) if settings.artifacts else None)
    return cls(run, golden_root=golden_root, partial=partial, project_root=project_root,
               cache_refused=refused)
