"""Today's lowering of a project's cases, for comparing custom-call signatures with an entry.

The cases are imported and lowered only in the command's module parser child
(:class:`CasesInChild`; the child runs :meth:`Relowerer.today`): the project's code never
runs in the command's own process, and what today's export says crosses back as
:class:`Today`, read strictly.

Case modules are the project's code. Importing one runs it, so audit imports
only the modules the user names: with ``jaxport audit --cases MODULE``
(importable as installed or from ``PYTHONPATH``) or through the project the
user names with ``--project DIR`` (its ``jaxport_cases``, imported from the
project's root and pytest ``pythonpath``, as the harness's worker imports
them), never ones found by looking around the working directory: an extracted
bundle or a shared temporary folder must not run code. Without them, drift is
reported as not checked; named modules that fail to import are an error, not a
pass with nothing checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import GoldenDataError
from jaxport.cli._artifacts import deserialize
from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness._worker import _calling, _case_runs, _jax_setup
from jaxport.harness._worker._sharding_contract import MeshTerms, ShardingTerms
from jaxport.harness._registry import CaseRegistry

logger = logging.getLogger(__name__)
_S = Strict.raising(ValueError)

NOT_REQUESTED = "no case module named"
# Where the case modules came from, as the messages name it.
FROM_CASES = "the case modules named with --cases"
FROM_PROJECT = "the project's case modules (jaxport_cases)"


@contextlib.contextmanager
def _on_path(paths: Sequence[str]) -> Iterator[None]:
  """``paths`` first on ``sys.path`` for the block: the one place jaxport puts a directory
  there, the project's own, which the user named with ``--project``."""
  added = [p for p in dict.fromkeys(paths) if p not in sys.path]
  sys.path[:0] = added
  try:
    yield
  finally:
    for p in added:
      if p in sys.path:
        sys.path.remove(p)


class Relowerer:
  """Looks cases up by id in the named modules and lowers them as the harness records them.

  ``paths``: the project's directories, first on ``sys.path`` while its case modules are
  imported and lowered; ``source``: where the modules came from, for the messages.
  """

  def __init__(self, modules: tuple[str, ...], paths: Sequence[str] = (),
               source: str = FROM_CASES):
    self.modules = tuple(modules)
    self.registry = CaseRegistry(modules) if modules else None
    self.paths = tuple(paths)
    self.source = source
    self.unavailable: str | None = None
    self._loaded = False
    # Each case's export today, by case id: its signatures and its contract both come of it.
    self._exports: dict[str, Any] = {}
    if not modules:
      self.unavailable = (f"{NOT_REQUESTED}: pass --cases MODULE, or --project DIR for the "
                          "project's own, to re-lower the project's cases (this runs the "
                          "project's code)")

  def load(self) -> None:
    """Import the case modules now: they also register the project's pytree and effect types,
    which entries need before they can be deserialized. Modules that fail to import raise a
    ``GoldenDataError`` naming them and where they were looked for."""
    if self.registry is None or self._loaded:
      return
    try:
      with _on_path(self.paths):
        self.registry.by_id  # noqa: B018  (imports every module)
    except Exception as e:  # noqa: BLE001  (the project's code: any failure, one message)
      detail = str(e) if isinstance(e, GoldenDataError) else f"{type(e).__name__}: {e}"
      raise GoldenDataError(f"importing {self.source} {list(self.registry.modules)} failed: "
                            f"{detail}. {self._where()}") from None
    self._loaded = True

  def _where(self) -> str:
    return _where(self.source, self.paths)

  def load_here(self) -> bool:
    """Import the case modules in this process (:meth:`load`); whether there are any."""
    self.load()
    return self.registry is not None

  def _registry(self) -> CaseRegistry | None:
    if self.unavailable is not None:
      return None
    self.load()
    return self.registry

  def case(self, case_id: str) -> Any | None:
    reg = self._registry()
    return None if reg is None else reg.case(case_id)

  def _export(self, case: Any) -> Any:
    """The case exported today under the harness's settings (short locations, the case's own
    jax configuration), once per case; jax's settings are restored."""
    if case.case_id not in self._exports:
      with _jax_setup.jax_config(_jax_setup.recording_config()), _on_path(self.paths):
        self._exports[case.case_id] = _case_runs.export_case(case)
      logger.debug("re-lowered case %s", case.case_id)
    return self._exports[case.case_id]

  def signatures(self, case: Any) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of the case lowered today."""
    return _signatures.signatures(self._export(case).mlir_module_serialized)

  def contract(self, case: Any) -> _calling.CallingContract:
    """The calling contract of the case exported today, serialized and read back as a
    consumer reads it (as the replay compares it)."""
    exp = self._export(case)
    return _calling.contract_of(deserialize(bytes(exp.serialize(vjp_order=case.vjp_order or 0))))

  def comparison(self, case: Any, outputs: Any) -> Any:
    """The case's comparison settings as a recording of it today would write them for the
    entry's ``outputs`` (``_calling.comparison_today``)."""
    with _on_path(self.paths):
      return _calling.comparison_today(case, outputs)

  @property
  def checkers(self) -> Any:
    """The project's checkers by name (none before its case modules are loaded)."""
    return self.registry.checkers if self.registry is not None else {}

  def today(self, manifest: Any, recorded: _calling.CallingContract | None,
            label: str = "") -> Today:
    """What today's export of ``manifest``'s case says against the entry: its custom-call
    signatures and, where ``recorded`` (the entry's calling contract) is given, the contract's
    and the comparison settings' differences. A failure of the project's code is said in the
    answer, for that entry alone (``label`` names the entry)."""
    case = self.case(manifest.case_id)
    if case is None:
      return Today(False)
    try:
      sigs = self.signatures(case)
    except Exception as e:  # noqa: BLE001  (the project's code: reported for this entry)
      return Today(True, lowering_error=_line(e))
    if recorded is None:
      return Today(True, sigs)
    try:
      diff = _calling.diff(recorded, self.contract(case))
      outputs = [(t.path, t.dtype) for t in manifest.tolerances or ()]
      settings = _calling.comparison_change(manifest, self.comparison(case, outputs), case,
                                            self.checkers)
    except Exception as e:  # noqa: BLE001  (the project's code: reported for this entry)
      return Today(True, sigs, contract_error=_line(e))
    return Today(True, sigs, by_function=tuple(diff.by_function) + tuple(settings),
                 by_jax=tuple(diff.by_jax), platforms_added=tuple(diff.platforms_added),
                 donation_removed=tuple(diff.donation_removed))


def _where(source: str, paths: Sequence[str]) -> str:
  """Where case modules of ``source`` were looked for, and how to fix it."""
  if source == FROM_CASES and not paths:
    return ("--cases imports them from the installed packages and PYTHONPATH; pass "
            "--project DIR to import them from the project's root and pytest pythonpath, as "
            "the harness does, or set PYTHONPATH")
  return (f"Looked in the project's paths {list(paths)}, then on sys.path; check "
          "jaxport_cases and pytest's pythonpath in the project's configuration")


def _line(e: BaseException) -> str:
  text = str(e).splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"



@json_record(_S)
@dataclasses.dataclass(frozen=True)
class Today:
  """What today's export of an entry's case says (:meth:`Relowerer.today`): whether the case
  exists (``found``), its custom-call ``signatures`` (None: ``lowering_error`` says why), and
  its calling contract's differences from the entry's, what the function's owner changed
  (``by_function``, with the comparison settings), what jax writes differently (``by_jax``)
  the platforms today's export adds (``platforms_added``) and the inputs it no longer donates
  (``donation_removed``), or ``contract_error``."""
  found: bool
  signatures: tuple[CustomCallSignature, ...] | None = key(
      default=None, read=lambda s, v, where: _signatures_field(v, where),
      write=lambda sigs: None if sigs is None else [x.to_dict() for x in sigs])
  lowering_error: str | None = None
  by_function: tuple[str, ...] = ()
  by_jax: tuple[str, ...] = ()
  contract_error: str | None = None
  platforms_added: tuple[str, ...] = ()
  donation_removed: tuple[str, ...] = ()


def _signatures_field(value: Any, where: str) -> tuple[CustomCallSignature, ...] | None:
  if value is None:
    return None
  return tuple(_signature(x, where) for x in _S.of(value, list, where))


def _signature(d: Any, where: str) -> CustomCallSignature:
  d = _S.obj(d, where, ("target", "operand_types", "result_types", "attributes"), ())
  attributes = _S.of(d["attributes"], dict, f"{where}.attributes")
  return CustomCallSignature(target=_S.of(d["target"], str, f"{where}.target"),
                             operand_types=_S.strs(d["operand_types"], f"{where}.operand_types"),
                             result_types=_S.strs(d["result_types"], f"{where}.result_types"),
                             attributes={_S.of(k, str, where): _S.of(v, str, f"{where}.{k}")
                                         for k, v in attributes.items()})


def contract_json(c: _calling.CallingContract) -> dict[str, Any]:
  """A calling contract as it crosses to the module parser child."""
  return {"inputs": [list(p) for p in c.inputs], "outputs": [list(p) for p in c.outputs],
          "in_shardings": list(c.in_shardings), "out_shardings": list(c.out_shardings),
          "effects": list(c.effects), "calling_convention_version": c.calling_convention_version,
          "platforms": list(c.platforms), "in_named": _named_json(c.in_named),
          "out_named": _named_json(c.out_named), "nr_devices": c.nr_devices,
          "donated": list(c.donated)}


def _spec_entry_json(p: Any) -> Any:
  return list(p) if isinstance(p, tuple) else p


def _named_json(named: Any) -> Any:
  """Named shardings in a caller's terms (``_sharding_contract.ShardingTerms``) as JSON."""
  if named is None:
    return None
  return [None if t is None else {
      "mesh": {"axis_names": list(t.mesh.axis_names), "axis_sizes": list(t.mesh.axis_sizes),
               "axis_types": list(t.mesh.axis_types)},
      "spec": [_spec_entry_json(p) for p in t.spec], "unreduced": list(t.unreduced),
      "reduced": list(t.reduced), "memory_kind": t.memory_kind} for t in named]


def _named_from_json(d: Any, where: str) -> Any:
  """The named shardings :func:`_named_json` wrote; ``ValueError`` naming the field."""
  if d is None:
    return None
  out = []
  for i, t in enumerate(_S.of(d, list, where)):
    at = f"{where}[{i}]"
    if t is None:
      out.append(None)
      continue
    t = _S.obj(t, at, ("mesh", "spec", "unreduced", "reduced", "memory_kind"), ())
    mesh = _S.obj(t["mesh"], f"{at}.mesh", ("axis_names", "axis_sizes", "axis_types"), ())
    spec = []
    for p in _S.of(t["spec"], list, f"{at}.spec"):
      if isinstance(p, list):
        spec.append(tuple(_S.strs(p, f"{at}.spec")))
      else:
        spec.append(_S.of(p, str, f"{at}.spec", nullable=True))
    sizes = _S.of(mesh["axis_sizes"], list, f"{at}.mesh.axis_sizes")
    out.append(ShardingTerms(
        MeshTerms(_S.strs(mesh["axis_names"], f"{at}.mesh.axis_names"),
                  tuple(_S.of(n, int, f"{at}.mesh.axis_sizes") for n in sizes),
                  _S.strs(mesh["axis_types"], f"{at}.mesh.axis_types")),
        tuple(spec), _S.strs(t["unreduced"], f"{at}.unreduced"),
        _S.strs(t["reduced"], f"{at}.reduced"),
        _S.of(t["memory_kind"], str, f"{at}.memory_kind", nullable=True)))
  return tuple(out)


def contract_from_json(d: Any, where: str) -> _calling.CallingContract:
  """The contract :func:`contract_json` wrote; ``ValueError`` naming the field otherwise."""
  d = _S.obj(d, where, ("inputs", "outputs", "in_shardings", "out_shardings", "effects",
                        "calling_convention_version", "platforms", "in_named", "out_named",
                        "nr_devices", "donated"), ())

  def pairs(key: str) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(_S.strs(p, f"{where}.{key}")) for p in _S.of(d[key], list,
                                                                    f"{where}.{key}"))

  def shardings(key: str) -> tuple[str | None, ...]:
    return tuple(_S.of(x, str, f"{where}.{key}", nullable=True)
                 for x in _S.of(d[key], list, f"{where}.{key}"))

  return _calling.CallingContract(
      pairs("inputs"), pairs("outputs"), shardings("in_shardings"), shardings("out_shardings"),
      _S.strs(d["effects"], f"{where}.effects"),
      _S.of(d["calling_convention_version"], int, f"{where}.calling_convention_version"),
      _S.strs(d["platforms"], f"{where}.platforms"),
      in_named=_named_from_json(d["in_named"], f"{where}.in_named"),
      out_named=_named_from_json(d["out_named"], f"{where}.out_named"),
      nr_devices=_S.of(d["nr_devices"], int, f"{where}.nr_devices"),
      donated=_S.strs(d["donated"], f"{where}.donated"))


class CasesInChild:
  """The cases of ``modules`` as the command's module parser child (``parser``) imports and
  lowers them: nothing of the project's code runs in this process. The same interface as
  audit needs of a :class:`Relowerer`: ``load``, ``unavailable``, ``source``, ``today``."""

  def __init__(self, modules: tuple[str, ...], paths: Sequence[str], source: str,
               parser: Any):
    self.modules = tuple(modules)
    self.paths = tuple(paths)
    self.source = source
    self.parser = parser
    self.unavailable: str | None = None if modules else Relowerer(()).unavailable
    self._loaded = False

  def load(self) -> None:
    """Have the child import the case modules now; modules that fail to import there raise a
    ``GoldenDataError`` naming them and where they were looked for."""
    if not self.modules or self._loaded:
      return
    self.parser.import_modules(self.modules, self.paths, self.source)
    failed = self.parser.import_failure()
    if failed is not None:
      raise GoldenDataError(failed)
    self._loaded = True

  def today(self, manifest: Any, recorded: _calling.CallingContract | None,
            label: str) -> Today:
    """:meth:`Relowerer.today`, done in the child."""
    self.load()
    return self.parser.today(manifest, recorded, label)
