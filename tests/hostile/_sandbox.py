"""Child processes under time and memory limits (``resource.setrlimit``), for hostile inputs
whose failure mode is a hang inside native code or a memory blow-up that would take the test
process down with it; and the time limit of in-process tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _python_child import run_python

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

# Seconds one test may take in-process. A hostile input that hangs is caught
# here as a failure, never measured: no test asserts how long anything took.
TIME_LIMIT_S = 120
# Seconds of CPU and of wall clock a child process gets (it imports jax).
CHILD_TIME_LIMIT_S = 120

_PRELUDE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))

def limit_memory(extra_bytes):
  \"\"\"Caps this process's address space at its current size plus ``extra_bytes``.\"\"\"
  with open("/proc/self/status") as f:
    vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
  resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, vm + extra_bytes))
"""


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/status").exists(),
    reason="memory limits are set from /proc/self/status, which only Linux has")


def limited(code: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
  """Runs ``code`` in a child process of its own (forked with jax and jaxport imported: the
  limits, not a fresh interpreter, are what it is for) with CPU and wall-clock limits;
  ``limit_memory(n)`` is defined for it. Returns the finished process (stdout and stderr as
  text)."""
  script = _PRELUDE.format(cpu=CHILD_TIME_LIMIT_S) + textwrap.dedent(code)
  try:
    return run_python(script, cwd=cwd or ROOT, timeout=CHILD_TIME_LIMIT_S)
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"the child process ran past its time limit of {CHILD_TIME_LIMIT_S} s: "
                f"a hostile input hangs. Its stderr:\n{e.stderr}")
