"""The pytest entry point of jaxport's compat harness (``pytest11``), kept light on purpose.

Every pytest run in an environment with jaxport installed loads this module, so
it imports neither jax nor jaxport: it declares the namespaced ``--compat-*``
options and the ``jaxport_*`` configuration keys, and only in a project that
opted in (``jaxport_cases`` in its pytest configuration) registers the harness
plugin proper, ``jaxport.harness._plugin``. See ``docs/downstream.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# The configuration keys of a project ([tool.pytest.ini_options] or pytest.ini).
INI_CASES = "jaxport_cases"
INI_STORE = "jaxport_store"
INI_TARGETS = "jaxport_stable_targets"
INI_ON_CHANGE = "jaxport_on_change"
INI_EXPECTATIONS = "jaxport_expectations"
INI_BUILTIN_TARGETS = "jaxport_require_builtin_targets"
INI_TESTS = "jaxport_tests"

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
PLUGIN_NAME = "jaxport-harness"

# (flags, keyword arguments) of every option; all default to None so that the
# harness can tell an option given from one left out, and resolve defaults itself.
OPTIONS = (
    (("--compat-platform",), dict(choices=PLATFORMS, help="platform whose golden entries are "
                                  "replayed or recorded (default: cpu)")),
    (("--compat-record",), dict(action="store_true", help="record a new dated golden entry for "
                                "every selected case instead of replaying")),
    (("--compat-update",), dict(action="store_true", help="replay, then record a new dated entry "
                                "for each case whose function changed, and show what changed")),
    (("--compat-strict",), dict(action="store_true", help="also fail on drift, stale targets and "
                                "expired entries (pytest's --strict implies it)")),
    (("--compat-report",), dict(metavar="FILE.json", help="write the compatibility report here")),
    (("--compat-window-days",), dict(type=int, metavar="DAYS", help="entries older than this are "
                                     "reported as expired (default 180)")),
    (("--compat-store",), dict(metavar="DIR", help="golden store to replay or record into "
                               f"(default: the project's {INI_STORE})")),
    (("--compat-today",), dict(metavar="YYYY-MM-DD", help="the date used for recording and "
                               "expiry (default: today)")),
    (("--compat-worker-timeout",), dict(metavar="SECONDS", help="seconds one entry may take "
                                        "before its worker is killed (default 300)")),
    (("--compat-worker-memory-mb",), dict(metavar="MB", help="megabytes (MiB) of resident "
                                          "memory a worker may use while it replays or records "
                                          "an entry before it is killed (default 8192)")),
    (("--compat-jax-corpus",), dict(action="store_true", help="import the installed jax's own "
                                    "back-compat corpus into a temporary store and replay it")),
    (("--compat-cache-dir",), dict(metavar="DIR", help="also keep compiled executables in DIR "
                                   "for later runs (default: in memory, for this run)")),
    (("--compat-no-cache",), dict(action="store_true", help="compile every module, sharing no "
                                  "executable")),
    (("--compat-cold",), dict(action="store_true", help="replay each reader of each entry in a "
                              "fresh process that has compiled nothing before")),
    (("--compat-shard",), dict(metavar="I/N", help="replay only shard I of N of the store")),
    (("--compat-costs",), dict(metavar="FILE.json", help="per-entry seconds written by "
                               "--compat-timings, to balance --compat-shard")),
    (("--compat-timings",), dict(metavar="FILE.json", help="write each replayed entry's seconds "
                                 "here")),
    (("--compat-only",), dict(action="store_true", help="run only the golden replay or record "
                              f"items (those in {INI_TESTS} when the project lists them)")),
)


def dest(flag: str) -> str:
  """The attribute of ``config.option`` an option is stored in (``--compat-x-y`` -> ``compat_x_y``)."""
  return flag.lstrip("-").replace("-", "_")


def pytest_addoption(parser: pytest.Parser) -> None:
  group = parser.getgroup("jaxport", "jaxport compat harness (docs/downstream.md)")
  for flags, kwargs in OPTIONS:
    group.addoption(*flags, dest=dest(flags[0]), default=None, **kwargs)
  parser.addini(INI_CASES, type="args", default=[],
                help="jaxport: modules whose cases() the compat harness records and replays")
  parser.addini(INI_STORE, default=None,
                help="jaxport: the golden store directory, relative to the configuration file")
  parser.addini(INI_TARGETS, default=None,
                help="jaxport: JSON file of the custom-call targets the project guarantees")
  parser.addini(INI_ON_CHANGE, default="fail",
                help="jaxport: 'fail' (default) or 'warn' when a case's function changed")
  parser.addini(INI_EXPECTATIONS, default=None,
                help="jaxport: JSON table of producer releases' expected failures")
  parser.addini(INI_BUILTIN_TARGETS, type="bool", default=False,
                help="jaxport: coverage also requires every target of jaxport's own table")
  parser.addini(INI_TESTS, type="args", default=[],
                help="jaxport: files holding the golden test items (what --compat-only runs)")


def opted_in(config: pytest.Config) -> bool:
  """Whether the project's pytest configuration names case modules."""
  return bool(config.getini(INI_CASES))


def _given(config: pytest.Config) -> list[str]:
  return [flags[0] for flags, _ in OPTIONS if getattr(config.option, dest(flags[0]), None)]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
  if not opted_in(config):
    given = _given(config)
    if given:
      raise pytest.UsageError(
          f"{', '.join(given)}: this project has not opted into the jaxport compat harness. "
          f"Name its case modules and golden store in the pytest configuration, e.g. "
          f"[tool.pytest.ini_options] {INI_CASES} = [\"mypkg.golden_cases\"] and "
          f"{INI_STORE} = \"golden\" (see jaxport's docs/downstream.md).")
    return
  from jaxport.harness import _plugin
  if not config.pluginmanager.has_plugin(PLUGIN_NAME):
    config.pluginmanager.register(_plugin, PLUGIN_NAME)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
  """With ``--compat-only``, collect only the files the project lists in ``jaxport_tests``."""
  if not getattr(config.option, "compat_only", None) or not opted_in(config):
    return None
  listed = config.getini(INI_TESTS)
  if not listed:
    return None
  base = config.inipath.parent if config.inipath else config.rootpath
  wanted = [(base / p).resolve() for p in listed]
  path = collection_path.resolve()
  if any(path == w or path in w.parents or w in path.parents for w in wanted):
    return None
  return True
