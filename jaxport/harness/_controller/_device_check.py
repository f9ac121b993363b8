"""What the session learns of the run's devices from its worker, and what it makes of it.

The pytest process never opens a device itself: on a TPU machine one process at
a time can hold the chip, and a worker that replays must be that process. So a
run on an accelerator asks its worker (``DevicesRequest``) which backend it has,
the device kind and how many devices, once per session. The answer decides
three things: the run stops when the backend is another platform than the one
asked for; the golden items fail once, naming who holds the device and what to
do, when the backend did not open; and an entry that needs more devices than the
machine has is read and compared but not run. A CPU run asks nothing: its
workers are held to the CPU, and the CPU simulates any device count.
"""

from __future__ import annotations

import dataclasses

from jaxport.harness import _devices
from jaxport.harness._protocol._answers import DevicesAnswer, WorkerFailure
from jaxport.harness._protocol._requests import DevicesRequest
from jaxport.harness._controller._worker_pool import WorkerPool
from jaxport._platforms import is_host


@dataclasses.dataclass(frozen=True)
class DeviceCheck:
  """The run's devices as its worker found them. ``problem``: why no golden entry can be
  replayed here (None when they can); ``mismatch``: the problem is another platform's
  backend, which stops the run as a usage error where it is found before the tests."""
  platform: str
  device_kind: str = ""
  count: int = 0
  problem: str | None = None
  mismatch: bool = False

  def shortfall(self, needed: int) -> str | None:
    """Why an entry needing ``needed`` devices is not run here (None when it is)."""
    if is_host(self.platform) or self.problem is not None:
      return None
    return _devices.device_shortfall(needed, self.count, self.platform)


def check_devices(pool: WorkerPool, platform: str) -> DeviceCheck:
  """Ask the run's worker about its devices (nothing on a CPU run)."""
  if is_host(platform):
    return DeviceCheck(platform)
  answer = pool.answer(pool.worker().request(DevicesRequest()), DevicesAnswer)
  if isinstance(answer, WorkerFailure):
    return DeviceCheck(platform, problem=(
        f"the harness's worker could not say which devices it has ({answer.kind}): "
        f"{answer.why}"))
  if answer.error:
    return DeviceCheck(platform, problem=not_opened(platform, answer.error))
  mismatch = _devices.platform_mismatch(platform, answer.platform)
  return DeviceCheck(platform, answer.device_kind, answer.count, problem=mismatch,
                     mismatch=mismatch is not None)


def not_opened(platform: str, error: str) -> str:
  """The one message of a run whose worker could not open the ``platform`` device."""
  one_holder = (f"One process at a time can hold a {platform} chip. "
                if _devices.single_holder(platform) else "")
  return (f"the {platform} device did not open in the harness's worker, so no golden entry "
          f"was replayed: {error}. {one_holder}Where a test of this run uses jax in pytest's "
          "own process, replay the golden entries in a pytest run of their own (pytest "
          f"--compat-only --compat-platform={platform}), or keep those tests on the CPU "
          "(jax.config.update('jax_platforms', 'cpu') in their conftest.py); where another "
          "program holds the device, let it finish first.")
