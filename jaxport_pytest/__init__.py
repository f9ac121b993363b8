"""The pytest entry point of jaxport's compat harness (``pytest11``), kept light on purpose.

Every pytest run in an environment with jaxport installed loads this module, so
it imports no jax and of jaxport only the jax-free settings table
``jaxport.harness._controller._settings`` (every option's name, default, help and validator, the
presets, the platforms): it declares the namespaced ``--compat-*`` options and the
``jaxport_*`` configuration keys, and only in a project that opted in (``jaxport_cases``
in its pytest configuration) registers the harness plugin proper,
``jaxport.harness._controller._plugin``. See ``docs/downstream.md``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest


def _load_settings():
  """The settings table, and the warnings importing jaxport gave (a jax newer than tested):
  they are shown only in a project that opted in. Where jaxport refuses the installed jax
  the plugin stays inert (None), and a later ``import jaxport`` raises the refusal again."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
      from jaxport.harness._controller import _settings  # local: a refused jax leaves the plugin inert
    except ImportError:  # jaxport.JaxVersionError: a jax older than jaxport supports
      for name in [m for m in sys.modules if m == "jaxport" or m.startswith("jaxport.")]:
        del sys.modules[name]
      return None, []
  return _settings, list(caught)


_settings, _IMPORT_WARNINGS = _load_settings()
if _settings is not None:
  from jaxport.harness._controller._settings import (INI_BUILTIN_TARGETS, INI_CASES, INI_EFFECTS,
                                                     INI_EXPECTATIONS, INI_ON_CHANGE,
                                                     INI_RELEASE_CASES, INI_SHIPPED_EXPIRED,
                                                     INI_STORE, INI_TARGETS, INI_TESTS, PLATFORMS,
                                                     dest)

__all__ = ["INI_BUILTIN_TARGETS", "INI_CASES", "INI_EFFECTS", "INI_EXPECTATIONS", "INI_ON_CHANGE",
           "INI_RELEASE_CASES", "INI_SHIPPED_EXPIRED", "INI_STORE", "INI_TARGETS", "INI_TESTS", "PLATFORMS", "PLUGIN_NAME",
           "dest", "hypothesis_profile", "opted_in"]

PLUGIN_NAME = "jaxport-harness"


def pytest_addoption(parser: pytest.Parser) -> None:
  if _settings is None:
    return
  group = parser.getgroup("jaxport", "jaxport compat harness (docs/downstream.md)")
  for field in (*_settings.FIELDS, _settings.PRESET_FIELD):
    group.addoption(field.flag, **field.argparse_kwargs())
  parser.addini(INI_CASES, type="args", default=[],
                help="jaxport: modules whose cases() the compat harness records and replays")
  parser.addini(INI_STORE, default=None,
                help="jaxport: the golden store directory, relative to the configuration file")
  parser.addini(INI_TARGETS, default=None,
                help="jaxport: JSON file of the custom-call targets the project guarantees")
  parser.addini(INI_ON_CHANGE, default="fail",
                help="jaxport: 'fail' (default) or 'warn' when a case's function changed")
  parser.addini(INI_SHIPPED_EXPIRED, default="fail",
                help="jaxport: 'fail' (default) or 'warn' when the installed jax refuses an "
                     "imported artifact's envelope as expired")
  parser.addini(INI_EXPECTATIONS, default=None,
                help="jaxport: JSON table of producer releases' expected failures")
  parser.addini(INI_BUILTIN_TARGETS, type="bool", default=False,
                help="jaxport: coverage also requires every target of jaxport's own table")
  parser.addini(INI_TESTS, type="args", default=[],
                help="jaxport: files holding the golden test items (what --compat-only runs)")
  parser.addini(INI_RELEASE_CASES, type="args", default=[],
                help="jaxport: modules whose cases() record --with-jax records with each "
                     "release's own jax.export")
  parser.addini(INI_EFFECTS, type="args", default=[],
                help="jaxport: modules of the effect types the project's functions use, "
                     "imported first by a release's replayer")


def opted_in(config: pytest.Config) -> bool:
  """Whether the project's pytest configuration opts in (case modules or a golden store)."""
  return _settings is not None and _settings.opted_in(config)


def _given(config: pytest.Config) -> list[str]:
  return [f.flag for f in (*_settings.FIELDS, _settings.PRESET_FIELD)
          if getattr(config.option, f.dest, None)]


def hypothesis_profile(config: pytest.Config) -> str | None:
  """The Hypothesis profile the run's ``--compat-preset`` selects, or None without a preset
  (or with an unknown one, which the harness refuses). A project's conftest loads it when
  ``--hypothesis-profile`` is not given; the project registers the profiles itself."""
  name = getattr(config.option, _settings.PRESET_FIELD.dest, None)
  found = _settings.PRESETS.get(name) if name else None
  return found.hypothesis_profile if found is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
  if _settings is None:
    return
  if not opted_in(config):
    given = _given(config)
    if given:
      raise pytest.UsageError(
          f"{', '.join(given)}: this project has not opted into the jaxport compat harness. "
          f"Name its case modules and golden store in the pytest configuration, e.g. "
          f"[tool.pytest.ini_options] {INI_CASES} = [\"mypkg.golden_cases\"] and "
          f"{INI_STORE} = \"golden\" (see jaxport's docs/downstream.md).")
    return
  for w in _IMPORT_WARNINGS:
    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
  from jaxport.harness._controller import _plugin  # local: only an opted-in project loads the plugin
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
