"""Compile errors of removed legacy custom-call targets kept in the cross-run compile cache: a
later process raises the same error without compiling; other errors are compiled each run, and
a kept file that is not one of ours is ignored."""

import json
import os
import stat

import jax
import numpy as np
import pytest

from jaxport.harness._worker import _compile_errors, _executables
from jaxport.harness._worker._compile_errors import FOLDER_NAME, MAX_BYTES, KeptErrors, keepable


def _untyped_call(target):
  def call(x):
    return jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype),
                            custom_call_api_version=2)(x)  # untyped: found missing by XLA
  return call


def _fresh(fun):
  """A jitted function jax's own caches have not seen."""
  def calling(x):
    return fun(x)
  return jax.jit(calling)


@pytest.fixture
def compiles(tmp_path):
  """Sharing on, errors kept in ``tmp_path``: yields the modules jax was asked to compile and a
  function that forgets the in-process memo (as a new worker process starts without it)."""
  _executables.share_within_process()
  _executables.keep_across_runs_in(tmp_path)
  asked: list[str] = []
  compile_ = _executables.COMPILE.saved

  def counted(backend, computation, *rest, **kwargs):
    asked.append(str(computation.operation.attributes["sym_name"]))
    return compile_(backend, computation, *rest, **kwargs)

  def new_process():
    _executables.stop_sharing()
    _executables.share_within_process()
    _executables.keep_across_runs_in(tmp_path)
    _executables.COMPILE.saved = counted

  _executables.COMPILE.saved = counted
  yield asked, new_process
  _executables.COMPILE.saved = compile_
  _executables.keep_across_runs_in(None)
  _executables.stop_sharing()


def _failure(fun, x):
  with pytest.raises(Exception) as raised:
    fun(x)
  return raised.value


def test_a_removed_target_s_compile_error_is_raised_again_by_a_later_process_uncompiled(
    compiles, tmp_path):
  asked, new_process = compiles
  x = np.ones(4, np.float32)
  before = _failure(_fresh(_untyped_call("lapack_sgetrf")), x)
  assert keepable(before) and len(asked) == 1
  kept = list((tmp_path / FOLDER_NAME).iterdir())
  assert len(kept) == 1
  assert stat.S_IMODE((tmp_path / FOLDER_NAME).stat().st_mode) & 0o077 == 0
  new_process()
  again = _failure(_fresh(_untyped_call("lapack_sgetrf")), x)
  assert type(again) is type(before) and str(again) == str(before)
  assert len(asked) == 1, "the kept error was compiled again"


def test_a_changed_module_is_compiled_again(compiles):
  asked, new_process = compiles
  _failure(_fresh(_untyped_call("lapack_sgetrf")), np.ones(4, np.float32))
  new_process()
  _failure(_fresh(_untyped_call("lapack_sgetrf")), np.ones(5, np.float32))
  assert len(asked) == 2


def test_an_error_of_a_target_a_project_may_register_is_compiled_in_every_process(
    compiles, tmp_path):
  asked, new_process = compiles
  x = np.ones(4, np.float32)
  _failure(_fresh(_untyped_call("jaxport_test_target_nobody_registers")), x)
  new_process()
  _failure(_fresh(_untyped_call("jaxport_test_target_nobody_registers")), x)
  assert len(asked) == 2
  assert not (tmp_path / FOLDER_NAME).exists() or not any((tmp_path / FOLDER_NAME).iterdir())


MESSAGE = ("NOT_FOUND: No registered implementation for untyped custom call to lapack_sgetrf "
           "for Host")


def test_only_jax_s_runtime_error_of_a_removed_target_is_keepable():
  assert keepable(jax.errors.JaxRuntimeError(MESSAGE))
  assert not keepable(RuntimeError(MESSAGE))
  assert not keepable(jax.errors.JaxRuntimeError(MESSAGE.replace("lapack_sgetrf", "my_kernel")))
  assert not keepable(jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: out of memory"))


def test_round_trip_of_a_kept_error(tmp_path):
  errors = KeptErrors(tmp_path)
  assert errors.load("jit_f-abc") is None
  errors.keep("jit_f-abc", jax.errors.JaxRuntimeError(MESSAGE))
  loaded = errors.load("jit_f-abc")
  assert type(loaded) is jax.errors.JaxRuntimeError and str(loaded) == MESSAGE
  assert errors.load("jit_f-abd") is None
  assert [p.name.startswith(".") for p in (tmp_path / FOLDER_NAME).iterdir()] == [False]


@pytest.mark.parametrize("content", [
    b"\x00\xff not json",
    b"[1, 2]",
    json.dumps({"format": 99, "key": "jit_f-abc", "message": MESSAGE}).encode(),
    json.dumps({"format": 1, "key": "jit_f-other", "message": MESSAGE}).encode(),
    json.dumps({"format": 1, "key": "jit_f-abc", "message": 7}).encode(),
    json.dumps({"format": 1, "key": "jit_f-abc", "message": "INTERNAL: anything"}).encode(),
    json.dumps({"format": 1, "key": "jit_f-abc", "message": MESSAGE + " " * MAX_BYTES}).encode(),
], ids=["binary", "not-an-object", "other-format", "other-key", "message-not-text",
        "not-a-removed-target", "oversized"])
def test_a_kept_file_that_is_not_one_of_ours_is_ignored(tmp_path, content):
  errors = KeptErrors(tmp_path)
  errors.keep("jit_f-abc", jax.errors.JaxRuntimeError(MESSAGE))
  path, = (tmp_path / FOLDER_NAME).iterdir()
  path.write_bytes(content)
  assert errors.load("jit_f-abc") is None


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_kept_file_that_is_a_pipe_or_a_link_is_ignored_without_blocking(tmp_path, kind):
  errors = KeptErrors(tmp_path)
  errors.keep("jit_f-abc", jax.errors.JaxRuntimeError(MESSAGE))
  path, = (tmp_path / FOLDER_NAME).iterdir()
  elsewhere = tmp_path / "elsewhere.json"
  elsewhere.write_bytes(path.read_bytes())
  path.unlink()
  if kind == "fifo":
    os.mkfifo(path)  # opened without blocking and refused: no writer ever comes
  else:
    path.symlink_to(elsewhere)
  assert errors.load("jit_f-abc") is None


def test_a_folder_that_cannot_be_written_keeps_nothing_and_raises_nothing(tmp_path):
  (tmp_path / FOLDER_NAME).write_text("a file where the folder goes")
  KeptErrors(tmp_path).keep("jit_f-abc", jax.errors.JaxRuntimeError(MESSAGE))
  assert KeptErrors(tmp_path).load("jit_f-abc") is None


def _kept_by_another_process(tmp_path, key):
  KeptErrors(tmp_path).keep(key, jax.errors.JaxRuntimeError(MESSAGE))


def test_the_folder_is_listed_once_when_opened(tmp_path):
  _kept_by_another_process(tmp_path, "jit_f-before")
  errors = KeptErrors(tmp_path)
  _kept_by_another_process(tmp_path, "jit_f-after")
  assert str(errors.load("jit_f-before")) == MESSAGE
  assert errors.load("jit_f-after") is None  # not looked for: found by the next process
  assert str(KeptErrors(tmp_path).load("jit_f-after")) == MESSAGE


def test_a_folder_listing_too_many_files_is_looked_in_for_each_module(tmp_path, monkeypatch):
  monkeypatch.setattr(_compile_errors, "MAX_LISTED", 1)
  _kept_by_another_process(tmp_path, "jit_f-one")
  _kept_by_another_process(tmp_path, "jit_f-two")
  errors = KeptErrors(tmp_path)
  _kept_by_another_process(tmp_path, "jit_f-three")
  assert [str(errors.load(f"jit_f-{n}")) for n in ("one", "two", "three")] == [MESSAGE] * 3
