"""Multi-device entries: placing stored inputs on devices, describing and comparing output shardings.

An entry exported for several devices cannot be called on host arrays: its
inputs are placed as its record says (each argument's NamedSharding moved onto
a concrete mesh of this process's devices with the same axes) and the call
runs under that mesh. The outputs' shardings (mesh axes, spec, memory kind)
are described as JSON, stored in the entry's ``shardings.json`` at record time
and compared on replay. Everything is derived from the blob, so both readers
are judged the same way.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding, SingleDeviceSharding

from jaxport.harness._devices import FORCE_DEVICES_FLAG
from jaxport._jaxcompat import _envelope as jax_envelope


def num_devices(exp: Any) -> int:
  """The devices a call of ``exp`` needs."""
  return int(exp.nr_devices)


def _concrete_mesh(abstract, cache: dict) -> jax.sharding.Mesh:
  key = (abstract.axis_sizes, abstract.axis_names, abstract.axis_types)
  if key not in cache:
    n = math.prod(abstract.axis_sizes)
    cache[key] = jax.make_mesh(abstract.axis_sizes, abstract.axis_names,
                               axis_types=abstract.axis_types, devices=jax.devices()[:n])
  return cache[key]


def placed_call_args(exp: Any, leaves: Sequence[Any]) -> tuple[list[Any], Any]:
  """``leaves`` placed as ``exp`` records its inputs, and the mesh context to call under.

  One-device records get their leaves back unchanged and a null context.
  Unspecified and single-device inputs stay on the host; jit places them.
  """
  need = num_devices(exp)
  if need == 1:
    return list(leaves), contextlib.nullcontext()
  if jax.device_count() < need:
    raise ValueError(
        f"the entry was exported for {need} devices but this process has {jax.device_count()}; "
        f"the harness replays it in a worker started with XLA_FLAGS={FORCE_DEVICES_FLAG}={need} "
        "(its shardings.json names the device count).")
  meshes: dict = {}
  records = jax_envelope.in_named_shardings(exp)
  placed, context_mesh = [], None
  for leaf, rec in zip(leaves, records):
    if rec is None or not rec.mesh.axis_names:
      placed.append(leaf)
      continue
    mesh = _concrete_mesh(rec.mesh, meshes)
    context_mesh = context_mesh or mesh
    placed.append(jax.device_put(leaf, NamedSharding(mesh, rec.spec, memory_kind=rec.memory_kind)))
  if context_mesh is None:
    out_meshes = [r.mesh for r in jax_envelope.out_named_shardings(exp)
                  if r is not None and r.mesh.axis_names]
    if out_meshes:
      context_mesh = _concrete_mesh(out_meshes[0], meshes)
  context = jax.set_mesh(context_mesh) if context_mesh is not None else contextlib.nullcontext()
  return placed, context


def _spec_json(spec) -> list[Any]:
  out: list[Any] = []
  for p in spec:
    if p is None:
      out.append(None)
    elif isinstance(p, str):
      out.append([p])
    else:
      out.append(list(p))
  while out and out[-1] is None:
    out.pop()
  return out


def describe(x: Any) -> dict[str, Any]:
  """The sharding of one output array as JSON: kind, memory kind, and mesh axes with spec."""
  s = x.sharding
  if isinstance(s, NamedSharding):
    mesh = s.mesh
    d = {"kind": "named", "memory_kind": s.memory_kind,
         "axis_names": list(mesh.axis_names), "axis_sizes": [int(n) for n in mesh.axis_sizes],
         "axis_types": [t.name for t in mesh.axis_types], "spec": _spec_json(s.spec)}
    if s.spec.unreduced:
      d["unreduced"] = sorted(s.spec.unreduced)
    if s.spec.reduced:
      d["reduced"] = sorted(s.spec.reduced)
    return d
  if isinstance(s, SingleDeviceSharding):
    return {"kind": "single_device", "memory_kind": s.memory_kind}
  return {"kind": type(s).__name__, "memory_kind": s.memory_kind}


def record(exp: Any, outputs: Sequence[Any]) -> dict[str, Any]:
  """The ``shardings.json`` object of an entry: device count and the outputs' shardings."""
  return {"num_devices": num_devices(exp), "outputs": [describe(o) for o in outputs]}


def compare(recorded: dict[str, Any], outputs: Sequence[Any]) -> list[str]:
  """Problems where the replayed outputs' shardings differ from the recorded ones."""
  want = recorded.get("outputs")
  if not isinstance(want, list):
    return [f"shardings.json: 'outputs' must be a list, got {want!r}"]
  got = [describe(o) for o in outputs]
  if len(got) != len(want):
    return [f"{len(got)} outputs replayed but shardings.json records {len(want)}"]
  problems = []
  for i, (w, g) in enumerate(zip(want, got)):
    if w != g:
      keys = sorted(k for k in set(w) | set(g) if w.get(k) != g.get(k))
      diffs = ", ".join(f"{k}: recorded {w.get(k)!r}, replayed {g.get(k)!r}" for k in keys)
      problems.append(f"output {i} sharding differs from the recording ({diffs})")
  return problems
