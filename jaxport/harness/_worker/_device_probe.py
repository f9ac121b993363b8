"""The worker's answer to "which devices has your jax backend?", and who holds a device that
would not open.

Only a worker runs this: it imports jax and opens the backend, which on a TPU
machine takes the chip for the life of the process. When the backend does not
open because another process holds the chip (libtpu allows one process at a
time), the answer names the processes that have libtpu loaded, read from
``/proc``, and says whether one of them is the pytest process that started
this worker.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxport._environment import worker_parent_pid
from jaxport.harness._devices import harness_platform
from jaxport.harness._protocol._answers import DevicesAnswer

# The shared library a process that holds a TPU chip has mapped.
_TPU_LIBRARY = "libtpu"
# How many processes the answer names at most, and how much of a command line it quotes.
_HOLDERS_NAMED = 4
_COMMAND_CHARS = 160


def probe() -> DevicesAnswer:
  """This process's jax backend: its platform (as the harness names it), device kind and
  count; or why it did not open."""
  try:
    import jax
    devices = jax.devices()
  except Exception as e:  # noqa: BLE001  (the answer says why; the session decides)
    return DevicesAnswer("", "", 0, error=_not_opened(e))
  first = devices[0]
  version = str(getattr(first.client, "platform_version", "") or "")
  return DevicesAnswer(harness_platform(first.platform, version),
                       str(getattr(first, "device_kind", "") or ""), len(devices))


def _not_opened(error: Exception) -> str:
  lines = str(error).strip().splitlines()
  why = f"{type(error).__name__}: {lines[0] if lines else ''}"[:600]
  holders = library_holders(_TPU_LIBRARY)
  if not holders:
    return f"jax's backend did not open: {why}"
  return f"jax's backend did not open: {why}. Holding the device: {'; '.join(holders)}"


def library_holders(library: str, proc: Path = Path("/proc")) -> list[str]:
  """The processes other than this one that have a shared library whose name starts with
  ``library`` mapped, each as "pid N (command line)", the pytest process that started this
  worker named as such. Processes whose maps cannot be read are passed over."""
  me, parent = os.getpid(), worker_parent_pid()
  found: list[str] = []
  try:
    pids = sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit())
  except OSError:
    return found
  for pid in pids:
    if pid == me or not _maps(proc / str(pid), library):
      continue
    command = _command(proc / str(pid))
    who = ("the pytest process that runs this harness" if pid == parent
           else "another process")
    found.append(f"{who}, pid {pid} ({command})")
    if len(found) == _HOLDERS_NAMED:
      break
  return found


def _maps(folder: Path, library: str) -> bool:
  try:
    with open(folder / "maps", encoding="utf-8", errors="replace") as f:
      return any(f"/{library}" in line for line in f)
  except OSError:
    return False


def _command(folder: Path) -> str:
  try:
    raw = (folder / "cmdline").read_bytes()
  except OSError:
    return "command line unreadable"
  text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
  return ascii(text[:_COMMAND_CHARS])[1:-1] or "no command line"
