"""Requests' sharing keys kept in the cross-run compile cache: a later process that sends the
same request takes its key from there instead of computing jax's key again, read when the index
is opened; requests equal but for locations still share one executable; another jaxlib, other
XLA flags or a kept file that is not one of ours make the key computed again."""

import json
import os
import stat
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxport.harness._worker import _executables
from jaxport.harness._worker import _sharing_index
from jaxport.harness._worker._sharing_index import FOLDER_NAME, MAX_BYTES, SharingIndex


@pytest.fixture
def runs(tmp_path, monkeypatch):
  """Sharing on and keys kept in ``tmp_path``: yields the modules jax was asked to compile,
  the times the memo computed jax's key, and a function that forgets what the process knows
  (as a new worker starts)."""
  _executables.share_within_process()
  _executables.keep_across_runs_in(tmp_path)
  asked: list[str] = []
  computed: list[int] = []
  compile_ = _executables.COMPILE.saved
  key = _executables._cache_key.get

  def counted(backend, computation, *rest, **kwargs):
    asked.append(str(computation.operation.attributes["sym_name"]))
    return compile_(backend, computation, *rest, **kwargs)

  def counted_key(*args, **kwargs):
    computed.append(1)
    return key(*args, **kwargs)

  def new_process():
    _executables.stop_sharing()
    _executables.share_within_process()
    _executables.keep_across_runs_in(tmp_path)
    _executables.COMPILE.saved = counted

  monkeypatch.setattr(_executables, "_cache_key", types.SimpleNamespace(get=counted_key))
  _executables.COMPILE.saved = counted
  yield asked, computed, new_process
  _executables.COMPILE.saved = compile_
  _executables.keep_across_runs_in(None)
  _executables.stop_sharing()


def _made(body):
  """A jitted function jax's own caches have not seen."""
  def rescaled(x):
    return body(x)
  return jax.jit(rescaled)


# Each makes a new jitted function from the same source line: the modules of two are equal,
# locations included (the same request).
def _sine():
  return _made(lambda x: jnp.sin(x) * 4)


def _tanh():
  return _made(lambda x: jnp.tanh(x) + 1)


def _exp():
  return _made(lambda x: jnp.exp(x) * 2)


def _times_seven():
  return _made(lambda x: x * 7)


def _minus_three():
  return _made(lambda x: x - 3)


def _kept_files(tmp_path):
  return sorted((tmp_path / FOLDER_NAME).iterdir())


def _in_two_processes(new_process, call, between=lambda: None):
  """``call()`` here, then ``between()``, then ``call()`` again in a new process: the same
  requests, since both calls come from one source line (jax's locations name it)."""
  results = []
  for run in range(2):
    if run:
      between()
      new_process()
    results.append(call())
  return results


def test_a_later_process_takes_a_request_s_key_without_computing_jax_key(runs, tmp_path):
  asked, computed, new_process = runs
  x = np.linspace(0, 1, 8, dtype=np.float32)

  def first_process_kept_one_key():
    assert len(computed) == 1 and len(_kept_files(tmp_path)) == 1
    assert stat.S_IMODE((tmp_path / FOLDER_NAME).stat().st_mode) & 0o077 == 0

  for y in _in_two_processes(new_process, lambda: _sine()(x), first_process_kept_one_key):
    np.testing.assert_allclose(y, np.sin(x) * 4, rtol=1e-6)
  assert len(computed) == 1, "jax's key was computed again for a request the index holds"
  assert len(asked) == 2  # the new process still compiles (or loads) the module itself


def test_requests_equal_but_for_locations_share_one_executable_with_kept_keys(runs):
  asked, computed, new_process = runs
  x = np.linspace(0, 1, 8, dtype=np.float32)

  def both():
    here = _made(lambda x: jnp.cos(x) * 5)
    there = _made(
        lambda x: jnp.cos(x) * 5)  # another source line: other locations, one computation
    return [f(x) for f in (here, there)]

  def first_process_compiled_once():
    assert len(asked) == 1 and len(computed) == 1

  for ys in _in_two_processes(new_process, both, first_process_compiled_once):
    for y in ys:
      np.testing.assert_allclose(y, np.cos(x) * 5, rtol=1e-6)
  assert len(asked) == 2, "the two requests of the new process did not share an executable"
  assert len(computed) == 1


@pytest.mark.parametrize("change", ["xla_flags", "jaxlib"])
def test_another_jaxlib_or_other_xla_flags_compute_the_key_again(runs, monkeypatch, change):
  _, computed, new_process = runs
  x = np.ones(6, np.float32)

  def changed():
    if change == "xla_flags":
      monkeypatch.setenv("XLA_FLAGS",
                         os.environ.get("XLA_FLAGS", "") + " --xla_dump_to=/nowhere")
    else:
      monkeypatch.setattr(_executables, "_across_runs_salt",
                          lambda: b"another jax\0another jaxlib")

  _in_two_processes(new_process, lambda: _tanh()(x), changed)
  assert len(computed) == 2


@pytest.mark.parametrize("content", [
    b"not json",
    json.dumps({"format": 99, "request": "", "key": "k"}).encode(),
    json.dumps({"format": 1, "request": "0" * 64, "key": "k"}).encode(),  # another request's
    json.dumps({"format": 1, "key": ""}).encode(),
    b"{" + b" " * (MAX_BYTES + 1) + b"}",
], ids=["not-json", "other-format", "other-request", "empty-key", "oversized"])
def test_a_kept_file_that_is_not_ours_is_ignored_and_written_again(runs, tmp_path, content):
  _, computed, new_process = runs
  x = np.ones(5, np.float32)
  kept_before = {}

  def spoiled():
    [kept] = _kept_files(tmp_path)
    kept_before[kept.stem] = SharingIndex(tmp_path).key(kept.stem)
    kept.write_bytes(content.replace(b'"request": ""', f'"request": "{kept.stem}"'.encode()))

  for y in _in_two_processes(new_process, lambda: _exp()(x), spoiled):
    np.testing.assert_allclose(y, np.exp(x) * 2, rtol=1e-6)
  assert len(computed) == 2
  [(request, key)] = kept_before.items()
  assert key is not None and SharingIndex(tmp_path).key(request) == key


def test_a_link_in_place_of_a_kept_file_is_not_followed(runs, tmp_path):
  _, computed, new_process = runs
  x = np.ones(3, np.float32)

  def linked():
    [kept] = _kept_files(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(kept.read_bytes())
    kept.unlink()
    kept.symlink_to(elsewhere)

  _in_two_processes(new_process, lambda: _times_seven()(x), linked)
  assert len(computed) == 2


def test_only_a_request_digest_names_a_kept_file(tmp_path):
  index = SharingIndex(tmp_path)
  for bad in ("../escape", "A" * 64, "0" * 63, ""):
    with pytest.raises(ValueError, match="not a request digest"):
      index.key(bad)
    with pytest.raises(ValueError, match="not a request digest"):
      index.keep(bad, "key")
  assert not (tmp_path / FOLDER_NAME).exists()


def test_an_unwritable_folder_only_costs_the_key_again(runs, tmp_path):
  _, computed, new_process = runs
  (tmp_path / FOLDER_NAME).write_text("a file where the folder goes")
  x = np.ones(4, np.float32)
  for y in _in_two_processes(new_process, lambda: _minus_three()(x)):
    np.testing.assert_allclose(y, x - 3)
  assert len(computed) == 2


def _keep_keys(tmp_path, count):
  """``count`` keys kept by one index in ``tmp_path``: {request digest: key}."""
  index = SharingIndex(tmp_path)
  kept = {f"{i:064x}": f"jit_f-{i:064x}" for i in range(count)}
  for request, key in kept.items():
    index.keep(request, key)
  return kept


def test_an_index_is_read_when_opened_not_at_each_request(tmp_path):
  kept = _keep_keys(tmp_path, 3)
  index = SharingIndex(tmp_path)
  assert index.preload() == 3
  for path in _kept_files(tmp_path):
    path.unlink()
  assert {request: index.key(request) for request in kept} == kept


def test_keys_past_the_preload_bound_are_read_when_asked_for(tmp_path, monkeypatch):
  kept = _keep_keys(tmp_path, 5)
  monkeypatch.setattr(_sharing_index, "MAX_PRELOADED", 2)
  index = SharingIndex(tmp_path)
  assert index.preload() == 2
  assert {request: index.key(request) for request in kept} == kept


def test_preloading_skips_files_that_are_not_kept_keys(tmp_path):
  [(request, key)] = _keep_keys(tmp_path, 1).items()
  folder = tmp_path / FOLDER_NAME
  (folder / "notes.txt").write_text("not a key")
  (folder / ("f" * 64 + ".json")).write_text(json.dumps({"format": 1, "request": "0" * 64,
                                                          "key": "another request's"}))
  (folder / ("e" * 64 + ".json")).mkdir()
  index = SharingIndex(tmp_path)
  assert index.preload() == 1
  assert index.key(request) == key
  assert index.key("f" * 64) is None and index.key("e" * 64) is None


def test_a_missing_folder_preloads_nothing(tmp_path):
  assert SharingIndex(tmp_path / "never made").preload() == 0


def test_a_new_process_reads_the_kept_keys_before_its_first_request(runs, tmp_path):
  _, computed, new_process = runs
  x = np.ones(7, np.float32)

  def files_gone_after_the_new_process_opened_the_index():
    new_process()
    for path in _kept_files(tmp_path):
      path.unlink()

  for y in _in_two_processes(lambda: None, lambda: _sine()(x),
                             files_gone_after_the_new_process_opened_the_index):
    np.testing.assert_allclose(y, np.sin(x) * 4, rtol=1e-6)
  assert len(computed) == 1
