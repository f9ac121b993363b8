"""The compat harness as a pytest plugin: options resolved, then delegation to the session.

Registered by the light entry point ``jaxport_pytest`` only in a project that
opted in. The :class:`~jaxport.harness._controller._session.HarnessSession` is made on first
use (a golden test item, an xdist worker's results), so a run of the project's
other tests does no harness work and prints nothing.
"""

from __future__ import annotations

import shutil
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from jaxport._signals import interrupts_held, stop_once
from jaxport.errors import GoldenDataError, JaxportError, SettingsError
from jaxport.golden._entry_id import EntryId
from jaxport.harness import _devices
from jaxport._platforms import is_host
from jaxport.harness._controller import _jax_corpus, _settings
from jaxport.harness._project import OnChange, Project, ProjectTargets, module_names
from jaxport.harness._registry import missing_modules
from jaxport.harness._controller._session import WORKER_OUTPUT_KEY, HarnessSession
from jaxport.harness._controller._worker_pool import LOOKAHEAD
from jaxport.harness._controller._settings import (
    INI_BUILTIN_TARGETS, INI_CASES, INI_EFFECTS, INI_EXPECTATIONS, INI_ON_CHANGE,
    INI_RELEASE_CASES, INI_SHIPPED_EXPIRED, INI_STORE, INI_TARGETS, INI_TESTS, Options, Settings,
    opted_in)
# How the controller tells xdist workers where it imported the corpus and where executables are.
CORPUS_ROOT_KEY = "jaxport_jax_corpus_root"
WORKER_CACHE_KEY = "jaxport_compile_cache"
# The fixtures whose tests are golden items.
ENTRY_FIXTURE = "golden_entry"
CASE_FIXTURE = "golden_case"
COMPAT_FIXTURES = frozenset({ENTRY_FIXTURE, CASE_FIXTURE})
# The one golden replay item of a project that has recorded nothing yet.
NO_STORE = "no-golden-store-yet"

session_key = pytest.StashKey[HarnessSession]()
_restore_signals = pytest.StashKey[Callable[[], None]]()
project_key = pytest.StashKey[Project]()
settings_key = pytest.StashKey[Settings]()


def settings(config: pytest.Config) -> Settings:
  """The run's settings: defaults, the ``--compat-preset``'s values, the options given (read and
  validated once per run; a bad value is a usage error naming the option)."""
  if settings_key not in config.stash:
    given = {f.name: getattr(config.option, f.dest, None) for f in _settings.FIELDS}
    # An xdist worker shares the compile cache its controller chose.
    given["cache_dir"] = (given["cache_dir"]
                          or getattr(config, "workerinput", {}).get(WORKER_CACHE_KEY))
    try:
      config.stash[settings_key] = _settings.resolve(
          given, getattr(config.option, _settings.PRESET_FIELD.dest, None))
    except SettingsError as e:
      raise pytest.UsageError(str(e)) from None
  return config.stash[settings_key]


def _base(config: pytest.Config) -> Path:
  """The directory the configuration's relative paths start from."""
  return config.inipath.parent if config.inipath else config.rootpath


def project(config: pytest.Config) -> Project:
  """The project as its pytest configuration declares it (read once per run)."""
  if project_key not in config.stash:
    config.stash[project_key] = _read_project(config)
  return config.stash[project_key]


def _read_project(config: pytest.Config) -> Project:
  base = _base(config)

  def path(key: str) -> Path | None:
    value = config.getini(key)
    if value and not isinstance(value, str):
      raise GoldenDataError(f"{key} = {value!r}: expected one path (a string), relative to "
                            "the configuration file")
    return (base / value).resolve() if value else None

  try:
    modules = module_names(config.getini(INI_CASES))
    release_cases = module_names(config.getini(INI_RELEASE_CASES), INI_RELEASE_CASES)
    effects = module_names(config.getini(INI_EFFECTS), INI_EFFECTS)
    store = path(INI_STORE)
    if store is None:
      raise GoldenDataError(f"{INI_CASES} is set but {INI_STORE} is not: name the "
                            "golden store directory (relative to the configuration file)")
    targets_file = path(INI_TARGETS)
    targets = ProjectTargets.read(targets_file) if targets_file else ProjectTargets()
    try:
      on_change = OnChange(config.getini(INI_ON_CHANGE))
    except ValueError:
      raise GoldenDataError(f"{INI_ON_CHANGE} = {config.getini(INI_ON_CHANGE)!r}: "
                            f"expected one of {[c.value for c in OnChange]}") from None
    shipped_expired = config.getini(INI_SHIPPED_EXPIRED)
    if shipped_expired not in ("fail", "warn"):
      raise GoldenDataError(f"{INI_SHIPPED_EXPIRED} = {shipped_expired!r}: expected 'fail' or "
                            "'warn'")
    missing = [p for p in config.getini(INI_TESTS) if not (base / p).exists()]
    if missing:
      raise GoldenDataError(
          f"{INI_TESTS} names {missing}, which do not exist (relative to {base}): create "
          f"each golden test file with the line '{GOLDEN_TESTS_LINE}', or name the files that "
          "hold it")
  except GoldenDataError as e:
    raise pytest.UsageError(f"jaxport compat harness configuration: {e}") from None
  paths = tuple(dict.fromkeys([str(base), *(p for p in sys.path if p and _within(p, base))]))
  return Project(case_modules=modules, store=store, targets=targets, on_change=on_change,
                 require_builtin_targets=bool(config.getini(INI_BUILTIN_TARGETS)),
                 expectations=path(INI_EXPECTATIONS), root=base, paths=paths,
                 targets_file=targets_file, release_case_modules=release_cases,
                 effect_modules=effects, shipped_expired_fails=shipped_expired == "fail")


def _within(p: str, base: Path) -> bool:
  try:
    return Path(p).resolve().is_relative_to(base)
  except OSError:
    return False


def _options(config: pytest.Config, corpus_root: Path | None = None) -> Options:
  """The session's options: the run's settings, with the store and paths resolved."""
  s = settings(config)
  explicit = bool(s.store)
  root = Path(s.store) if s.store else project(config).store
  if corpus_root is not None:
    root = corpus_root
  if not s.record and not root.is_dir():
    if explicit:
      raise pytest.UsageError(
          f"--compat-store={root}: no such directory, so there is no golden store to replay. "
          "Pass the path of an existing store, or record one with --compat-record.")
    raise pytest.UsageError(_no_store_message(root))
  get = config.getoption
  partial = bool(get("keyword") or get("markexpr") or get("deselect", None)
                 or any("::" in str(a) for a in config.args))
  return Options.for_run(s, golden_root=root.resolve(), partial=partial,
                         project_root=_base(config).resolve(),
                         invocation_dir=config.invocation_params.dir,
                         pytest_strict=_pytest_strict(config))


def _no_store_message(root: Path) -> str:
  return (f"no golden store yet: {INI_STORE} names {root}, which does not exist. Record "
          "the project's cases first with `pytest --compat-record`, review the new entries and "
          "commit them; later runs replay them.")


def store_not_recorded(config: pytest.Config) -> str | None:
  """Why there is nothing to replay yet, when the project's own store (no ``--compat-store``)
  does not exist and the run neither records nor imports the jax corpus; else None.

  Such a run is not a usage error: the project's other tests run, and each golden test item
  fails alone with this message, naming the command that records."""
  s = settings(config)
  if s.record or s.store or s.jax_corpus or config.stash.get(session_key, None) is not None:
    return None
  root = project(config).store
  return None if root.is_dir() else _no_store_message(root)


def _pytest_strict(config: pytest.Config) -> bool:
  """pytest's own ``--strict`` (the ``strict`` ini option of pytest >= 9)."""
  try:
    return bool(config.getini("strict"))
  except ValueError:
    return False


def _xdist_workers(config: pytest.Config) -> int | str | None:
  """How many xdist workers the run asked for (``-n``; None without xdist or ``-n``)."""
  n = getattr(config.option, "numprocesses", None)
  if getattr(config.option, "dist", "no") == "no" and not n:
    return None
  return n


def _check_platform(config: pytest.Config) -> None:
  """Refuse a run on an accelerator that cannot work, before its tests: ``-n`` above 1 where
  one process at a time can hold the device, or a worker whose backend is another platform.
  The worker is asked (this process opens no device and imports no jax); an xdist
  controller leaves the asking to its workers, and a CPU run asks nothing."""
  platform = settings(config).platform
  if is_host(platform):
    return
  workers = _xdist_workers(config)
  if _devices.single_holder(platform) and workers not in (None, 0, 1):
    raise pytest.UsageError(
        f"-n {workers} with --compat-platform={platform}: one process at a time can hold a "
        f"{platform} chip, and each xdist worker would start a harness worker that opens it, so "
        f"every one but the first would fail. Replay {platform} entries without -n (one "
        "worker replays them all, and the chip is opened once).")
  if workers or hasattr(config, "workerinput"):
    return
  check = harness_session(config).devices()
  if check.mismatch:
    raise pytest.UsageError(check.problem)


class _CasesDuringRun:
  """Once the first result arrives, import the project's case modules on a background thread
  where this process will need them and no worker lists them for it (an xdist controller, a
  cold replay, an update), so that the end-of-run checks find them loaded."""

  def __init__(self, config: pytest.Config):
    self.config = config
    self.started = False

  def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
    hs = _started(self.config)
    if not self.started and hs is not None:
      self.started = True
      hs.prefetch_cases()


def pytest_configure(config: pytest.Config) -> None:
  """Check the configuration now; with --compat-jax-corpus, import the corpus before workers
  start (the session itself is made on first use)."""
  project(config)
  # SIGTERM ends the run as Ctrl-C does, and only the first stop interrupts: sessionfinish
  # commits what was recorded.
  config.stash[_restore_signals] = stop_once("the harness stops and commits what it finished")
  if hasattr(config, "workerinput"):
    return
  config.pluginmanager.register(_CasesDuringRun(config), "jaxport-cases-during-run")
  proj = project(config)
  missing = missing_modules(proj.case_modules, proj.paths)
  if missing:
    raise pytest.UsageError(
        f"jaxport compat harness configuration: case module(s) {missing} of {INI_CASES} "
        f"cannot be found (looked in {proj.root} and on sys.path); check the spelling in the "
        "pytest configuration, or install the package that holds them")
  s = settings(config)
  if s.jax_corpus:
    _options(config)  # refuse bad combinations before importing anything
    try:
      corpus = _jax_corpus.import_corpus(s.platform)
    except JaxportError as e:
      raise pytest.UsageError(f"--compat-jax-corpus: {e}") from None
    _start(config, corpus.root, corpus)
    try:
      _check_platform(config)
    except BaseException:
      # A refused run ends here, before pytest would unconfigure a session it never began.
      shutil.rmtree(corpus.root, ignore_errors=True)
      raise
  else:
    if store_not_recorded(config) is None:
      _options(config)
    if "platform" in s.given:
      # Asked for by name: refuse a platform this machine lacks now, as a usage error, not
      # later inside the collection of the golden tests.
      _check_platform(config)


def _start(config: pytest.Config, corpus_root: Path | None = None,
           corpus: _jax_corpus.CorpusImport | None = None) -> HarnessSession:
  options = _options(config, corpus_root)
  session = HarnessSession(options, project(config), corpus)
  config.stash[session_key] = session
  return session


def harness_session(config: pytest.Config) -> HarnessSession:
  """The run's session, made on first use."""
  session = config.stash.get(session_key, None)
  if session is None:
    root = getattr(config, "workerinput", {}).get(CORPUS_ROOT_KEY)
    session = _start(config, Path(root) if root else None)
  return session


def _started(config: pytest.Config) -> HarnessSession | None:
  return config.stash.get(session_key, None)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
  """xdist: workers replay the store the controller imported the corpus into, and share its
  compile cache."""
  if store_not_recorded(node.config) is not None:
    return  # each worker's golden items fail alone, naming the record command
  session = harness_session(node.config)
  if session.corpus is not None:
    node.workerinput[CORPUS_ROOT_KEY] = str(session.corpus.root)
  cache = session.compile_cache_dir()
  if cache is not None:
    node.workerinput[WORKER_CACHE_KEY] = str(cache)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
  payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
  if payload is not None:
    harness_session(node.config).merge(payload)


def pytest_unconfigure(config: pytest.Config) -> None:
  config.stash.get(_restore_signals, lambda: None)()
  hs = _started(config)
  if hs is not None:
    hs.close()  # a no-op after sessionfinish; after an interrupt before it, the cleanup
  if hs is not None and hs.corpus is not None:
    shutil.rmtree(hs.corpus.root, ignore_errors=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
  if not COMPAT_FIXTURES & set(metafunc.fixturenames):
    return
  try:
    _parametrize(metafunc)
    return
  except GoldenDataError as e:
    problem = str(e)
  # The case modules or the store cannot be read: one message, not a traceback.
  pytest.fail(f"jaxport compat harness: {problem}", pytrace=False)


def _parametrize(metafunc: pytest.Metafunc) -> None:
  if store_not_recorded(metafunc.config) is not None:
    # One item that fails naming the record command (in compat_harness); no session.
    if ENTRY_FIXTURE in metafunc.fixturenames:
      metafunc.parametrize(ENTRY_FIXTURE, [NO_STORE], ids=[NO_STORE])
    if CASE_FIXTURE in metafunc.fixturenames:
      metafunc.parametrize(CASE_FIXTURE, [None], ids=["replay-mode"])
    return
  session = harness_session(metafunc.config)
  session.used = True
  if ENTRY_FIXTURE in metafunc.fixturenames:
    if session.recording:
      ids, params = ["record-mode"], [pytest.param(None, marks=pytest.mark.skip(
          reason="record mode writes entries; run without --compat-record to replay"))]
    else:
      params = session.selected_entry_ids()
      ids = [str(e) for e in params]  # the test ids users select with -k: the ids' texts
      if params and not metafunc.config.option.collectonly:
        session.prepare(params[0])  # the worker loads while pytest collects the rest
      if not metafunc.config.option.collectonly:
        # Case modules that fail to load are one failure here, naming the module, not a
        # failure of every entry (the report and the summary still say it at the end).
        session.case_facts()
    metafunc.parametrize(ENTRY_FIXTURE, params, ids=ids)
  if CASE_FIXTURE in metafunc.fixturenames:
    if session.recording:
      ids = params = session.case_ids()
    else:
      ids, params = ["replay-mode"], [pytest.param(None, marks=pytest.mark.skip(
          reason="recording happens only with --compat-record"))]
    metafunc.parametrize(CASE_FIXTURE, params, ids=ids)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
  """Start the worker of the first golden entry while pytest collects, when the paths asked
  for include the project's golden test files (``jaxport_tests``)."""
  config = session.config
  if (config.pluginmanager.has_plugin("dsession") or config.option.collectonly
      or settings(config).record or settings(config).cold
      or not _asks_for_golden_tests(config)):
    return
  if store_not_recorded(config) is not None:
    return
  try:
    hs = harness_session(config)
    first = next(iter(hs.selected_entry_ids()), None)
  except (GoldenDataError, pytest.UsageError):
    return  # collection reports it
  if first is not None:
    hs.prepare(first)


def pytest_collection_finish(session: pytest.Session) -> None:
  """Once this process knows the items it runs in order (not in an xdist worker, which the
  controller hands items as it goes), every worker their golden entries need starts with the
  first replay: a worker for another device count starts while the first replays instead of
  when its entries near."""
  config = session.config
  hs = _started(config)
  if (hs is None or hasattr(config, "workerinput") or config.option.collectonly
      or config.pluginmanager.has_plugin("dsession")):
    return
  hs.expect(e for e in map(_entry_of, session.items) if e is not None)


def _asks_for_golden_tests(config: pytest.Config) -> bool:
  listed = config.getini(INI_TESTS)
  if not listed:
    return False
  base = config.inipath.parent if config.inipath else config.rootpath
  golden = [(base / p).resolve() for p in listed]
  asked = [(config.invocation_params.dir / str(a).split("::")[0]).resolve()
           for a in config.args]
  return any(g == a or a in g.parents for g in golden for a in asked)


def _is_golden(item: pytest.Item) -> bool:
  return bool(COMPAT_FIXTURES & set(getattr(item, "fixturenames", ())))


def _placeholder(item: pytest.Item) -> bool:
  """Whether ``item`` is the one item of the golden test the mode leaves without work: the
  record item of a replay run, or the replay item of a record run."""
  callspec = getattr(item, "callspec", None)
  params = callspec.params if callspec is not None else {}
  return any(f in params and params[f] is None for f in (ENTRY_FIXTURE, CASE_FIXTURE))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
  """The golden test the run's mode does not use is deselected (a replay run has no record
  item, and the reverse); ``--compat-only`` keeps the golden items alone; in shards other than
  the first, the project's other tests are skipped (they run once, in shard 1)."""
  unused = [i for i in items if _placeholder(i)]
  if unused:
    config.hook.pytest_deselected(items=unused)
    items[:] = [i for i in items if not _placeholder(i)]
  if settings(config).only:
    others = [i for i in items if not _is_golden(i)]
    if others:
      config.hook.pytest_deselected(items=others)
      items[:] = [i for i in items if _is_golden(i)]
  shard = settings(config).shard
  hs = _started(config)
  if not shard or hs is None or hs.options.settings.shard is None or shard.index == 1:
    return
  skip = pytest.mark.skip(reason=f"tests other than golden replays run in shard "
                                 f"1/{shard.count} only")
  for item in items:
    if not _is_golden(item):
      item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
  """Start the worker the next golden entry needs while this item runs, and those of the
  entries a little further ahead (``LOOKAHEAD``), where this process runs its items in order."""
  hs = _started(item.config)
  entry_id = _entry_of(nextitem)
  if hs is not None and entry_id is not None:
    hs.prepare(entry_id, _ahead(item, nextitem))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
  """A golden entry's replay that ended as an expected failure is reported as xfailed."""
  report = (yield).get_result()
  entry_id = _entry_of(item)
  hs = _started(item.config) if entry_id is not None and call.when == "call" else None
  if hs is not None and report.passed:
    reason = hs.take_expected_failure(entry_id)
    if reason is not None:
      report.outcome = "skipped"
      report.wasxfail = reason


def _entry_of(item: pytest.Item | None) -> EntryId | None:
  callspec = getattr(item, "callspec", None)
  entry_id = callspec.params.get(ENTRY_FIXTURE) if callspec is not None else None
  return entry_id if isinstance(entry_id, EntryId) else None


_ORDER = pytest.StashKey[dict[str, int]]()


def _ahead(item: pytest.Item, nextitem: pytest.Item) -> list[EntryId]:
  """The golden entries of the items that run after ``nextitem`` (up to ``LOOKAHEAD``); none
  in an xdist worker, whose next items the controller hands out as it goes."""
  config = item.config
  if hasattr(config, "workerinput"):
    return []
  items = item.session.items
  order = config.stash.get(_ORDER, None)
  if order is None or len(order) != len(items):
    order = config.stash[_ORDER] = {it.nodeid: i for i, it in enumerate(items)}
  at = order.get(nextitem.nodeid)
  if at is None or items[at] is not nextitem:
    return []
  return [e for e in map(_entry_of, items[at + 1:at + 1 + LOOKAHEAD]) if e is not None]


class _NothingRecorded:
  """What the golden replay item gets before the project's first record: its replay fails,
  naming the command that records."""

  def __init__(self, message: str):
    self.message = message

  def check_replay(self, entry_id: EntryId) -> None:
    pytest.fail(f"jaxport compat harness: {self.message}", pytrace=False)


@pytest.fixture
def compat_harness(request) -> HarnessSession | _NothingRecorded:
  """The run's harness session (golden test items call its ``check_replay``/``check_record``)."""
  missing = store_not_recorded(request.config)
  if missing is not None:
    return _NothingRecorded(missing)
  return harness_session(request.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
  config = session.config
  hs = _started(config)
  if hs is None:
    return
  try:
    with interrupts_held("committing the recorded entries to the store"):
      if hs.options.settings.update and hs.used and not hasattr(config, "workerinput"):
        hs.apply_updates()
      hs.flush_writes()
  finally:  # even when interrupted: the workers stop and the staging folder goes
    hs.close()
  if hasattr(config, "workerinput"):
    if hs.used:
      config.workeroutput[WORKER_OUTPUT_KEY] = hs.worker_output()
    return
  if not hs.used or config.option.collectonly:
    return  # nothing replayed or recorded, so nothing to judge or report
  if hs.finish() and session.exitstatus == pytest.ExitCode.OK:
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# What a project's golden test file holds: the items the harness parametrizes.
GOLDEN_TESTS_LINE = "from jaxport.harness.testing import test_record, test_replay"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
  hs = _started(config)
  if (exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and opted_in(config)
      and (hs is None or not hs.used)):
    terminalreporter.write_line(
        f"jaxport compat harness: the project opts in ({INI_CASES}) but pytest collected "
        f"no golden test item: a test file among the paths pytest collects must hold the line "
        f"'{GOLDEN_TESTS_LINE}' (and be listed in {INI_TESTS}).", yellow=True)
  if hs is None or hs.report is None:
    return
  from jaxport.harness._controller import _reporter  # local: loaded only by a run that shows a report
  terminalreporter.section("jaxport compat harness")
  for line in _reporter.text_lines(hs.report):
    terminalreporter.write_line(line)
  if hs.report.session_failures:
    # pytest's closing line counts what it knows; the run failed for these too, so it says so
    # ("14 passed, 1 jaxport session failure") rather than ending on "14 passed".
    key = "jaxport session failure" + ("s" if len(hs.report.session_failures) > 1 else "")
    terminalreporter.stats.setdefault(key, []).extend(
        types.SimpleNamespace(nodeid="jaxport compat harness", when="session", longrepr=failure,
                              count_towards_summary=True)
        for failure in hs.report.session_failures)
