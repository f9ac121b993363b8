"""The harness's workers: one process per host-device count, requests sent ahead, cold replays.

The session asks this pool for the worker an entry needs and for answers of a
known kind; the pool starts workers before their entries come (``prepare``),
keeps each worker's queue of requests sent ahead full in replay order, and runs
a cold replay's readers each in a fresh process. It reads an entry's manifest
once while the entry is among the few it looks at.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from jaxport import _limits
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import SHARDINGS_FILE, Manifest
from jaxport.golden._store import GoldenStore
from jaxport.harness import _devices
from jaxport.harness._protocol import _readers
from jaxport.harness._controller._cache_folder import private_folder
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import FailureKind, ReplayAnswer, WorkerFailure, wrong_kind
from jaxport.harness._protocol._requests import ReplayRequest
from jaxport.harness._controller._settings import Options
from jaxport.harness._controller._worker_client import Reply, WorkerClient
from jaxport._platforms import is_host, platform as platform_facts

# How many entries ahead of the current one ``prepare`` looks for the workers they need: a
# worker for another device count takes seconds to start, several entries' replays.
LOOKAHEAD = 32
# Manifests the pool keeps read: the entry being replayed and those ahead of it, read to
# prepare their workers.
_MANIFESTS_KEPT = LOOKAHEAD + 4
# Requests each worker holds ahead of the entry being replayed, of the entries that come next
# (in the order they come): a worker for another device count replays its next entries while
# the current one's worker replays theirs.
AHEAD_PER_WORKER = 8


class WorkerPool:
  """The workers of one pytest process, by the host-device count they were started with."""

  def __init__(self, project: Project, store: GoldenStore, options: Options):
    self.project = project
    self.store = store
    self.options = options
    self._clients: dict[int, WorkerClient] = {}
    self._devices: dict[str, int] = {}
    # Entries found without a shardings file while looking ahead: one device each, their
    # manifests not read for it.
    self._without_shardings: set[str] = set()
    # The entries pytest replays next here, in order, when known (prepare): their requests go
    # to their workers as soon as the current entry's answer is in.
    self._upcoming: list[str] = []
    # The manifests read last (those of the entries ahead, read when their workers are
    # prepared, and the current one's), so that an entry's manifest is read once here.
    self._manifests: collections.OrderedDict[str, Manifest] = collections.OrderedDict()
    # Manifests kept for the whole run (``manifest(keep=True)``): one entry per case at most.
    self._kept: dict[str, Manifest] = {}
    self._cache_checked = False
    # The run's entries whose workers start with the next replay (``expect``).
    self._expected: list[str] = []
    self._cache_dir: Path | None = None
    # What a worker said about itself (a memo in front of jax that stays off), each once.
    self.notices: list[str] = []

  @property
  def running(self) -> bool:
    """Whether any worker has been made."""
    return bool(self._clients)

  def any_worker(self) -> WorkerClient:
    """A worker already made: the single-device one where there is one."""
    return self._clients.get(1) or next(iter(self._clients.values()))

  @property
  def platform(self) -> str:
    return self.options.settings.platform

  @property
  def max_rss_bytes(self) -> int:
    """The resident memory past which a busy worker is killed: the run's setting, plus what a
    TPU runtime keeps resident once the chip is open (``_limits.TPU_RUNTIME_RSS_BYTES``)."""
    extra = _limits.TPU_RUNTIME_RSS_BYTES if platform_facts(self.platform).resident_runtime else 0
    return self.options.settings.worker_max_rss_bytes + extra

  def worker(self, num_devices: int = 1) -> WorkerClient:
    """The worker for entries needing ``num_devices`` host devices (one process per count on
    the CPU, which simulates them). An accelerator run has one worker, with the machine's own
    devices: a TPU chip opens in one process at a time, and an entry that needs more devices
    than the machine has is not run (``_devices.device_shortfall``)."""
    if not is_host(self.platform):
      num_devices = 1
    if num_devices not in self._clients:
      self._clients[num_devices] = WorkerClient(self.project,
                                                timeout_s=self.options.settings.worker_timeout_s,
                                                num_devices=num_devices,
                                                compile_cache=self.compile_cache_dir(),
                                                share_executables=self.shares_executables,
                                                max_rss_bytes=self.max_rss_bytes,
                                                platform=self.platform)
    return self._clients[num_devices]

  @property
  def shares_executables(self) -> bool:
    """Whether a worker compiles each distinct module once (not in cold or uncached replay)."""
    return not (self.options.settings.no_cache or self.options.settings.cold)

  def compile_cache_dir(self) -> Path | None:
    """The folder where workers keep executables for later runs (``--compat-cache-dir``, by
    default the project's ``.jaxport_cache/xla``), made private on first use; None in cold
    or uncached replay, or where the folder cannot be made private."""
    o = self.options
    if not self.shares_executables or not o.settings.cache_dir:
      return None
    if not self._cache_checked:
      self._cache_checked = True
      self._cache_dir = private_folder(Path(o.settings.cache_dir), o.project_root)
    return self._cache_dir

  # --- what an entry needs -----------------------------------------------------

  def devices_needed(self, entry_id: EntryId) -> int:
    """The host devices an entry's replay needs (read once per entry)."""
    if entry_id not in self._devices:
      manifest = self.manifest(entry_id)
      # Only an entry with recorded shardings may need more than one device (reading them
      # reads the manifest again).
      shardings = (self.store.entry(entry_id).shardings()
                   if SHARDINGS_FILE in manifest.files else None)
      self._devices[entry_id] = _devices.devices_needed(shardings)
    return self._devices[entry_id]

  def _devices_foreseen(self, entry_id: EntryId) -> int:
    """The host devices an entry will need, as far as starting its worker early goes: one for
    an entry without a shardings file, known without reading its manifest (which its replay
    reads, and refuses there if it lists a shardings file that is missing)."""
    if entry_id in self._devices:
      return self._devices[entry_id]
    if entry_id not in self._without_shardings:
      entry = self.store.entry(entry_id)
      if (entry.path / SHARDINGS_FILE).exists():
        return self.devices_needed(entry_id)
      self._without_shardings.add(entry_id)
    return 1

  def _keep_manifest(self, entry_id: EntryId, manifest: Manifest) -> None:
    self._manifests[entry_id] = manifest
    while len(self._manifests) > _MANIFESTS_KEPT:
      self._manifests.popitem(last=False)

  def manifest(self, entry_id: EntryId, keep: bool = False) -> Manifest:
    """The entry's validated manifest, read once while it is among the last few asked for;
    ``keep``: kept for the whole run (a case's entry of the installed jax, which the judging
    of the case's older entries asks for before its own replay reads it)."""
    if entry_id in self._kept:
      return self._kept[entry_id]
    if entry_id not in self._manifests:
      self._keep_manifest(entry_id, self.store.entry(entry_id).manifest)
    if keep:
      self._kept[entry_id] = self._manifests[entry_id]
    return self._manifests[entry_id]

  # --- ahead of the entries ----------------------------------------------------

  def prepare(self, entry_id: EntryId, ahead: Sequence[EntryId] = ()) -> None:
    """Start the worker ``entry_id`` will need, so that it loads jax and the project's cases
    while the current entry replays (a no-op when that worker runs already), and those the
    entries ``ahead`` of it need (the ones that run after it, in order, when the caller
    knows them), so that a worker for another device count is ready when its first entry
    comes."""
    self._upcoming = [entry_id, *ahead]
    self.start_workers_for(self._upcoming)

  def expect(self, entry_ids: Iterable[EntryId]) -> None:
    """The entries this process replays, in order, once pytest has collected them: every
    worker they need is started as soon as the first entry's requests are sent (reading
    their manifests then keeps no worker waiting), however far down the run its first entry
    comes (a worker takes longer to start than ``LOOKAHEAD`` entries of a warm replay)."""
    self._expected = list(entry_ids)

  def start_workers_for(self, entry_ids: Iterable[EntryId]) -> None:
    """Get each worker the entries ``entry_ids`` need going now, unless it runs
    (``WorkerClient.start_soon``)."""
    if self.options.settings.cold or self.options.settings.record:
      return
    started: set[int] = set()
    for entry_id in entry_ids:
      try:
        num_devices = self._devices_foreseen(entry_id)
      except GoldenDataError:
        continue  # its replay reports it
      if num_devices not in started:
        started.add(num_devices)
        self.worker(num_devices).start_soon()

  def replay(self, request: ReplayRequest, num_devices: int, finished: Callable[[str], bool],
             request_of: Callable[[str, Manifest], ReplayRequest]) -> Reply:
    """The reply of the worker for ``num_devices`` to an entry's replay request. The request
    goes to that worker first (unless it went ahead already), the requests of the entries
    after it follow at once (:meth:`_send_next`), and only then is its answer awaited: the
    worker goes on to the next entry while this process reads and judges this one's answer,
    never waiting for it between entries."""
    worker = self.worker(num_devices)
    worker.send_ahead(request, AHEAD_PER_WORKER)
    self._send_next(request.entry_id, finished, request_of)
    expected, self._expected = self._expected, []
    self.start_workers_for(expected)
    return worker.request(request)

  def _send_next(self, current: str, finished: Callable[[str], bool],
                 request_of: Callable[[str, Manifest], ReplayRequest]) -> None:
    """Send the requests of the entries that come after ``current`` to their workers now, in
    order, up to ``AHEAD_PER_WORKER`` each: a worker replays while this process judges the
    current entry and pytest moves on (it would wait otherwise), and the worker of another
    device count replays its coming entries beside it. ``finished`` says which entries have
    an outcome already; ``request_of`` makes an entry's request."""
    full: set[int] = set()
    for upcoming in self._upcoming:
      if upcoming == current or finished(upcoming):
        continue
      try:
        # Its manifest is read only when its request is sent: an entry further ahead is
        # passed over again and again while its worker's queue is full.
        num_devices = self._devices_foreseen(upcoming)
        if num_devices in full:
          continue
        worker = self.worker(num_devices)
        if worker.holds_ahead(upcoming):  # only replay requests go ahead
          continue
        self.devices_needed(upcoming)  # refuses an entry that lists shardings it lacks
        request = request_of(upcoming, self.manifest(upcoming))
      except GoldenDataError:
        continue  # its own replay reports it, asking no worker
      if not worker.send_ahead(request, AHEAD_PER_WORKER):
        full.add(num_devices)  # and nothing after it goes to that worker, to keep the order

  # --- answers -----------------------------------------------------------------

  def answer(self, reply: Reply, kind: type) -> Any:
    """A worker's reply to a request whose answer is of ``kind``, its notices kept: that
    answer or a failure; an answer of another kind is a malformed one."""
    answer = reply.answer
    self.take_notices(reply.notices)
    if not isinstance(answer, (kind, WorkerFailure)):
      return wrong_kind(kind, answer)
    return answer

  def take_notices(self, notices: Iterable[str]) -> None:
    """Keep the worker's notices, each once (a crashed worker's answer has none)."""
    self.notices.extend(n for n in notices if n not in self.notices)

  def replay_cold(self, request: ReplayRequest,
                  num_devices: int) -> tuple[ReplayAnswer | WorkerFailure, str]:
    """Each reader in its own fresh worker, deserializing and calling before anything else
    (today's export runs after the last reader); a failure is that entry's answer. Also
    what the workers printed."""
    readers = _readers.readers()
    parts: list[ReplayAnswer] = []
    output = ""
    for i, reader in enumerate(readers):
      last = i == len(readers) - 1
      client = WorkerClient(self.project, timeout_s=self.options.settings.worker_timeout_s,
                            num_devices=1 if not is_host(self.platform) else num_devices,
                            cold_start=True, platform=self.platform,
                            max_rss_bytes=self.max_rss_bytes)
      try:
        reply = client.request(dataclasses.replace(request, readers=(reader,),
                                                   current=request.current and last))
        part = self.answer(reply, ReplayAnswer)
        output += reply.output
      finally:
        client.close()
      if isinstance(part, WorkerFailure):
        if part.kind is FailureKind.CRASHED:
          part = dataclasses.replace(part, why=f"cold replay with the {reader} reader in a "
                                               f"fresh process: {part.why}")
        return part, output
      parts.append(part)
    timings: dict[str, float] = {}
    for part in parts:
      for name, seconds in part.timings.items():
        timings[name] = timings.get(name, 0.0) + seconds
    return dataclasses.replace(parts[-1], readers=tuple(r for p in parts for r in p.readers),
                               seconds=sum(p.seconds for p in parts), timings=timings), output

  def close(self) -> None:
    """Stop every worker, even when stopping one is interrupted; closing twice does nothing
    more."""
    try:
      for client in list(self._clients.values()):
        client.close()
    finally:
      self._clients.clear()


def printed(output: str) -> str:
  """The section of a failure that quotes what the worker printed while handling its request
  ("" when it printed nothing)."""
  if not output.strip():
    return ""
  return ("\nwhat the worker wrote to stdout and stderr meanwhile (the case code's prints, "
          f"jax's warnings):\n{output.rstrip()}")
