"""The harness's one settings layer: defaults defined once and quoted by the help text, a
validator per option keeping its message, presets under explicit options, and the entry
point that declares every option from the table."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jaxport_pytest
from jaxport._vocabulary import EXPIRY_WINDOW_DAYS, WORKER_TIMEOUT_S
from jaxport.errors import JaxportError, SettingsError
from jaxport.harness._controller import _settings
from jaxport.harness._controller._settings import FIELDS, FIELDS_BY_NAME, PRESETS, Settings, resolve
from jaxport._platforms import PLATFORMS

pytest_plugins = ["pytester"]


def test_defaults_are_those_of_the_table_and_the_help_text_quotes_them():
  s = resolve({})
  for field in FIELDS:
    assert getattr(s, field.name) == field.default, field.name
  assert s.window_days == EXPIRY_WINDOW_DAYS and s.worker_timeout_s == WORKER_TIMEOUT_S
  assert s.given == frozenset() and s.preset is None and s.hypothesis_profile is None
  assert f"(default {EXPIRY_WINDOW_DAYS})" in FIELDS_BY_NAME["window_days"].help_text()
  assert f"(default {WORKER_TIMEOUT_S:g})" in FIELDS_BY_NAME["worker_timeout_s"].help_text()
  assert "(default: cpu)" in FIELDS_BY_NAME["platform"].help_text()
  assert "{default}" not in " ".join(f.help_text() for f in FIELDS)


def test_the_settings_object_has_exactly_one_attribute_per_field():
  names = {f.name for f in FIELDS}
  attributes = set(Settings.__dataclass_fields__) - {"preset", "hypothesis_profile", "given"}
  assert names == attributes
  assert len({f.flag for f in FIELDS}) == len(FIELDS)


def test_every_option_is_declared_with_none_as_its_default(pytester):
  pytester.makeini("[pytest]\n")
  config = pytester.parseconfig()
  for field in (*FIELDS, _settings.PRESET_FIELD):
    assert getattr(config.option, field.dest) is None, field.flag


@pytest.mark.parametrize("given, message", [
    ({"today": "2026-13-01"}, "--compat-today='2026-13-01': expected a date YYYY-MM-DD"),
    ({"window_days": -1}, "--compat-window-days must be >= 0, got -1"),
    ({"worker_timeout_s": "0"}, "--compat-worker-timeout=0: expected seconds above 0"),
    ({"worker_memory_mb": "63"}, "--compat-worker-memory-mb=63: expected a whole number"),
    ({"shard": "3/2"}, "shard '3/2': expected I/N"),
    ({"record": True, "update": True}, "--compat-record records every case and --compat-update"),
    ({"jax_corpus": True, "store": "x"}, "--compat-jax-corpus replays its own temporary store"),
    ({"update": True, "shard": "1/2"}, "--compat-update records the changed cases"),
    ({"cache_dir": "c", "no_cache": True}, "--compat-cache-dir and --compat-no-cache contradict"),
    ({"platform": "gpu"}, f"--compat-platform='gpu': expected one of {', '.join(PLATFORMS)}"),
])
def test_each_bad_value_is_refused_with_the_options_message(given, message):
  with pytest.raises(SettingsError) as e:
    resolve(given)
  assert message in str(e.value)
  assert isinstance(e.value, JaxportError) and isinstance(e.value, ValueError)


def test_a_file_where_a_directory_is_wanted_is_refused(tmp_path):
  file = tmp_path / "f"
  file.write_text("")
  for name, flag in (("cache_dir", "--compat-cache-dir"), ("artifacts", "--compat-artifacts")):
    with pytest.raises(SettingsError, match=f"{flag}={file} is a file"):
      resolve({name: str(file)})


def test_a_costs_file_that_does_not_read_is_refused_naming_it(tmp_path):
  bad = tmp_path / "costs.json"
  bad.write_text(json.dumps({"format": 1, "seconds": {"a": -1}}))
  with pytest.raises(SettingsError, match="costs file .*costs.json"):
    resolve({"costs": str(bad)})


def test_values_from_the_command_line_are_typed():
  s = resolve({"today": "2026-11-30", "worker_timeout_s": "0.5", "worker_memory_mb": "512",
               "shard": "2/4", "window_days": 7})
  assert s.today == datetime.date(2026, 11, 30) and s.day() == s.today
  assert s.worker_timeout_s == 0.5 and s.worker_max_rss_bytes == 512 * 2**20
  assert (s.shard.index, s.shard.count) == (2, 4) and s.window_days == 7
  assert s.given == {"today", "worker_timeout_s", "worker_memory_mb", "shard", "window_days"}


def test_a_preset_sets_its_options_and_explicit_options_override_it():
  s = resolve({}, "strict-cold")
  assert s.strict and s.cold and s.preset == "strict-cold" and s.hypothesis_profile == "ci"
  assert s.given == {"strict", "cold"}
  ci = resolve({"artifacts": "elsewhere", "platform": "cuda"}, "ci")
  assert ci.artifacts == "elsewhere" and ci.platform == "cuda"
  assert resolve({}, "ci").artifacts == PRESETS["ci"].values["artifacts"]


def test_a_presets_values_are_validated_like_options():
  bad = _settings.Preset("bad", "a preset with an impossible timeout", {"worker_timeout_s": 0},
                         hypothesis_profile="ci")
  with pytest.MonkeyPatch.context() as mp:
    mp.setitem(_settings.PRESETS, "bad", bad)
    with pytest.raises(SettingsError, match="--compat-worker-timeout=0"):
      resolve({}, "bad")


def test_an_unknown_preset_is_refused_naming_the_known_ones_and_what_they_set():
  with pytest.raises(SettingsError) as e:
    resolve({}, "weekly")
  message = str(e.value)
  assert message.startswith("--compat-preset=weekly: no such preset")
  for name in ("ci", "nightly", "strict-cold"):
    assert name in message
  assert "--compat-strict --compat-cold" in message


def test_presets_name_known_options_and_a_hypothesis_profile():
  assert {"ci", "nightly", "strict-cold"} <= set(PRESETS)
  for preset in PRESETS.values():
    assert preset.values and set(preset.values) <= set(FIELDS_BY_NAME), preset.name
    assert preset.hypothesis_profile in ("dev", "ci", "nightly"), preset.name
    resolve({}, preset.name)  # each resolves on its own
  assert PRESETS["nightly"].hypothesis_profile == "nightly"


def test_the_entry_point_reports_the_presets_hypothesis_profile(pytester):
  pytester.makeini("[pytest]\n")
  assert jaxport_pytest.hypothesis_profile(pytester.parseconfig()) is None
  config = pytester.parseconfig("--compat-preset=nightly")
  assert jaxport_pytest.hypothesis_profile(config) == "nightly"
  assert jaxport_pytest.hypothesis_profile(pytester.parseconfig("--compat-preset=nope")) is None


def test_a_preset_in_a_project_that_has_not_opted_in_is_a_usage_error(pytester):
  pytester.makeini("[pytest]\n")
  pytester.makepyfile(test_x="def test_x():\n  pass\n")
  result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--compat-preset=ci")
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  assert "--compat-preset: this project has not opted into" in result.stderr.str()


def test_importing_the_entry_point_and_the_settings_loads_no_jax():
  code = ("import json, sys, jaxport_pytest, jaxport.harness._controller._settings; "
          "print(json.dumps(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.'))))")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_the_nightly_preset_differs_from_ci_in_what_a_nightly_needs():
  ci, nightly = resolve({}, "ci"), resolve({}, "nightly")
  assert ci.platform == nightly.platform == "cpu"
  assert ci.artifacts == nightly.artifacts == "compat-artifacts"
  assert (ci.strict, nightly.strict) == (False, True)  # drift, staleness and expiry fail
  assert (ci.report, nightly.report) == (None, "compat-report.json")  # for the job summary
  assert (PRESETS["ci"].hypothesis_profile, PRESETS["nightly"].hypothesis_profile) == (
      "ci", "nightly")


@pytest.mark.parametrize("flag, name", [("--compat-report", "report"),
                                        ("--compat-timings", "timings")])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(tmp_path, flag, name):
  import os
  import stat
  fifo = tmp_path / "fifo"
  os.mkfifo(fifo)
  refused = {str(tmp_path): "a directory", str(fifo): "not a regular file"}
  if Path("/dev/full").exists():
    refused["/dev/full"] = "not a regular file"
  if Path("/proc/self").is_dir():  # Linux: no file can be created in /proc, even by root
    refused["/proc/jaxport-report.json"] = "no file can be written"
  for value, why in refused.items():
    with pytest.raises(SettingsError, match=f"{flag}={value}: {why}"):
      resolve({name: value})
  assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it was
  fine = tmp_path / "new" / "folder" / "out.json"
  assert getattr(resolve({name: str(fine)}), name) == str(fine)
  assert not (tmp_path / "new").exists()  # nothing created before the run


def test_the_settings_class_is_derived_from_the_field_table():
  names = [f.name for f in dataclasses.fields(Settings)]
  assert names == [f.name for f in FIELDS] + ["preset", "hypothesis_profile", "given"]
  defaults = Settings()
  assert all(getattr(defaults, f.name) == f.default for f in FIELDS)
  with pytest.raises(dataclasses.FrozenInstanceError):
    defaults.platform = "cuda"


def test_a_registered_preset_inherits_its_parent_and_is_selected_by_name(monkeypatch):
  monkeypatch.setattr(_settings, "PRESETS", dict(PRESETS))
  from jaxport.harness import register_preset
  made = register_preset("team-nightly", "the nightly, each reader in a fresh process",
                         {"cold": True, "report": "team.json"}, parent="nightly")
  assert made.hypothesis_profile == PRESETS["nightly"].hypothesis_profile
  s = resolve({}, "team-nightly")
  assert s.cold and s.strict and s.report == "team.json" and s.artifacts == "compat-artifacts"
  assert s.preset == "team-nightly" and s.given == {"platform", "artifacts", "strict", "report",
                                                    "cold"}
  assert resolve({"report": "given.json"}, "team-nightly").report == "given.json"


@pytest.mark.parametrize("name, values, parent, match", [
    ("ci", {}, None, "'ci' is taken"),
    ("", {}, None, "new non-empty name"),
    ("mine", {"no_such_setting": 1}, None, r"unknown settings \['no_such_setting'\]"),
    ("mine", {}, "weekly", "no preset 'weekly' to inherit from"),
])
def test_a_bad_preset_registration_is_refused_naming_the_fault(monkeypatch, name, values, parent,
                                                               match):
  monkeypatch.setattr(_settings, "PRESETS", dict(PRESETS))
  with pytest.raises(SettingsError, match=match):
    _settings.register_preset(name, "a preset", values, parent=parent)
  assert "mine" not in _settings.PRESETS


@pytest.mark.parametrize("name, flag, bad, expected", [
    ("window_days", "--window-days", "-1", "--window-days must be >= 0, got -1"),
    ("today", "--today", "2026-13-01", "--today='2026-13-01': expected a date YYYY-MM-DD"),
])
def test_a_command_option_that_is_a_setting_takes_the_tables_default_help_and_rule(
    name, flag, bad, expected):
  import argparse
  field = FIELDS_BY_NAME[name]
  parser = argparse.ArgumentParser()
  parser.add_argument(flag, **_settings.command_line_option(name, flag))
  assert getattr(parser.parse_args([]), name) == field.default
  assert " ".join(field.help_text().split()) in " ".join(parser.format_help().split())
  with pytest.raises(argparse.ArgumentTypeError, match=re.escape(expected)):
    _settings.command_line_option(name, flag)["type"](bad)


def test_a_preset_the_projects_conftest_registers_is_selected_by_name(pytester, monkeypatch):
  monkeypatch.setattr(_settings, "PRESETS", dict(PRESETS))
  pytester.makeini("[pytest]\n")
  pytester.makeconftest("from jaxport.harness import register_preset\n"
                        "register_preset('team', 'the team nightly', {'cold': True}, "
                        "parent='nightly')\n")
  config = pytester.parseconfig("--compat-preset=team")
  assert jaxport_pytest.hypothesis_profile(config) == "nightly"
  from jaxport.harness._controller import _plugin
  chosen = _plugin.settings(config)
  assert chosen.preset == "team" and chosen.cold and chosen.strict
  assert chosen.report == "compat-report.json"


def test_a_sessions_options_resolve_the_settings_that_depend_on_the_run_once(tmp_path):
  given = resolve({"artifacts": "kept", "today": "2026-11-29"})
  options = _settings.Options.for_run(given, golden_root=tmp_path / "golden", partial=True,
                                      project_root=tmp_path, invocation_dir=tmp_path / "here",
                                      pytest_strict=True)
  s = options.settings
  # Each under its option's own name: pytest's strict mode implies --compat-strict, a
  # relative folder is read from where pytest started, the cache defaults into the project.
  assert s.strict and s.today == datetime.date(2026, 11, 29)
  assert s.artifacts == str((tmp_path / "here" / "kept").resolve())
  assert s.cache_dir == str((tmp_path / ".jaxport_cache" / "xla").resolve())
  assert not hasattr(options, "today") and not hasattr(options, "strict")
  plain = _settings.Options.for_run(resolve({}), golden_root=tmp_path)
  assert not plain.settings.strict and plain.settings.today is not None
  assert plain.settings.cache_dir is None and plain.settings.artifacts is None
  uncached = _settings.Options.for_run(resolve({"no_cache": True}), golden_root=tmp_path,
                                       project_root=tmp_path)
  assert uncached.settings.cache_dir is None


def test_options_refuse_settings_not_resolved_for_the_run(tmp_path):
  with pytest.raises(SettingsError, match="Options.for_run"):
    _settings.Options(resolve({}), golden_root=tmp_path, partial=False)
