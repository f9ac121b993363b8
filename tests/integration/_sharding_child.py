"""Running a sharding test module in its own process with eight host CPU devices.

jax fixes the number of CPU devices when its backend starts, so a module that
needs eight of them cannot run inside the ordinary test process. Each
``test_sharding_*.py`` module asks :func:`in_child` at import: in the ordinary
process it defines one test that runs the module again, with pytest, in a
child process with ``--xla_force_host_platform_device_count=8`` in its XLA_FLAGS
(forked from a parent that imported jax and pytest but started no backend:
``_python_child.run_module``); in the child it defines its real tests. A failing
child test fails the parent test, which prints the child's report.
"""

from __future__ import annotations

import os
from pathlib import Path

from _python_child import PRELOAD, run_module

NUM_DEVICES = 8
_CHILD_ENV = "JAXPORT_SHARDING_TEST_CHILD"
_FLAG = f"--xla_force_host_platform_device_count={NUM_DEVICES}"
_TIMEOUT_S = 600


def in_child() -> bool:
  """True inside the child process; refuses a child that did not get its devices."""
  if os.environ.get(_CHILD_ENV) != "1":
    return False
  import jax
  if jax.device_count() != NUM_DEVICES:
    raise RuntimeError(
        f"the sharding test child expects {NUM_DEVICES} CPU devices but jax has "
        f"{jax.device_count()}; XLA_FLAGS={os.environ.get('XLA_FLAGS')!r} must carry {_FLAG} "
        "before jax starts.")
  return True


def run_module_in_child(module_file: str) -> None:
  """Run ``pytest module_file`` in a child with eight devices; fail with its report if it fails."""
  env = dict(os.environ)
  env[_CHILD_ENV] = "1"
  env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), _FLAG) if f)
  env["JAX_PLATFORMS"] = "cpu"
  env.pop("PYTEST_XDIST_WORKER", None)
  path = Path(module_file)
  # Forked from a parent that imported jax and pytest once for the four sharding modules: jax
  # reads XLA_FLAGS when its backend starts, in the child.
  proc = run_module(
      "pytest", [str(path), "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                 "-W", "ignore::DeprecationWarning", "--tb=short", "-o", "addopts="],
      env=env, cwd=path.parent, timeout=_TIMEOUT_S, preload=(*PRELOAD, "pytest"))
  if proc.returncode != 0:
    raise AssertionError(
        f"{path.name} failed in its {NUM_DEVICES}-device child process (exit {proc.returncode}):\n"
        f"{proc.stdout[-12000:]}\n{proc.stderr[-4000:]}")
