"""Compile each distinct module once per worker process.

The two readers of an entry, entries of one case from several producers, and
today's re-export often hand XLA the same module (up to source locations).
:func:`share_within_process` puts a memo in front of jax's compile step, keyed
by jax's own compilation-cache key (the module without debug information, the
devices, the compile options and the backend), so such a module is compiled
once: later requests get the same loaded executable, or, when compiling failed,
the same error raised again; a thread asking for a module that another thread is
compiling waits for that compilation. Everything above the compile step (deserializing,
tracing and lowering each reader's call) still runs per reader.

jax's key clones the module and strips its debug information, which for the small
modules of golden entries costs about as much as compiling them. A request is first
looked up by a digest of what it hands the compiler as it stands (the module's bytecode,
locations included, the serialized compile options, the devices and the backend), then,
where that digest is new, by a digest of the same without the module's locations (its
text printed without debug information, which jax's key leaves out too): the two
readers of an entry and the records of one case from several producers hand over the
same module lowered at other source lines. Only a request new to both costs jax's key,
which both digests then stand for. Requests equal but for locations get equal keys, so
neither digest shares more than jax's key would.

With a cross-run compile cache (:func:`keep_across_runs_in`), a module that fails to compile
because it calls a custom-call target jaxlib removed keeps its error there too
(``jaxport.harness._worker._compile_errors``), so a later run raises it again without compiling; and
each request's key is kept there by a digest of the request as it stands
(``jaxport.harness._worker._sharing_index``), so a later run that sends the same request takes its
key without printing the module or computing jax's key.

jax's key is taken of the module without the argument and result attributes
``mhlo.layout_mode = "default"``: records of some producers (jax 0.4.x) spell the default
layout out on every function, later ones leave it out, and XLA reads a missing layout mode
as the default, so the two forms are one computation. Any other layout mode stays in the
key.

This is the one module of the harness that reaches into jax's compiler.
"""

from __future__ import annotations

import collections
import copy
import functools
import hashlib
import io
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
from jaxport._jaxcompat._compilation import cache_key as _cache_key
from jaxport._jaxcompat._compilation import compiler as _compiler
from jaxlib.mlir import ir

from jaxport._jaxcompat._version import installed_jax_version, installed_jaxlib_version
from jaxport.harness._worker._compile_errors import KeptErrors, keepable
from jaxport.harness._worker._replacement import Replacement
from jaxport.harness._worker._sharing_index import SharingIndex

logger = logging.getLogger(__name__)

# Executables kept, newest used last; an old one is compiled again when needed. Entries
# come in store order, a case's together, so sharing is mostly among neighbours.
MAX_KEPT = 64
# Digests of requests kept, each standing for jax's key of its module (several per key: the
# same computation lowered with other locations, with and without them).
MAX_DIGESTS = 8 * MAX_KEPT


class _Failure:
  """A compile error, raised again for each later request of the same module."""

  def __init__(self, error: BaseException) -> None:
    self.error = error

  def again(self) -> BaseException:
    return copy.copy(self.error).with_traceback(None)


_memo: collections.OrderedDict[str, Any] = collections.OrderedDict()
# Request digest -> jax's key of its module.
_keys: collections.OrderedDict[bytes, str] = collections.OrderedDict()
# Modules being compiled by some thread now; a thread asking for the same one waits.
_pending: dict[str, threading.Event] = {}
_lock = threading.Lock()


# Compile errors and requests' keys kept across runs, where a cross-run compile cache is kept.
_kept_errors: KeptErrors | None = None
_index: SharingIndex | None = None


def keep_across_runs_in(cache_folder: Path | None) -> None:
  """Keep this process's compile errors of removed custom-call targets, and its requests'
  keys, in ``cache_folder`` (the cross-run compile cache), and take them from there (the
  keys earlier runs kept are read now, before any request); None keeps nothing."""
  global _kept_errors, _index
  _kept_errors = KeptErrors(cache_folder) if cache_folder is not None else None
  _index = SharingIndex(cache_folder) if cache_folder is not None else None
  if _index is not None:
    _index.preload()


# The event jax records each time its persistent compilation cache hands back an executable.
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_loaded_from_cache = 0
_listening = False


def _count_cache_hit(event: str, **kwargs: Any) -> None:
  global _loaded_from_cache
  if event == CACHE_HIT_EVENT:
    with _lock:
      _loaded_from_cache += 1


def loaded_from_cache() -> int:
  """How many executables jax has loaded from its persistent compilation cache in this
  process so far (counted from the first call on; jax.monitoring's event listener)."""
  global _listening
  if not _listening:
    import jax.monitoring
    jax.monitoring.register_event_listener(_count_cache_hit)
    _listening = True
  return _loaded_from_cache


def share_within_process() -> bool:
  """From now on, compile each distinct module once in this process (idempotent); False,
  with the reason in ``COMPILE.status``, where jax's compile step is not the one the memo
  was written for (every module is then compiled, as jax does)."""
  return COMPILE.on()


def stop_sharing() -> None:
  """Compile as jax does again, forgetting the executables and errors kept so far."""
  COMPILE.off()
  with _lock:
    _memo.clear()
    _keys.clear()


def _request(backend: Any, devices: Any, compile_options: Any) -> bytes:
  """What a compile request holds besides its module: compile options, devices, backend."""
  return (b"\0options\0" + compile_options.SerializeAsString()
          + repr([(d.platform, d.id) for d in devices.flat]).encode()
          + f"\0{id(backend)}\0{backend.platform}\0{backend.platform_version}".encode())


def _exact_module(computation: Any) -> bytes:
  """The module's bytecode as it stands, locations included."""
  module = io.BytesIO()
  computation.operation.write_bytecode(module)
  return module.getvalue()


def _module_without_locations(computation: Any) -> bytes:
  """The module's text without debug information (locations). It was verified when jax
  lowered it, just before asking for its compilation, so printing skips verifying it again."""
  return computation.operation.get_asm(binary=True, enable_debug_info=False,
                                       assume_verified=True)


def _written(module: Callable[[Any], bytes], computation: Any) -> bytes | None:
  """The module written out by ``module``, or None where it cannot be."""
  try:
    return module(computation)
  except Exception:  # noqa: BLE001  (no digest: take jax's key)
    logger.debug("a compile request's module not written out; taking jax's key", exc_info=True)
    return None


def _digest(module: bytes | None, request: bytes) -> bytes | None:
  """A digest of the request with its module as written out (None where it was not)."""
  return None if module is None else hashlib.sha256(module + request).digest()


# jax's settings that change which modules get one key: keeping a module's metadata (its
# locations) in the key, and leaving custom partitioning's callbacks out of it.
_KEY_SETTINGS = ("jax_compilation_cache_include_metadata_in_key",
                 "jax_remove_custom_partitioning_ptr_from_cache_key")


@functools.cache
def _across_runs_salt() -> bytes:
  """What decides a request's key besides the request and stays for the process: the jax
  and jaxlib versions, and this module's code (which reads jax's key)."""
  return "\0".join([installed_jax_version(), installed_jaxlib_version() or "",
                     hashlib.sha256(Path(__file__).read_bytes()).hexdigest()]).encode()


def _across_runs(exact: bytes | None, backend: Any, devices: Any,
                 compile_options: Any) -> str | None:
  """The request's digest in the sharing index: the module as it stands, the compile options,
  the devices (by kind too) and the backend (not this process's objects), and what else
  decides its key; None where the request cannot be written out."""
  if exact is None:
    return None
  try:
    parts = [_across_runs_salt(), os.environ.get("XLA_FLAGS", "").encode(),
             repr([getattr(jax.config, name, None) for name in _KEY_SETTINGS]).encode(),
             compile_options.SerializeAsString(),
             repr([(d.platform, d.id, d.device_kind) for d in devices.flat]).encode(),
             f"{backend.platform}\0{backend.platform_version}".encode(), exact]
  except Exception:  # noqa: BLE001  (not kept across runs: computed each run)
    logger.debug("no digest of a compile request across runs", exc_info=True)
    return None
  digest = hashlib.sha256()
  for part in parts:
    digest.update(len(part).to_bytes(8, "little"))
    digest.update(part)
  return digest.hexdigest()


_LAYOUT_MODE = "mhlo.layout_mode"
_DEFAULT_LAYOUT = "default"
_FUNCTION_ATTRIBUTES = ("arg_attrs", "res_attrs")


def _states_default_layout(entries: dict[str, ir.Attribute]) -> bool:
  mode = entries.get(_LAYOUT_MODE)
  return (mode is not None and mode.typeid == ir.StringAttr.static_typeid
          and ir.StringAttr(mode).value == _DEFAULT_LAYOUT)


def _without_default(attrs: ir.Attribute) -> ir.Attribute | None | bool:
  """A function's argument or result attribute list without its default layout modes: None
  when no attribute is left (the list is dropped: producers differ in writing a list of
  empty dictionaries or none), False when it is already in that form (kept as is)."""
  lists = [{d[i].name: d[i].attr for i in range(len(d))}
           for d in (ir.DictAttr(a) for a in ir.ArrayAttr(attrs))]
  stated = any(_states_default_layout(entries) for entries in lists)
  for entries in lists:
    if _states_default_layout(entries):
      del entries[_LAYOUT_MODE]
  if not any(lists):
    return None
  return ir.ArrayAttr.get([ir.DictAttr.get(entries) for entries in lists]) if stated else False


def _keyed_module(computation: Any) -> Any:
  """The module jax's key is taken of: ``computation`` itself, or, where some function
  spells out the default layout mode or lists empty attributes, a detached copy without
  them (the request itself is compiled as it came)."""
  with computation.context:
    stripped = {(i, name): attrs
                for i, op in enumerate(computation.body.operations)
                for name in _FUNCTION_ATTRIBUTES if name in op.attributes
                for attrs in [_without_default(op.attributes[name])] if attrs is not False}
    if not stripped:
      return computation
    clone = computation.operation.clone(ip=False)
    functions = list(clone.regions[0].blocks[0].operations)
    for (i, name), attrs in stripped.items():
      if attrs is None:
        del functions[i].attributes[name]
      else:
        functions[i].attributes[name] = attrs
    return clone


def _known_key(digest: bytes | None) -> str | None:
  with _lock:
    key = _keys.get(digest) if digest is not None else None
    if key is not None:
      _keys.move_to_end(digest)
    return key


def _remember(digests: list[bytes | None], key: str) -> None:
  with _lock:
    for digest in digests:
      if digest is not None:
        _keys[digest] = key
    while len(_keys) > MAX_DIGESTS:
      _keys.popitem(last=False)


def _key(backend: Any, computation: Any, devices: Any, compile_options: Any) -> str | None:
  """jax's compilation-cache key of the request, looked up by its digests when seen before;
  None where jax cannot key it (it is then compiled unshared)."""
  index, across = _index, None
  try:
    request = _request(backend, devices, compile_options)
  except Exception:  # noqa: BLE001  (no digest: take jax's key)
    logger.debug("no digest of a compile request; taking jax's key", exc_info=True)
    digests = []
  else:
    exact = _written(_exact_module, computation)
    digests = [_digest(exact, request)]
    key = _known_key(digests[0])
    if key is not None:
      return key
    if index is not None:
      across = _across_runs(exact, backend, devices, compile_options)
    key = index.key(across) if index is not None and across is not None else None
    if key is not None:
      _remember(digests[:1], key)
      return key
    digests.append(_digest(_written(_module_without_locations, computation), request))
    key = _known_key(digests[1])
    if key is not None:
      _remember(digests[:1], key)
      _keep_across_runs(index, across, key)
      return key
  try:
    key = _cache_key.get(_keyed_module(computation), devices, compile_options, backend)
  except Exception:  # noqa: BLE001  (no key: compile as jax would)
    logger.debug("no compilation key for a module; compiling it unshared", exc_info=True)
    return None
  _remember(digests, key)
  _keep_across_runs(index, across, key)
  return key


def _keep_across_runs(index: SharingIndex | None, across: str | None, key: str) -> None:
  if index is not None and across is not None:
    index.keep(across, key)


def _repeatable(error: BaseException) -> bool:
  """Whether ``error`` can be raised again as a copy (a native error type may refuse)."""
  try:
    again = copy.copy(error)
  except Exception:  # noqa: BLE001
    return False
  return type(again) is type(error) and str(again) == str(error)


def _compile_once(backend: Any, computation: Any, devices: Any, compile_options: Any,
                  host_callbacks: Any, *rest: Any, **kwargs: Any) -> Any:
  compile_ = COMPILE.original

  def compile_now() -> Any:
    return compile_(backend, computation, devices, compile_options, host_callbacks, *rest,
                    **kwargs)

  key = None if host_callbacks else _key(backend, computation, devices, compile_options)
  if key is None:
    return compile_now()
  while True:
    with _lock:
      kept = _memo.get(key)
      if kept is not None:
        _memo.move_to_end(key)
      pending = _pending.get(key)
      owner = kept is None and pending is None
      if owner:
        pending = _pending[key] = threading.Event()
    if isinstance(kept, _Failure):
      raise kept.again()
    if kept is not None:
      return kept
    if owner:
      break
    pending.wait()  # another thread compiles this module; take its result
    with _lock:
      if key not in _memo and key not in _pending:
        break  # it kept nothing (an error that cannot be raised again): compile it here
  kept_errors = _kept_errors
  try:
    earlier = kept_errors.load(key) if kept_errors is not None else None
    if earlier is not None:
      _keep(key, _Failure(earlier))
      raise earlier
    try:
      executable = compile_now()
    except Exception as e:
      if _repeatable(e):
        _keep(key, _Failure(e))
      if kept_errors is not None and keepable(e):
        kept_errors.keep(key, e)
      raise
    _keep(key, executable)
    return executable
  finally:
    if owner:
      with _lock:
        _pending.pop(key).set()


def _keep(key: str, value: Any) -> None:
  with _lock:
    _memo[key] = value
    while len(_memo) > MAX_KEPT:
      _memo.popitem(last=False)


# The signatures of jax's compile step the memo was written for: one, the same in each
# release from jax 0.9.2 to 0.12.0.1 (0.9.2, 0.10.0-0.10.2, 0.11.0-0.11.2, 0.12.0, 0.12.0.1).
# The memo reads the first five arguments (``host_callbacks`` decides whether a module may
# be shared) and passes the rest on.
COMPILE_SIGNATURES = (
    "(backend, computation, devices, compile_options, host_callbacks, executable_devices, "
    "pgle_profiler=None)",
)

# jax's compile step, with the memo in front while sharing is on.
COMPILE = Replacement(_compiler, "compile_or_get_cached", _compile_once,
                      written_for=COMPILE_SIGNATURES, what="compile memo")
