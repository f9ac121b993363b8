"""The module parser of one ``jaxport`` command: a child process that does every native read of
untrusted module bytes, so that a crash or a hang there is one artifact's verdict.

jaxlib's StableHLO bytecode reader runs in the calling process and trusts its input: a valid
envelope around bit-flipped bytecode can make it crash (SIGSEGV) or loop, in jax as in
jaxport. ``inspect``, ``audit``, ``upgrade`` and ``import-jax-testdata`` therefore hand each
artifact's module (or blob) to one long-lived child (``python -m jaxport.cli._parser_child``),
started on the first read a command needs and reused for every artifact after it. The child
answers one JSON line per request; where it dies, passes the time limit of the artifact
(``jaxport._limits.MODULE_PARSE_TIMEOUT_S``, or ``--parse-timeout``) or its memory limit
(``jaxport._limits.MAX_PARSER_RSS_BYTES``, or ``--parse-memory-mb``; resident memory polled as
the harness polls its worker's), that artifact gets a :class:`~jaxport.errors.ModuleCrashError`,
:class:`~jaxport.errors.ModuleTimeoutError` or :class:`~jaxport.errors.ModuleMemoryError`
naming it, and the next artifact starts a fresh child. A command that reads no module never
starts one. The child dies with the command, as the harness's worker dies with pytest
(``jaxport._isolation._process``).

:class:`InProcess` does the same reads in the calling process: what the library API does, and
what the child itself runs (with ``jaxport upgrade``'s pipeline, ``_upgrade.upgrade_blob``).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import jaxport
from jaxport import _limits, errors
from jaxport._isolation._preloaded import IF_PRESENT, start_module
from jaxport._isolation._process import (LIFELINE_FLAG, PARENT_PID_ENV, OverMemory, exit_text,
                                         readline, signal_name, stop)
from jaxport.errors import (JaxportError, ModuleCrashError, ModuleMemoryError, ModuleParserError,
                            ModuleTimeoutError)
from jaxport.export import _mlir
from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature
from jaxport.releases import MeasuredRun, _features
from jaxport.cli._arguments import MEMORY_OPTION, TIMEOUT_OPTION
from jaxport.cli._relower import Today, contract_json

logger = logging.getLogger(__name__)

CHILD_MODULE = "jaxport.cli._parser_child"
# What the child's preloading parent imports: the child's module, and where jaxlib has it the
# MHLO dialect, which jax loads when it first lowers (a case relowered today).
CHILD_PRELOAD = (CHILD_MODULE, IF_PRESENT + "jaxlib.mlir.dialects.mhlo")
# The child's options naming the project's case modules and the directories they import from.
IMPORT_FLAG = "--import-module"
PATH_FLAG = "--import-path"
# Where the case modules came from, as the child's import failure names it.
SOURCE_FLAG = "--import-source"
# The options that set the limits for one command, named by the verdicts they cause.
STDERR_TAIL_CHARS = 4000


def encode(data: bytes) -> str:
  """Bytes as they cross the process boundary: base64 text inside the JSON line."""
  return base64.b64encode(bytes(data)).decode("ascii")


def decode(text: str) -> bytes:
  return base64.b64decode(text.encode("ascii"), validate=True)


def signature_of(d: dict[str, Any]) -> CustomCallSignature:
  """A signature from its ``to_dict`` form (what the child answers)."""
  return CustomCallSignature(target=d["target"], operand_types=tuple(d["operand_types"]),
                             result_types=tuple(d["result_types"]),
                             attributes=dict(d["attributes"]))


class InProcess:
  """The native reads of a command done in this process (no isolation)."""

  def signatures(self, module: bytes, label: str) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of a serialized module (``label``: the artifact)."""
    return _signatures.signatures(module)

  def module_text(self, module: bytes, fun_name: str | None, label: str) -> str:
    """The StableHLO text of a serialized module."""
    return _mlir.module_text(module, fun_name)

  def donations(self, module: bytes, label: str) -> tuple[bool, ...]:
    """Whether each argument of a serialized module's ``main`` is donated."""
    return _mlir.donations(module)

  def runs_on_record(self, blob: bytes, manifest: Any, label: str,
                     project_targets: Iterable[str] = (),
                     measured: Sequence[MeasuredRun] = ()) -> _features.RunsOnRecord:
    """The releases a blob (and its entry's manifest) runs on, for ``inspect`` and ``audit``;
    ``project_targets`` registered by the project, ``measured`` replays taking precedence."""
    return _features.runs_on_record(blob, manifest, project_targets, measured)

  def import_modules(self, modules: tuple[str, ...], paths: tuple[str, ...] = (),
                     source: str | None = None) -> None:
    """Nothing to do: the caller imported ``modules`` in this process already."""

  def start(self) -> None:
    """Nothing to start in this process."""

  def close(self) -> None:
    """Nothing to stop in this process."""


class ModuleParser:
  """The child process that does a command's native reads, started on first use and again
  after it crashed, hung or grew past its memory limit.

  ``timeout_s`` is the time one artifact may take (all requests naming the same artifact one
  after the other share it), ``max_rss_bytes`` the resident memory past which the child is
  killed; None for either is the default of ``jaxport._limits``, and a value given is named
  by its option in the verdicts.
  """

  def __init__(self, timeout_s: float | None = None, max_rss_bytes: int | None = None,
               start_timeout_s: float = _limits.PARSER_START_TIMEOUT_S):
    self._timeout_given = timeout_s is not None
    self._memory_given = max_rss_bytes is not None
    self.timeout_s = _limits.MODULE_PARSE_TIMEOUT_S if timeout_s is None else float(timeout_s)
    self.max_rss_bytes = _limits.MAX_PARSER_RSS_BYTES if max_rss_bytes is None else max_rss_bytes
    self.start_timeout_s = start_timeout_s
    self.starts = 0  # processes started, for the command's log and the tests
    self._proc: subprocess.Popen | None = None
    self._ready = False
    self._stderr = None
    self._lifeline: int | None = None
    # This side of the pipes the child reads its requests from and writes its answers to.
    self._requests: IO[str] | None = None
    self._answers: IO[bytes] | None = None
    self._cannot_start: ModuleParserError | None = None
    self._artifact: tuple[str, float] | None = None  # the artifact being read, its deadline
    self._imports: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    self._source: str | None = None
    self._import_failed: str | None = None

  def __enter__(self) -> ModuleParser:
    return self

  def __exit__(self, exc_type: object, *exc: object) -> None:
    if exc_type is not None:
      self._kill()  # interrupted or failed: a child busy in native code is not waited for
    self.close()

  @property
  def pid(self) -> int | None:
    """The child's process id while one runs."""
    return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

  # --- the reads ----------------------------------------------------------------------------

  def signatures(self, module: bytes, label: str) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of a serialized module (``label``: the artifact)."""
    answer = self._request({"op": "signatures", "module": encode(module)}, label,
                           _what_module(module), ("signatures",))
    return tuple(signature_of(d) for d in answer["signatures"])

  def module_text(self, module: bytes, fun_name: str | None, label: str) -> str:
    """The StableHLO text of a serialized module."""
    answer = self._request({"op": "module_text", "module": encode(module), "fun_name": fun_name},
                           label, _what_module(module), ("text",))
    return answer["text"]

  def donations(self, module: bytes, label: str) -> tuple[bool, ...]:
    """Whether each argument of a serialized module's ``main`` is donated."""
    answer = self._request({"op": "donations", "module": encode(module)}, label,
                           _what_module(module), ("donations",))
    found = answer["donations"]
    if not isinstance(found, list) or not all(isinstance(d, bool) for d in found):
      raise ModuleParserError(f"{label}: the module parser answered donations {found!r}, "
                              "not a list of booleans")
    return tuple(found)

  def runs_on_record(self, blob: bytes, manifest: Any, label: str,
                     project_targets: Iterable[str] = (),
                     measured: Sequence[MeasuredRun] = ()) -> _features.RunsOnRecord:
    """The releases a blob (and its entry's manifest) runs on, for ``inspect`` and ``audit``;
    ``project_targets`` registered by the project, ``measured`` replays taking precedence. The
    child's record is read strictly: one missing or mistyped field is the parser's error,
    never a partial record."""
    answer = self._request({"op": "runs_on", "blob": encode(blob),
                            "manifest": None if manifest is None else manifest.to_json(),
                            "where": label, "project_targets": sorted(project_targets),
                            "measured": {r.release: r.to_json() for r in measured}},
                           label, _what_blob(blob), ("record",))
    try:
      return _features.RunsOnRecord.from_json(answer["record"], f"{label}: runs_on record")
    except ValueError as e:
      self._kill()
      raise ModuleParserError(f"the module parser answered with a malformed record: {e}") from None

  def upgrade(self, blob: bytes, for_jax: str | None, source: Path, output: Path,
              label: str) -> tuple[bytes, dict[str, Any], str]:
    """``jaxport upgrade`` of a blob: the new blob, its JSON report and its text report."""
    answer = self._request({"op": "upgrade", "blob": encode(blob), "for_jax": for_jax,
                            "source": str(source), "output": str(output)}, label,
                           _what_blob(blob), ("data", "report", "text"))
    return decode(answer["data"]), answer["report"], answer["text"]

  def today(self, manifest: Any, recorded: Any, label: str) -> Any:
    """Today's export of ``manifest``'s case against the entry (``recorded``: its calling
    contract, or None), from the case modules this child imported
    (``jaxport.cli._relower.Relowerer.today``); read strictly."""
    answer = self._request({"op": "today", "manifest": manifest.to_json(), "where": label,
                            "contract": None if recorded is None else contract_json(recorded)},
                           label, f"today's export of case {manifest.case_id}", ("today",))
    try:
      return Today.from_json(answer["today"], f"{label}: today")
    except ValueError as e:
      self._kill()
      raise ModuleParserError(f"the module parser answered with a malformed record: {e}") from None

  def import_failure(self) -> str | None:
    """Why the child could not import the modules of :meth:`import_modules` (None: it
    imported them), starting it when none runs."""
    if self._cannot_start is not None:
      raise self._cannot_start
    self.start()
    if not self._ready:
      self._wait_ready()
    return self._import_failed

  # --- the process --------------------------------------------------------------------------

  def import_modules(self, modules: tuple[str, ...], paths: tuple[str, ...] = (),
                     source: str | None = None) -> None:
    """Have every child import ``modules`` (from ``paths`` first) before its first read: a
    project's case modules register the pytree and effect types its entries need to
    deserialize, and their cases are lowered there (:meth:`today`); ``source``: where they
    came from, as an import failure names it. Call it before :meth:`start`; a child already
    running is restarted."""
    wanted = (tuple(modules), tuple(paths))
    if wanted == self._imports and (source is None or source == self._source):
      return
    self._imports = wanted
    self._source = source if source is not None else self._source
    if self._proc is not None:
      self._kill()

  def start(self) -> None:
    """Start the child now unless one runs (it imports jax while the caller goes on)."""
    if self._cannot_start is not None:
      return
    if self._proc is not None and self._proc.poll() is None:
      return
    self._discard()
    env = dict(os.environ)
    env[PARENT_PID_ENV] = str(os.getpid())
    self._stderr = tempfile.TemporaryFile(mode="w+b")
    read_end, self._lifeline = os.pipe()
    requests_read, requests_write = os.pipe()
    answers_read, answers_write = os.pipe()
    try:
      self._proc = start_module(
          CHILD_MODULE, [LIFELINE_FLAG, str(read_end),
                         *(a for m in self._imports[0] for a in (IMPORT_FLAG, m)),
                         *(a for p in self._imports[1] for a in (PATH_FLAG, p)),
                         *((SOURCE_FLAG, self._source) if self._source else ())],
          # The child imports the jaxport this process runs, wherever that is.
          env=env, paths=(str(Path(jaxport.__file__).resolve().parents[1]),),
          stdin=requests_read, stdout=answers_write, stderr=self._stderr.fileno(),
          pass_fds=(read_end,), preload=CHILD_PRELOAD)
    except BaseException:
      os.close(requests_write)
      os.close(answers_read)
      raise
    finally:
      for fd in (read_end, requests_read, answers_write):
        os.close(fd)
    self._requests = os.fdopen(requests_write, "w", encoding="utf-8")
    self._answers = os.fdopen(answers_read, "rb", buffering=0)
    self._ready = False
    self.starts += 1
    if self.starts == 1:
      logger.debug("started the module parser process %d", self._proc.pid)
    else:
      logger.info("started a fresh module parser process %d (%d so far)", self._proc.pid,
                  self.starts)

  def _wait_ready(self) -> None:
    """Wait for the child's first line, which says it has imported what it needs."""
    line = readline(self._proc, self.start_timeout_s, channel=self._answers)
    ready = _json_line(line) if line else {}
    if ready.get("ready"):
      self._ready = True
      self._import_failed = ready.get("import_failed")
      if ready.get("import_failed") and self._source is None:
        logger.warning("the module parser process could not import the project's case modules "
                       "(%s); entries that need their pytree or effect types will not read",
                       ready["import_failed"])
      return
    why = (f"it gave no sign of life within {self.start_timeout_s:.0f} s" if line is None
           else "it wrote something else first" if line else "it ended: " + self._ended())
    tail = self._stderr_tail(0)
    self._kill()
    self._cannot_start = ModuleParserError(
        f"the module parser process ({sys.executable} -m {CHILD_MODULE}) could not start: "
        f"{why}. Its last stderr lines: {tail.strip()[-1000:] or '(none)'}. Check that this "
        "Python imports jax and jaxport.")
    raise self._cannot_start

  def _request(self, payload: dict[str, Any], label: str, what: str,
               keys: tuple[str, ...]) -> dict[str, Any]:
    """The child's answer to ``payload``, which must hold ``keys``; a refusal is raised as the
    error the read raises in-process, a crash, hang or memory kill as a named verdict."""
    if self._cannot_start is not None:
      raise self._cannot_start
    self.start()
    if not self._ready:
      self._wait_ready()
    now = time.monotonic()
    if self._artifact is None or self._artifact[0] != label:
      self._artifact = (label, now + self.timeout_s)
    left = max(0.0, self._artifact[1] - now)
    proc = self._proc
    self._stderr.seek(0, os.SEEK_END)
    stderr_from = self._stderr.tell()
    try:
      self._requests.write(json.dumps(payload) + "\n")
      self._requests.flush()
    except (BrokenPipeError, OSError):
      line = ""
    else:
      line = readline(proc, left, self.max_rss_bytes, channel=self._answers)
    if isinstance(line, OverMemory):
      self._kill()
      raise ModuleMemoryError(
          f"{label}: reading {what} grew the module parser process past the memory limit "
          f"{self._memory_limit()}: {line.rss_bytes // 2**20} MiB resident when it was killed. "
          "jaxlib's bytecode reader allocates without end on these bytes, or the module is "
          f"larger than the limit allows; a larger {MEMORY_OPTION}=MB allows more. The next "
          "artifact is read by a fresh process.")
    if line is None:
      self._kill()
      raise ModuleTimeoutError(
          f"{label}: reading {what} did not finish within the time limit "
          f"{self._time_limit()}; the module parser process was killed. jaxlib's bytecode "
          "reader loops on these bytes (in jax as in jaxport): they are corrupted or built to "
          f"hang it, or the module is very large; a larger {TIMEOUT_OPTION}=SECONDS allows "
          "more. The next artifact is read by a fresh process.")
    if not line:
      ended = self._ended()
      tail = self._stderr_tail(stderr_from)
      logger.debug("the module parser process's last stderr lines:\n%s", tail)
      raise ModuleCrashError(
          f"{label}: reading {what} crashed the module parser process: it was {ended}. "
          "jaxlib's bytecode reader crashes on these bytes (in jax as in jaxport): they are corrupted or built to crash it, and nothing "
          "of the module was read. Export the function again or get the original blob. The "
          "next artifact is read by a fresh process.")
    answer = _json_line(line)
    if not answer:
      self._kill()
      raise ModuleParserError(f"{label}: the module parser answered {what} with a line that is "
                              f"not a JSON object: {line[:200]!r}")
    if "refused" in answer:
      raise _refusal(answer["refused"])
    if "error" in answer:
      logger.debug("the module parser's traceback:\n%s", answer.get("traceback", ""))
      raise ModuleParserError(f"{label}: the module parser failed on {what}: {answer['error']}")
    missing = [k for k in keys if k not in answer]
    if missing:
      raise ModuleParserError(f"{label}: the module parser's answer for {what} lacks "
                              f"{', '.join(missing)} (it has {', '.join(sorted(answer))})")
    return answer

  def _ended(self) -> str:
    """How the child ended (it is waited for): ``killed by SIGSEGV (signal 11)``."""
    code = self._proc.wait()
    self._cut_lifeline()
    self._proc = None
    self._ready = False
    if signal_name(code) is None:
      return f"ended with {exit_text(code)}"
    return exit_text(code)

  def _kill(self) -> None:
    if self._proc is not None:
      if self._proc.poll() is None:
        self._proc.kill()
      self._proc.wait()
      self._proc = None
    self._ready = False
    self._cut_lifeline()

  def _time_limit(self) -> str:
    default = _limits.name("MODULE_PARSE_TIMEOUT_S")
    if not self._timeout_given:
      return default
    return f"{TIMEOUT_OPTION}={self.timeout_s:g} s (without the option {default})"

  def _memory_limit(self) -> str:
    default = _limits.name("MAX_PARSER_RSS_BYTES")
    if not self._memory_given:
      return default
    return (f"{MEMORY_OPTION}={self.max_rss_bytes // 2**20} ({self.max_rss_bytes} bytes; "
            f"without the option {default})")

  def _stderr_tail(self, start: int) -> str:
    if self._stderr is None:
      return ""
    self._stderr.seek(0, os.SEEK_END)
    size = self._stderr.tell()
    self._stderr.seek(max(start, size - STDERR_TAIL_CHARS))
    return self._stderr.read().decode("utf-8", "replace")

  def _cut_lifeline(self) -> None:
    """Close this side of the child's lifeline and of its request and answer pipes."""
    if self._lifeline is not None:
      os.close(self._lifeline)
      self._lifeline = None
    for pipe in (self._requests, self._answers):
      if pipe is not None:
        try:
          pipe.close()
        except OSError:  # what was left unwritten: the child is gone
          pass
    self._requests = self._answers = None

  def _discard(self) -> None:
    """Forget a child that ended (its pipes and stderr file)."""
    if self._proc is not None:
      self._proc.wait()
      self._proc = None
    self._cut_lifeline()
    if self._stderr is not None:
      self._stderr.close()
      self._stderr = None

  def close(self) -> None:
    """Stop the child: its input closes and it exits (killed if it does not, within 30 s)."""
    if self._proc is not None:
      stop(self._proc, requests=self._requests)
      self._proc = None
    self._discard()


def _json_line(line: str) -> dict[str, Any]:
  """The JSON object of one answer line; {} when it is not one."""
  try:
    value = json.loads(line)
  except ValueError:
    return {}
  return value if isinstance(value, dict) else {}


def _what_module(module: bytes) -> str:
  return f"its StableHLO module ({len(module)} bytes)"


def _what_blob(blob: bytes) -> str:
  return f"the module in its blob ({len(blob)} bytes)"


def _refusal(refused: dict[str, str]) -> Exception:
  """The child's refusal as the exception the same read raises in-process."""
  name, message = refused.get("class", ""), refused.get("message", "")
  if name == "NotImplementedError":
    return NotImplementedError(message)
  cls = getattr(errors, name, None)
  if isinstance(cls, type) and issubclass(cls, JaxportError):
    return cls(message)
  return JaxportError(message)





def from_args(args: Any) -> ModuleParser:
  """The module parser of a command, with the limits its options set."""
  mb = getattr(args, "parse_memory_mb", None)
  return ModuleParser(timeout_s=getattr(args, "parse_timeout", None),
                      max_rss_bytes=None if mb is None else mb * 2**20)
