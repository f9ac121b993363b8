"""Exporting for a TensorFlow release: ``export(f, for_tf="2.21")``.

TensorFlow serves a jax artifact through its ``XlaCallModule`` op (jax2tf, orbax-export and
Keras' export all wrap it so), which takes the module's bytes and its calling convention
version, and reads StableHLO up to the version its build links: a module jax writes for its
own newer StableHLO, the ``shape_assertion`` of a symbolic shape included, does not load there
(``vhlo.custom_call_v2``). For a release of the TensorFlow table
(``jaxport/releases/tf_releases.json``, measured per release) this chooses, as
:mod:`._for_jax` does for a jax release:

- the StableHLO (VHLO) target version: the one the release reads, never newer than the
  installed jaxlib writes;
- the calling convention: jaxport's default where the release takes it, else the newest
  both take.

It refuses, naming the release, what that release cannot run: a custom-call target it has no
handler for (TensorFlow links none of jaxlib's kernels: LAPACK, BLAS, the GPU ones; only the
targets ``XlaCallModule`` and XLA handle themselves run, :data:`TF_HANDLED`), and an operation
newer than its StableHLO (serializing for that version fails, :func:`._for_jax.serialize_module`).
The envelope is the installed jax's: ``XlaCallModule`` does not read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jaxport import _config, _versions
from jaxport._jaxcompat._version import installed_jax_version
from jaxport._vocabulary import ANY_PLATFORM
from jaxport.custom_calls import _registry, _walk
from jaxport.errors import ExportError, ReleaseTableError
from jaxport.export import _checks, _mlir
from jaxport.export._for_jax import LAYOUT_HEADERS, TF, ConsumerTarget, installed_layout
from jaxport.releases._tf_table import TfRelease, TfReleaseError, tf_release

# jaxlib's own kernel among the targets jax's stable table ties to no platform: TensorFlow
# does not link it.
_JAXLIB_KERNELS = frozenset({"mosaic_gpu_v2"})


def tf_handled() -> frozenset[str]:
  """The custom-call targets a TensorFlow release runs without jaxlib: those jax's stable
  table ties to no platform (``shape_assertion``, which ``XlaCallModule``'s shape refinement
  checks, XLA's sharding markers, TensorFlow's own ``tf.call_tf_function``), less jaxlib's
  kernels."""
  return _registry.stable_targets(ANY_PLATFORM) - _JAXLIB_KERNELS


def _release(for_tf: Any) -> TfRelease:
  if not isinstance(for_tf, str) or not for_tf:
    raise ExportError(f"for_tf must name a TensorFlow release such as '2.21', got {for_tf!r}.")
  try:
    return tf_release(for_tf)
  except TfReleaseError as e:
    raise ReleaseTableError(f"for_tf={for_tf!r}: {e}") from None


def _stablehlo_target(release: TfRelease) -> str:
  low, high = _mlir.stablehlo_version_range()
  target = release.stablehlo
  if high is not None and _mlir.version_key(high) < _mlir.version_key(target):
    target = high  # TensorFlow reads what this older jaxlib writes
  if low is not None and _mlir.version_key(target) < _mlir.version_key(low):
    raise ExportError(
        f"Cannot export for TensorFlow {release.version}: it reads StableHLO up to "
        f"{release.stablehlo}, older than the oldest version this jaxlib (jax "
        f"{installed_jax_version()}) writes, {low}. Export with an older jax, or for a newer "
        "TensorFlow.")
  return target


def _calling_convention(release: TfRelease) -> int:
  ours = range(_versions.MIN_CALLING_CONVENTION_VERSION,
               _versions.MAX_CALLING_CONVENTION_VERSION + 1)
  both = [v for v in ours if release.takes(v)]
  if not both:
    low, high = release.calling_convention
    raise ExportError(
        f"Cannot export for TensorFlow {release.version}: its XlaCallModule takes calling "
        f"conventions {low} to {high}, and jaxport exports {ours.start} to {ours.stop - 1}; no "
        "version is in both. Export for a newer TensorFlow.")
  default = _config.calling_convention_version()
  return default if default in both else both[-1]


def consumer_target(for_tf: str) -> ConsumerTarget:
  """The StableHLO version and calling convention an artifact for TensorFlow ``for_tf`` is
  written with; ``ReleaseTableError`` for a release the table lacks (naming those it holds),
  ``ExportError`` for one jaxport cannot write for."""
  release = _release(for_tf)
  layout = installed_layout()
  return ConsumerTarget(
      release=release.version, stablehlo_version=_stablehlo_target(release),
      stablehlo_reads=release.stablehlo,
      calling_convention_version=_calling_convention(release),
      calling_conventions=release.calling_convention,
      header_version=LAYOUT_HEADERS[layout], layout=layout, facts=release, consumer=TF)


def _jaxlibs(target: str) -> bool:
  """Whether ``target`` is one of jaxlib's kernels (jax's stable table lists it)."""
  return target in _JAXLIB_KERNELS or target in _registry.stable_targets()


def _why(target: str) -> str:
  if _jaxlibs(target):
    return "jaxlib's own kernel, which TensorFlow does not link"
  return "no handler in TensorFlow (a project's own kernel registers with jax, not TensorFlow)"


def check_custom_calls(sites: Iterable[_walk.CustomCallSite], target: ConsumerTarget,
                       disabled_checks: Sequence[Any], fun_name: str) -> None:
  """Refuse a module calling a custom-call target TensorFlow ``target`` has no handler for;
  targets the caller allowed through ``disabled_checks`` are theirs to vouch for."""
  allowed = _checks.disabled_targets(disabled_checks)
  if _checks.ALL_TARGETS in allowed:
    return
  handled = tf_handled()
  missing: dict[str, _walk.CustomCallSite] = {}
  for site in sites:
    if site.target not in handled and site.target not in allowed:
      missing.setdefault(site.target, site)
  if not missing:
    return
  lines = "\n".join(f"  - '{t}' (first at {site.location}): {_why(t)}"
                    for t, site in missing.items())
  own = [t for t in missing if not _jaxlibs(t)]
  allow = ", ".join(f"DisabledSafetyCheck.custom_call({t!r})" for t in own)
  raise ExportError(
      f"Cannot export '{fun_name}' for {target.name}: it calls custom-call target(s) "
      f"TensorFlow has no handler for:\n{lines}\nTensorFlow's XlaCallModule runs only "
      "StableHLO and the targets XLA handles itself; write the function without that "
      "operation (on the CPU, jax lowers linear algebra to LAPACK calls)"
      + (f", or, if the TensorFlow process registers the target itself, pass "
         f"disabled_checks=[{allow}]." if own else "."))
