"""What a replay reads from module bytes, once per entry: custom-call signatures, the digest of
the text without locations compared with today's lowering and the arguments ``main`` donates
(one parse gives both), and the calling contract's change. Each read is taken from an earlier
run where the cross-run compile cache keeps it (``_kept_reads``)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness._worker import _calling, _kept_reads
from jaxport.harness._worker import _reference as _api


def same_computation(exp: Any, recorded_module: bytes, reads: ModuleReads | None = None) -> bool:
  """Whether today's module and the recorded one differ at most in their source locations
  (the recorded one's text read through the entry's ``reads``)."""
  return same_module_bytes(bytes(exp.mlir_module_serialized), recorded_module, reads)


def vjp_module(exp: Any) -> bytes | None:
  """The module of the VJP an Exported carries (of order 1), or None when it carries none."""
  if not exp.has_vjp():
    return None
  return bytes(exp.vjp().mlir_module_serialized)


def same_module_bytes(today: bytes, recorded_module: bytes,
                      reads: ModuleReads | None = None) -> bool:
  """Whether module bytes ``today`` and the recorded ones differ at most in their source
  locations."""
  if today == recorded_module:
    return True
  reads = reads if reads is not None else ModuleReads()
  try:
    return _todays_view(today)[0] == reads.text_digest(recorded_module)
  except Exception:  # noqa: BLE001  (unparsable: not known to be the same; run it)
    return False


class ModuleReads:
  """The modules one entry's readers handed back, and what the replay reads from module
  bytes, each read at most once per entry: both readers normally hand back the same module,
  whose signatures (lowering-only entries) and text without locations (the comparison with
  today's lowering) are then parsed once. Each reader still deserializes and calls with its
  own code; only these read-only views are shared."""

  def __init__(self) -> None:
    self.by_reader: dict[str, bytes] = {}
    # Each reader's calling contract of the blob (``_calling``), for today's comparison.
    self.contracts: dict[str, _calling.CallingContract] = {}
    # Each reader's module of the VJP the blob carries (None: it carries none).
    self.vjps: dict[str, bytes | None] = {}
    self._lock = threading.Lock()
    self._views: dict[tuple[str, bytes], Any] = {}

  def _once(self, what: str, module: bytes, read: Callable[[bytes], Any]) -> Any:
    key = (what, module)
    with self._lock:
      if key in self._views:
        return self._views[key]
    value = read(module)  # an error is raised to each caller, nothing kept
    with self._lock:
      return self._views.setdefault(key, value)

  def signatures(self, module: bytes) -> tuple[CustomCallSignature, ...]:
    """The module's custom-call signatures (``_kept_reads.read_signatures``)."""
    return self._once(_kept_reads.SIGNATURES, bytes(module), _read_signatures)

  def text_digest(self, module: bytes) -> str:
    """The digest of the module's text without locations (``_kept_reads.read_view``)."""
    return self._once(_kept_reads.VIEW, bytes(module), _read_view)[0]

  def donations(self, module: bytes) -> tuple[bool, ...]:
    """Whether each argument of the module's ``main`` is donated (``_mlir.main_donations``),
    from the same parse as its text."""
    return self._once(_kept_reads.VIEW, bytes(module), _read_view)[1]


def _read_signatures(module: bytes) -> tuple[CustomCallSignature, ...]:
  return _kept_reads.read(_kept_reads.SIGNATURES, module)


def _read_view(module: bytes) -> tuple[str, tuple[bool, ...]]:
  return _kept_reads.read(_kept_reads.VIEW, module)


@functools.lru_cache(maxsize=16)
def _todays_view(module: bytes) -> tuple[str, tuple[bool, ...]]:
  """The digest of today's module of a case without locations, and its donated arguments
  (its entries come one after another)."""
  return _read_view(module)


def contract_change(today: Any, reads: ModuleReads) -> _calling.ContractDiff:
  """How the calling contract of today's export, serialized and read back as a consumer reads
  it (``today``; its error text where it does not read back), differs from the entry's as the
  reference reader (else another) read it; no difference when no reader read the entry, or
  today's export does not read back (their failures say why)."""
  recorded = reads.contracts.get(_api.REFERENCE) or next(iter(list(reads.contracts.values())),
                                                          None)
  if recorded is None or isinstance(today, str):
    return _calling.ContractDiff()
  try:
    donations = _todays_view(bytes(today.mlir_module_serialized))[1]
  except Exception:  # noqa: BLE001  (read from the module by contract_of, which says why)
    donations = None
  return _calling.diff(recorded, _calling.contract_of(today, donations))
