"""pytest hooks of the compat harness: options, then delegation to the harness session."""

from __future__ import annotations

import datetime
import math
import shutil
from pathlib import Path

import pytest

import harness._hypothesis_profiles  # noqa: F401  (registers the fuzz profiles; ci by default)
from harness import _jax_corpus
from harness._session import WORKER_OUTPUT_KEY, HarnessSession, Options
from harness._shard import Shard, ShardError, read_costs

OPT_PLATFORM = "--platform"
OPT_RECORD = "--record"
# pytest itself owns --strict (it turns on the ``strict`` ini option); the
# harness honours it and offers --compat-strict for harness strictness alone.
OPT_STRICT = "--compat-strict"
OPT_REPORT = "--compat-report"
OPT_WINDOW = "--compat-window-days"
OPT_ROOT = "--golden-root"
OPT_TODAY = "--today"
OPT_TIMEOUT = "--worker-timeout"
OPT_JAX_CORPUS = "--compat-jax-corpus"
# How the controller tells xdist workers where it imported the corpus.
CORPUS_ROOT_KEY = "jaxport_jax_corpus_root"
OPT_CACHE_DIR = "--compat-cache-dir"
OPT_NO_CACHE = "--compat-no-cache"
OPT_COLD = "--compat-cold"
OPT_SHARD = "--compat-shard"
OPT_COSTS = "--compat-costs"
OPT_TIMINGS = "--compat-timings"

DEFAULT_WINDOW_DAYS = 180
DEFAULT_WORKER_TIMEOUT_S = 300.0
# A week: a longer wait is a mistake, and huge values overflow the worker's wait.
MAX_WORKER_TIMEOUT_S = 7 * 24 * 3600.0
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")

session_key = pytest.StashKey[HarnessSession]()
# The controller's per-run compile cache, handed to its xdist workers so they share executables.
WORKER_CACHE_KEY = "jaxport_compile_cache"


def pytest_addoption(parser):
  group = parser.getgroup("jaxport", "jaxport compat harness")
  group.addoption(OPT_PLATFORM, dest="jaxport_platform", default="cpu", choices=PLATFORMS,
                  help="platform whose golden entries are replayed or recorded (default: cpu)")
  group.addoption(OPT_RECORD, dest="jaxport_record", action="store_true", default=False,
                  help="record new dated golden entries for every selected case instead of replaying")
  group.addoption(OPT_STRICT, dest="jaxport_strict", action="store_true", default=False,
                  help="fail on lowering drift, numerics changes, stale targets and expired "
                       "entries (pytest's --strict implies it)")
  group.addoption(OPT_REPORT, dest="jaxport_compat_report", default=None, metavar="FILE.json",
                  help="write the compatibility report (entry x status, targets, skips, drift) here")
  group.addoption(OPT_WINDOW, dest="jaxport_compat_window_days", type=int,
                  default=DEFAULT_WINDOW_DAYS, metavar="DAYS",
                  help=f"entries older than this are reported as expired (default {DEFAULT_WINDOW_DAYS})")
  group.addoption(OPT_ROOT, dest="jaxport_golden_root", default=None, metavar="DIR",
                  help="golden store root (default: compat_data/ at the repository root)")
  group.addoption(OPT_TODAY, dest="jaxport_today", default=None, metavar="YYYY-MM-DD",
                  help="the date used for recording and expiry (default: today)")
  group.addoption(OPT_TIMEOUT, dest="jaxport_worker_timeout", default=DEFAULT_WORKER_TIMEOUT_S,
                  metavar="SECONDS", help="seconds one entry may take before its worker is killed "
                                          f"(default {DEFAULT_WORKER_TIMEOUT_S:g}, at most a week)")
  group.addoption(OPT_JAX_CORPUS, dest="jaxport_jax_corpus", action="store_true", default=False,
                  help="import the installed jax's own back-compat corpus into a temporary store "
                       "and replay it instead of the golden store (other platforms' datasets "
                       "as lowering-only entries)")
  group.addoption(OPT_CACHE_DIR, dest="jaxport_cache_dir", default=None, metavar="DIR",
                  help="keep compiled executables in jax's compilation cache in DIR across runs "
                       "(default: a fresh directory per run, removed at the end)")
  group.addoption(OPT_NO_CACHE, dest="jaxport_no_cache", action="store_true", default=False,
                  help="compile every module, sharing no executable (same verdicts, slower)")
  group.addoption(OPT_COLD, dest="jaxport_cold", action="store_true", default=False,
                  help="replay each reader of each entry in a fresh process that has lowered and "
                       "compiled nothing before, as a server loading an artifact on start")
  group.addoption(OPT_SHARD, dest="jaxport_shard", default=None, metavar="I/N",
                  help="replay only shard I of N of the store (deterministic, balanced by "
                       f"{OPT_COSTS} where known); merge the shards' reports afterwards")
  group.addoption(OPT_COSTS, dest="jaxport_costs", default=None, metavar="FILE.json",
                  help=f"per-entry replay seconds written by {OPT_TIMINGS}, to balance {OPT_SHARD}")
  group.addoption(OPT_TIMINGS, dest="jaxport_timings", default=None, metavar="FILE.json",
                  help="write each replayed entry's seconds, in total and per part, here")


def _options(config: pytest.Config, corpus_root: Path | None = None) -> Options:
  get = config.getoption
  today = get("jaxport_today")
  try:
    today = datetime.date.fromisoformat(today) if today else datetime.date.today()
  except ValueError:
    raise pytest.UsageError(f"{OPT_TODAY}={today!r}: expected a date YYYY-MM-DD") from None
  if get("jaxport_compat_window_days") < 0:
    raise pytest.UsageError(f"{OPT_WINDOW} must be >= 0, got {get('jaxport_compat_window_days')}")
  root = get("jaxport_golden_root")
  if get("jaxport_jax_corpus") and (root or get("jaxport_record")):
    raise pytest.UsageError(f"{OPT_JAX_CORPUS} replays its own temporary store; it cannot be "
                            f"combined with {OPT_ROOT} or {OPT_RECORD}")
  root = Path(root) if root else Path(__file__).resolve().parent.parent / "compat_data"
  if corpus_root is not None:
    root = corpus_root
  if not get("jaxport_record") and not root.is_dir():
    raise pytest.UsageError(
        f"{OPT_ROOT}={root}: no such directory, so there is no golden store to replay. Pass "
        f"the path of an existing store (such as compat_data/), or record one with {OPT_RECORD}.")
  try:
    shard = Shard.parse(get("jaxport_shard")) if get("jaxport_shard") else None
    costs = read_costs(get("jaxport_costs")) if get("jaxport_costs") else None
  except ShardError as e:
    raise pytest.UsageError(str(e)) from None
  cache_dir = get("jaxport_cache_dir") or getattr(config, "workerinput", {}).get(WORKER_CACHE_KEY)
  if cache_dir and get("jaxport_no_cache"):
    raise pytest.UsageError(f"{OPT_CACHE_DIR} and {OPT_NO_CACHE} contradict each other; pass one.")
  if cache_dir and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
    raise pytest.UsageError(f"{OPT_CACHE_DIR}={cache_dir} is a file; pass a directory (it is "
                            "created when missing).")
  partial = bool(get("keyword") or get("markexpr") or get("deselect", None)
                 or any("::" in str(a) for a in config.args)
                 or not any(_selects_replay(a) for a in config.args))
  return Options(platform=get("jaxport_platform"), record=get("jaxport_record"),
                 strict=bool(get("jaxport_strict") or _pytest_strict(config)), compat_report=get("jaxport_compat_report"),
                 compat_window_days=get("jaxport_compat_window_days"), golden_root=root.resolve(),
                 today=today, worker_timeout_s=_worker_timeout(get("jaxport_worker_timeout")),
                 partial=partial, jax_corpus=bool(get("jaxport_jax_corpus")),
                 compile_cache=not get("jaxport_no_cache"),
                 compile_cache_dir=Path(cache_dir).resolve() if cache_dir else None,
                 cold=get("jaxport_cold"), shard=shard, shard_costs=costs,
                 timings_file=get("jaxport_timings"))


def _worker_timeout(value: object) -> float:
  """The ``--worker-timeout`` in seconds: a finite number above 0 and at most a week."""
  try:
    seconds = float(value)  # type: ignore[arg-type]
  except (TypeError, ValueError):
    seconds = math.nan
  if not 0 < seconds <= MAX_WORKER_TIMEOUT_S:  # also false for nan
    raise pytest.UsageError(
        f"{OPT_TIMEOUT}={value}: expected seconds above 0 and at most {MAX_WORKER_TIMEOUT_S:g} "
        f"(a week), such as {OPT_TIMEOUT}={DEFAULT_WORKER_TIMEOUT_S:g}; a timeout of 0 or less "
        "would report every entry as a compatibility break.")
  return seconds


def _selects_replay(arg: str) -> bool:
  """Whether a positional argument selects the replay items (a directory or test_replay.py)."""
  path = Path(str(arg))
  return path.suffix != ".py" or path.name == "test_replay.py"


def _pytest_strict(config: pytest.Config) -> bool:
  """pytest's own ``--strict`` (the ``strict`` ini option of pytest >= 9)."""
  try:
    return bool(config.getini("strict"))
  except ValueError:
    return False


def _check_backend(platform: str) -> None:
  import jax
  backend = jax.default_backend()
  if backend != platform:
    raise pytest.UsageError(
        f"{OPT_PLATFORM}={platform} replays entries that run on {platform}, but this machine's "
        f"jax backend is {backend}. Run on a {platform} machine or pass {OPT_PLATFORM}={backend}.")


def pytest_configure(config: pytest.Config) -> None:
  corpus = None
  corpus_root = None
  if hasattr(config, "workerinput"):
    root = config.workerinput.get(CORPUS_ROOT_KEY)
    corpus_root = Path(root) if root else None
  elif config.getoption("jaxport_jax_corpus"):
    _options(config)  # refuse bad combinations before importing anything
    _check_backend(config.getoption("jaxport_platform"))
    corpus = _jax_corpus.import_corpus(config.getoption("jaxport_platform"))
    corpus_root = corpus.root
  options = _options(config, corpus_root)
  if not hasattr(config, "workerinput") and corpus is None:
    _check_backend(options.platform)
  config.stash[session_key] = HarnessSession(options, corpus)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
  """xdist: workers replay the store the controller imported the corpus into, and share its
  compile cache."""
  session = harness_session(node.config)
  if session.corpus is not None:
    node.workerinput[CORPUS_ROOT_KEY] = str(session.corpus.root)
  cache = session.compile_cache_dir()
  if cache is not None:
    node.workerinput[WORKER_CACHE_KEY] = str(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
  hs = config.stash.get(session_key, None)
  if hs is not None and hs.corpus is not None:
    shutil.rmtree(hs.corpus.root, ignore_errors=True)


def harness_session(config: pytest.Config) -> HarnessSession:
  return config.stash[session_key]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
  session = harness_session(metafunc.config)
  if "golden_entry" in metafunc.fixturenames:
    if session.recording:
      ids, params = ["record-mode"], [pytest.param(None, marks=pytest.mark.skip(
          reason="record mode writes entries; run without --record to replay"))]
    else:
      ids = params = session.selected_entry_ids()
    metafunc.parametrize("golden_entry", params, ids=ids)
  if "golden_case" in metafunc.fixturenames:
    if session.recording:
      ids = params = session.case_ids()
    else:
      ids, params = ["replay-mode"], [pytest.param(None, marks=pytest.mark.skip(
          reason=f"recording happens only with {OPT_RECORD}"))]
    metafunc.parametrize("golden_case", params, ids=ids)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
  """In shards other than the first, skip the tests that are not replays (the fuzz suite)."""
  shard = harness_session(config).options.shard
  if shard is None or shard.index == 1:
    return
  skip = pytest.mark.skip(reason=f"the fuzz suite runs in shard 1/{shard.count} only")
  here = Path(__file__).resolve().parent
  for item in items:
    if (Path(item.path).resolve().is_relative_to(here)
        and not {"golden_entry", "golden_case"} & set(getattr(item, "fixturenames", ()))):
      item.add_marker(skip)


@pytest.fixture
def harness(request) -> HarnessSession:
  return harness_session(request.config)


def pytest_testnodedown(node, error) -> None:
  payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
  if payload is not None:
    harness_session(node.config).merge(payload)


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
  config = session.config
  hs = harness_session(config)
  hs.flush_writes()
  hs.close()
  if hasattr(config, "workerinput"):
    config.workeroutput[WORKER_OUTPUT_KEY] = hs.worker_output()
    return
  if hs.finish() and session.exitstatus == pytest.ExitCode.OK:
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
  hs = harness_session(config)
  if hs.report is None:
    return
  from harness import reporter
  terminalreporter.section("jaxport compat harness")
  for line in reporter.text_lines(hs.report):
    terminalreporter.write_line(line)
