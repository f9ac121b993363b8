"""jaxport's own case module: every function this repository's harness exports, records and replays.

The repository opts into the harness plugin with ``jaxport_cases = harness.cases``
in ``pyproject.toml``; the plugin calls :func:`cases` and reads
:data:`UNREACHABLE`. A case is a plain :class:`jaxport.harness.Case`: a function, deterministic
inputs, the custom-call targets its lowering must reach, and the checker that
judges its results. Golden entries under ``compat_data/`` are recorded from
these cases and replayed against them.

How to add a golden case for a new custom-call target ``foo_ffi``:

1. Pick the module by kind: ``_lapack.py`` (CPU LAPACK, one case per dtype),
   ``_features.py`` (export features), ``_lowering_only.py`` (targets of a
   platform this machine cannot run; jax lowers them anyway), ``_cuda.py`` (the
   cuda rows of ``_lowering_only.py`` run on a cuda machine: give a new cuda row
   its checker there), ``_tpu.py`` (the tpu rows run on a TPU, Pallas kernels,
   TPU-specific programs; a Pallas case gives its interpreted kernel as the CPU
   reference), ``_tpu_kernels.py`` (jax's shipped Pallas TPU kernels, each with a
   reference in plain ``jax.numpy`` and a lowering-only sibling), ``_sharding.py``
   (multi-device targets: set ``num_devices``, ``jit_kwargs``, ``use_shardy``). Add a new module
   for a new family and list it in ``_MODULES`` below.
2. Write the function with ``jax.numpy``/``jax.lax`` so that its lowering emits
   ``foo_ffi``; keep shapes tiny (4x4) so the entry stays a few kilobytes.
3. Write ``make_inputs`` returning ``(args, kwargs)`` built from
   ``random_matrix(seed, shape, dtype)``: fixed seeds, no global RNG, so that a
   re-record is byte-identical. Write the seed in the case (a table's row carries
   its own seed): never derive it from the row's position, or inserting a row
   would change the inputs of the cases after it and their golden entries would no
   longer match.
4. Choose the checker (``jaxport/harness/checkers.py``). If results are unique,
   ``allclose``; if they are unique only up to phase, sign, order or pivoting,
   use or write an invariant checker (reconstruction, orthogonality, sorted
   spectra). Take tolerances from ``default_tolerance(dtype)``.
5. Put ``targets=("foo_ffi",)`` on the case. If ``foo_ffi`` is new to jaxport,
   add it to ``jaxport/custom_calls/stable_targets.json`` under its platform
   (this repository requires every target of that table to be covered).
6. Record on a machine of the case's host platform:
   ``pytest harness/ --platform=cpu --record -k foo``. Review ``module.mlir``
   and ``manifest.json`` of the new entry, then commit the entry directory.
7. Run ``pytest harness/ --platform=cpu``: the coverage check now counts
   ``foo_ffi`` as covered, and the new entry replays with both readers.
"""

from __future__ import annotations

import dataclasses
import functools

from jaxport.harness import Case, CaseRegistry
from harness.cases import (_cuda, _features, _lapack, _lowering_only, _sharding, _tpu,
                           _tpu_kernels)
from harness.cases._lowering_only import UNREACHABLE as UNREACHABLE
from harness.cases import release_cases

_MODULES = (_lapack, _features, _lowering_only, _cuda, _tpu, _tpu_kernels, _sharding)


def cases() -> list[Case]:
  """Every case of the repository. jaxport's own were all recorded with 64-bit types on, but
  jax's shipped kernels, which are written for 32-bit types; the release cases run as the
  releases' recorder ran them (their own ``enable_x64``)."""
  own = [dataclasses.replace(c, enable_x64=True) for module in _MODULES
         if module is not _tpu_kernels for c in module.cases()]
  return own + _tpu_kernels.cases() + release_cases.cases()


@functools.cache
def _registry() -> CaseRegistry:
  return CaseRegistry((__name__,))


def all_cases() -> dict[str, Case]:
  """Every registered case, keyed by its id (ids are unique)."""
  return dict(_registry().by_id)


def cases_for(host_platform: str) -> list[Case]:
  """The cases recorded and replayed on machines of ``host_platform``, sorted by id."""
  return _registry().cases_for(host_platform)


def cpu_reference(case_id: str):
  """The function the CPU computes to cross-check an accelerator case's recorded outputs: the
  case's own, unless only the accelerator runs it (a Pallas kernel of this repository: its
  interpreted form; one of jax's shipped kernels: its reference in plain ``jax.numpy``)."""
  found = case(case_id)
  return (_tpu.cpu_reference(case_id) or _tpu_kernels.cpu_reference(case_id)
          or (found.fun if found is not None else None))


def case(case_id: str) -> Case | None:
  """The registered case ``case_id``, or None if the registry no longer has it."""
  return _registry().case(case_id)
