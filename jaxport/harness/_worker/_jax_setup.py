"""The jax configuration recording and replay run under: process-wide settings, the
memos in front of jax's compiler, and each case's or entry's own configuration."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax

from jaxport._jaxcompat import _lapack as jax_lapack
from jaxport.harness import _case
from jaxport.harness._worker import _cache_files, _contexts, _executables, _kept_reads
from jaxport.golden._manifest import Manifest

# Module locations name files without their directories, so golden modules do
# not depend on where the checkout lives.
_JAX_CONFIG = (
    ("jax_include_full_tracebacks_in_locations", False),
    ("jax_traceback_in_locations_limit", 0),
    ("jax_hlo_source_file_canonicalization_regex", r".*/"),
)


# The jax configuration an entry recorded before the manifest carried one ran with.
LEGACY_JAX_CONFIG = {"jax_enable_x64": True}


def recording_config() -> dict[str, Any]:
  """The jax settings every recording and replay runs under: short source locations, and
  whole tracebacks (:func:`configure_jax` applies them to the process)."""
  return {**dict(_JAX_CONFIG), "jax_traceback_filtering": "off"}


def configure_jax(compile_cache_dir: str | None = None, share_executables: bool = False,
                  own_process: bool = False) -> None:
  """Process-wide jax settings for recording and replaying (short locations; jaxport's own
  frames never name one, see ``jaxport/export/_lower.py``, so a recording does not change
  when jaxport does).

  With ``share_executables``, a module compiled once in this process (the second reader's
  identical module, an entry of another producer with the same computation, today's
  re-export) is not compiled again (``jaxport.harness._worker._executables``). With
  ``compile_cache_dir``, compiled executables are also kept in jax's persistent
  compilation cache there, for other processes and later runs; an unreadable cache
  entry is compiled again. Both are keyed by the module itself, so only the executable
  of an identical module is shared. Errors keep jax's whole traceback: filtering it
  costs more than the failed call when an old record's module does not compile.

  With ``own_process`` (a worker: nothing else runs in the process) and no cache directory
  (neither ``compile_cache_dir`` nor jax's own setting), jax's compilation cache is turned
  off: jax would otherwise compute its cache key of each module it compiles for a cache it
  has nowhere to keep.
  """
  for name, value in recording_config().items():
    jax.config.update(name, value)
  if share_executables:
    # Each stays off where jax's function is not the one it was written for; the worker's
    # answers then say so (replacement_notices).
    _executables.share_within_process()
    _contexts.reuse_within_process()
  if own_process and compile_cache_dir is None and not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_enable_compilation_cache", False)
  if compile_cache_dir is not None:
    # A link, pipe or device where jax expects an executable is dropped before any lookup.
    _cache_files.drop_irregular(Path(compile_cache_dir))
    if share_executables:
      _executables.keep_across_runs_in(Path(compile_cache_dir))
    _kept_reads.keep_across_runs_in(Path(compile_cache_dir))
    for name, value in (("jax_compilation_cache_dir", compile_cache_dir),
                        ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", -1)):
      jax.config.update(name, value)


class ConfigSnapshot:
  """jax's whole configuration as it stood when taken (a worker takes it after
  :func:`configure_jax`), to put back after each entry: a setting one case changes with
  ``jax.config.update`` must not change the verdicts of the entries after it. Restore only
  where no other thread traces."""

  def __init__(self) -> None:
    self._values = dict(jax.config.values)

  def restore(self) -> list[str]:
    """Put back every setting changed since the snapshot; one line per setting, naming it,
    its value then and the value it had been changed to."""
    lines = []
    for name, now in jax.config.values.items():
      then = self._values.get(name, _ABSENT)
      if then is _ABSENT or _same(then, now):
        continue
      try:
        jax.config.update(name, then)
        how = "the harness put it back before the next entry"
      except Exception as e:  # noqa: BLE001  (a setting jax refuses to set back)
        how = f"it could not be put back ({type(e).__name__}: {e})"
      lines.append(f"the case changed jax's setting {name} from {then!r} to {now!r} while it "
                   f"ran; {how}. A case sets jax's configuration through Case(jax_flags=...) "
                   "or enable_x64, which the manifest keeps, never with jax.config.update")
    return lines


_ABSENT = object()


def _same(a: Any, b: Any) -> bool:
  try:
    return bool(a == b)
  except Exception:  # noqa: BLE001  (a value without a plain equality)
    return a is b


def replacement_notices() -> list[str]:
  """Why the memos :func:`configure_jax` puts in front of jax stay off in this process
  (jax's function has a signature they were not written for), one line each; [] when
  they are on or were not asked for."""
  statuses = (_executables.COMPILE.status, _contexts.MAKE_CONTEXT.status)
  return [s.notice for s in statuses if s.notice is not None]


def warm_native_kernels() -> None:
  """Register jax's native CPU kernels as lowering a LAPACK call does. Before jax 0.10 a
  deserialized LAPACK call could crash a process that had not lowered one itself; a
  long-lived worker starts with this, so that its verdicts do not depend on which entry
  it replayed first (the release replayer, without jaxport, makes a native call instead)."""
  jax_lapack.initialize_lapack()


def case_jax_config(case: _case.Case) -> dict[str, Any]:
  """The jax configuration a case is recorded and replayed under, as the manifest keeps it:
  64-bit types on or off, and the partitioner where the case chooses one."""
  config: dict[str, Any] = {"jax_enable_x64": case.enable_x64}
  if case.use_shardy is not None:
    config["jax_use_shardy_partitioner"] = case.use_shardy
  return config


def entry_jax_config(m: Manifest) -> dict[str, Any]:
  """The jax configuration to replay an entry under: its own, or the harness's old default."""
  return dict(m.jax_config) if m.jax_config is not None else dict(LEGACY_JAX_CONFIG)


# Readers call every entry under Shardy, as jax does today; a case's partitioner choice
# (``use_shardy``) applies to its export and re-lowering only.
_CALLING_PARTITIONER = {"jax_use_shardy_partitioner": True}


def calling_jax_config(m: Manifest) -> dict[str, Any]:
  """The jax configuration readers call an entry under, at record and at replay: the entry's
  own with Shardy on. jax's reader cannot call a GSPMD entry with GSPMD on (its call of a
  record over explicit mesh axes fails the verifier), and it imports GSPMD's custom calls
  with Shardy on, so a GSPMD case is exported with GSPMD and called with Shardy."""
  return calls_under(entry_jax_config(m))


def calls_under(config: Mapping[str, Any]) -> dict[str, Any]:
  """The configuration readers call an entry recorded under ``config`` with: Shardy on."""
  return {**dict(config), **_CALLING_PARTITIONER}


@contextlib.contextmanager
def jax_config(config: Mapping[str, Any]):
  """Apply a case's or an entry's jax configuration, then restore jax's."""
  saved = {name: getattr(jax.config, name) for name in config}
  try:
    for name, value in config.items():
      jax.config.update(name, value)
    yield
  finally:
    for name, value in saved.items():
      jax.config.update(name, value)


def keeps_config(case: _case.Case | None) -> bool:
  """Whether exporting ``case`` today leaves jax's configuration as it is now (the entry's),
  so that it may run while a reader traces on another thread."""
  if case is None:
    return True
  wanted = {**case_jax_config(case), **dict(case.jax_flags)}
  return all(getattr(jax.config, name, object()) == value for name, value in wanted.items())
