"""The calling contract of an export: what a consumer of the shipped artifact calls it with.

A golden entry promises more than its module: whoever calls the artifact passes arguments of
its input tree, dtypes and shapes, and reads outputs of its output tree. Renaming a key of a
params dict leaves the module as it was and breaks every caller, so the harness compares the
contract of the entry's blob with that of today's export of its case, path by path
(``args[0]['w1']``, ``output[0]``), and names each difference. The platforms it is lowered for
are part of it: a fleet of a platform the artifact no longer names cannot load it, while a
platform added breaks no caller (:attr:`ContractDiff.platforms_added`). So are its shardings,
in the caller's terms (mesh axes and PartitionSpecs, :mod:`_sharding_contract`), the device
count, and the inputs it donates: a donation added lets the module reuse a buffer its callers
may still read, while one removed breaks no caller (:attr:`ContractDiff.donation_removed`).
jax's own ``Exported.call`` ignores an artifact's donation; runtimes that compile the module
honour it.

The calling-convention version is not the user's: a jax release writes the one it writes, so
a difference there is reported apart (:attr:`ContractDiff.by_jax`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

import jax

from jaxport.export import _mlir
from jaxport.harness import _case
from jaxport.harness._worker import _sharding_contract
from jaxport.harness._worker._sharding_contract import ShardingTerms


@dataclasses.dataclass(frozen=True)
class CallingContract:
  """Inputs and outputs as ``(path, type)`` pairs in the order of the flat call, their
  shardings (HLO sharding text, None for unspecified), the effects, the calling-convention
  version and the platforms the module is lowered for (in the blob's order); the named
  shardings in a caller's terms (``in_named``/``out_named``, None where the record keeps HLO
  shardings only), the device count, and the paths of the inputs ``main`` donates."""
  inputs: tuple[tuple[str, str], ...]
  outputs: tuple[tuple[str, str], ...]
  in_shardings: tuple[str | None, ...]
  out_shardings: tuple[str | None, ...]
  effects: tuple[str, ...]
  calling_convention_version: int
  platforms: tuple[str, ...]
  in_named: tuple[ShardingTerms | None, ...] | None = None
  out_named: tuple[ShardingTerms | None, ...] | None = None
  nr_devices: int = 1
  donated: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ContractDiff:
  """How today's contract differs from the recorded one: what the function's owner changed
  (``by_function``, one line each; a platform removed among them), what the jax release
  writes differently (``by_jax``), and the platforms today's export adds to the recorded ones
  (``platforms_added``, one line; no caller of the entry breaks), and the inputs no longer
  donated (``donation_removed``, one line each; no caller breaks either)."""
  by_function: tuple[str, ...] = ()
  by_jax: tuple[str, ...] = ()
  platforms_added: tuple[str, ...] = ()
  donation_removed: tuple[str, ...] = ()


def _type(aval: Any) -> str:
  """``float32[5, 1]``: an abstract value as a caller sees it (symbolic dims by name)."""
  return f"{aval.dtype}[{', '.join(str(d) for d in aval.shape)}]"


def _paths(tree: Any, avals: Any, root: str) -> tuple[tuple[str, str], ...]:
  """The leaves of ``tree`` filled with ``avals``, as ``(path, type)``; the inputs' tree is
  ``(args, kwargs)``, shown as ``args[0]...`` and ``kwargs['name']...``."""
  filled = jax.tree_util.tree_unflatten(tree, list(avals))
  leaves = jax.tree_util.tree_flatten_with_path(filled)[0]
  out = []
  for path, aval in leaves:
    if root == "inputs" and path and isinstance(path[0], jax.tree_util.SequenceKey):
      name = ("args", "kwargs")[path[0].idx] + jax.tree_util.keystr(tuple(path[1:]))
    else:
      name = "output" + jax.tree_util.keystr(tuple(path))
    out.append((name, _type(aval)))
  return tuple(out)


def _shardings(shardings: Any) -> tuple[str | None, ...]:
  return tuple(None if s is None else str(s) for s in shardings)


def _donated(exported: Any, inputs: tuple[tuple[str, str], ...],
             donations: tuple[bool, ...]) -> tuple[str, ...]:
  """The paths of the inputs whose arguments of ``main`` are donated (``donations``, one per
  argument of ``main``): the module's own arguments (a platform index, effect tokens) come
  first, then one per input the module keeps."""
  kept = tuple(exported.module_kept_var_idx)
  offset = len(donations) - len(kept)
  if offset < 0:
    return ()
  return tuple(inputs[i][0] for i, d in zip(kept, donations[offset:]) if d and i < len(inputs))


def contract_of(exported: Any, donations: tuple[bool, ...] | None = None) -> CallingContract:
  """The calling contract of an ``Exported`` (jaxport's or jax.export's). ``donations``: which
  arguments of its module's ``main`` are donated, where the caller has parsed the module
  already (``_mlir.text_and_donations``); read from the module otherwise."""
  if donations is None:
    donations = _mlir.text_and_donations(bytes(exported.mlir_module_serialized))[1]
  inputs = _paths(exported.in_tree, exported.in_avals, "inputs")
  named = _sharding_contract.named_terms(exported)
  effects = (*(f"ordered {e}" for e in exported.ordered_effects),
             *(f"unordered {e}" for e in exported.unordered_effects))
  return CallingContract(
      inputs=inputs,
      outputs=_paths(exported.out_tree, exported.out_avals, "outputs"),
      in_shardings=_shardings(exported.in_shardings_hlo),
      out_shardings=_shardings(exported.out_shardings_hlo),
      effects=tuple(sorted(str(e) for e in effects)),
      calling_convention_version=int(exported.calling_convention_version),
      platforms=tuple(str(p) for p in exported.platforms),
      in_named=None if named is None else named[0],
      out_named=None if named is None else named[1],
      nr_devices=int(exported.nr_devices),
      donated=_donated(exported, inputs, donations))


def _platforms(recorded: tuple[str, ...], today: tuple[str, ...]) -> tuple[list[str], list[str]]:
  """The platforms line of each kind: those today's export no longer names (its callers there
  cannot load it), and those it names anew. Their order is not compared: a consumer's jax
  picks its platform's lowering by name."""
  removed = [p for p in recorded if p not in today]
  added = [p for p in today if p not in recorded]
  gone = ([f"platforms: {removed} removed ({list(recorded)} became {list(today)}): the "
           f"artifact no longer loads on {', '.join(removed)}"] if removed else [])
  new = ([f"platforms: {added} added ({list(recorded)} became {list(today)})"]
         if added else [])
  return gone, new


def _side(prefix: str, recorded: tuple[tuple[str, str], ...],
          today: tuple[tuple[str, str], ...]) -> list[str]:
  """The differences of one side (``prefix`` "input " or "" for the outputs, whose paths
  start with ``output``): paths removed and added, types changed, and, when the same leaves
  come in another order, the order."""
  old, new = dict(recorded), dict(today)
  lines = [f"{prefix}{p} ({old[p]}) removed" for p in old if p not in new]
  lines += [f"{prefix}{p} ({new[p]}) added" for p in new if p not in old]
  lines += [f"{prefix}{p}: {old[p]} became {new[p]}" for p in old
            if p in new and old[p] != new[p]]
  if not lines and [p for p, _ in recorded] != [p for p, _ in today]:
    lines.append(f"{prefix or 'outputs '}reordered: {[p for p, _ in recorded]} became "
                 f"{[p for p, _ in today]}")
  return lines


def diff(recorded: CallingContract, today: CallingContract) -> ContractDiff:
  """How ``today``'s contract differs from the ``recorded`` one."""
  mine = _side("input ", recorded.inputs, today.inputs)
  mine += _side("", recorded.outputs, today.outputs)
  same_leaves = not mine
  if not mine and None not in (recorded.in_named, recorded.out_named, today.in_named,
                              today.out_named):
    # the same leaves, named shardings on both sides: compared in a caller's terms
    paths = [("input ", p) for p, _ in recorded.inputs] + [("", p) for p, _ in recorded.outputs]
    mine += _sharding_contract.sharding_lines(paths, (*recorded.in_named, *recorded.out_named),
                                              (*today.in_named, *today.out_named))
  elif not mine:  # the same leaves: their HLO shardings compare one by one
    for prefix, paths, old, new in (("input ", recorded.inputs, recorded.in_shardings,
                                     today.in_shardings),
                                    ("", recorded.outputs, recorded.out_shardings,
                                     today.out_shardings)):
      for (path, _), a, b in zip(paths, old, new):
        if a != b:
          mine.append(f"{prefix}{path} sharding: {a or 'unspecified'} became "
                      f"{b or 'unspecified'}")
  if recorded.nr_devices != today.nr_devices:
    mine.append(f"device count {recorded.nr_devices} became {today.nr_devices}")
  mine += [f"input {p}: donated anew (the compiled module may reuse its buffer, which a caller "
           "that reads it after the call still holds)" for p in today.donated
           if same_leaves and p not in recorded.donated]
  no_longer = [f"input {p}: no longer donated (the call keeps its buffer and needs memory for "
               "its outputs besides)" for p in recorded.donated
               if same_leaves and p not in today.donated]
  if recorded.effects != today.effects:
    mine.append(f"effects: {list(recorded.effects)} became {list(today.effects)}")
  removed, added = _platforms(recorded.platforms, today.platforms)
  mine += removed
  jaxs = []
  if recorded.calling_convention_version != today.calling_convention_version:
    jaxs.append(f"calling convention version {recorded.calling_convention_version} became "
                f"{today.calling_convention_version}")
  return ContractDiff(tuple(mine), tuple(jaxs), tuple(added), tuple(no_longer))


def comparison_today(case: Any, outputs: Any) -> Any:
  """What a recording of ``case`` with ``outputs`` (``(path, dtype)`` pairs) would write as its
  comparison (``_case.CaseComparison``), or why it cannot (a path of the case's tolerances
  that names no output)."""
  try:
    return _case.comparison_of(case, outputs)
  except ValueError as e:
    return str(e)


def comparison_change(recorded: Any, today: Any, case: Any,
                      known: Collection[str]) -> tuple[str, ...]:
  """How a case's comparison settings today differ from an entry's manifest ``recorded``, one
  line each. ``today`` is what a recording of ``case`` would write (``_case.comparison_of``
  on the entry's outputs), or why it cannot be worked out (a string). A checker not
  ``known`` to the project is named as such. An entry without per-output tolerances (before
  golden format 3) is compared on the tolerances the case sets itself, not on defaults of
  another rule. Part of the contract: the entry promises to be judged as it was recorded."""
  if isinstance(today, str):
    return (f"comparison: {today}",)
  rec = recorded.comparison
  lines: list[str] = []
  if today.checker != rec.mode:
    unknown = "" if today.checker in known else (
        f" (not a checker of the project; known: {sorted(known)})")
    lines.append(f"comparison: checker {rec.mode!r} became {today.checker!r}{unknown}")
  if recorded.tolerances is None:
    if case.rtol is not None and case.atol is not None:
      for name, old, new in (("rtol", rec.rtol, case.rtol), ("atol", rec.atol, case.atol)):
        if float(old) != float(new):
          lines.append(f"comparison: {name} {old:g} became {new:g}")
    if case.tolerances:
      lines.append(f"comparison: tolerances per output {sorted(case.tolerances)} set, where "
                   f"the entry compares all outputs with rtol {rec.rtol:g}, atol {rec.atol:g}")
    return tuple(lines)
  for name, old, new in (("rtol", rec.rtol, today.rtol), ("atol", rec.atol, today.atol)):
    if float(old) != float(new):
      lines.append(f"comparison: {name} {old:g} became {new:g}")
  for was, now in zip(recorded.tolerances, today.outputs):
    for name, old, new in (("rtol", was.rtol, now.rtol), ("atol", was.atol, now.atol)):
      if float(old) != float(new):
        lines.append(f"comparison: {was.path} {name} {old:g} became {new:g}")
  return tuple(lines)
