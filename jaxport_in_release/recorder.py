"""Record a project's release cases with the jax installed in THIS interpreter's environment.

Run by ``jaxport record --with-jax`` (``jaxport.multirelease._record``) inside a release's
environment, over the case modules the project lists in ``jaxport_release_cases``:

    python jaxport_in_release/recorder.py --out STAGING --cases-file CASES.py [--case ID ...]

It uses only that release's public export API and writes, per case, a
staging folder ``STAGING/<case_id>/`` with ``exported.bin``, ``inputs.npz``,
``expected.npz`` (``np.savez``, no object arrays, so readable without
pickle), ``module.mlir``, ``module.mlirbc`` (the module bytes inside the blob,
for the importer's custom-call walk) and ``case.json``; plus ``STAGING/producer.json``
(versions, record date) and ``STAGING/skipped.json`` (cases this release
cannot express, with the reason). jaxport is not imported (it needs a newer
jax than the one recording); its replay contract ``jaxport/harness/_worker/_contract.py``
(numpy and public jax only) is loaded by its path, so an entry is recorded
exactly as the harness records one: the expected outputs are those of the blob
read back, with a VJP's outputs appended.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform as _platform
import struct
import sys
import traceback

import numpy as np

STAGING_FORMAT = 1


# What the release scripts share (the replay contract among it). Run as a script, this
# folder is first on sys.path; imported, the package is.
try:
  import release_jax as _release
except ImportError:
  from jaxport_in_release import release_jax as _release


def load_cases(paths) -> list:
  """The cases of each case module file in ``paths`` (its ``cases()``), in order; a case id
  listed twice is refused."""
  cases, seen = [], {}
  for i, path in enumerate(paths):
    module = _release.load_by_path(f"jaxport_release_cases_{i}", os.path.abspath(path))
    for case in module.cases():
      if case.case_id in seen:
        raise SystemExit(f"release case {case.case_id!r} is listed by both {seen[case.case_id]} "
                         f"and {path}; give each case its own id")
      seen[case.case_id] = path
      cases.append(case)
  return cases


def exclude_from_locations(paths) -> bool:
  """Keep frames of ``paths`` out of the source locations of exported modules, where the
  release can (a jax internal, so feature-detected); whether it could."""
  try:
    from jax._src import source_info_util
  except ImportError:
    return False
  register = getattr(source_info_util, "register_exclusion", None)
  if register is None:
    return False
  known = getattr(source_info_util, "_exclude_paths", [])
  for path in paths:
    if path not in known:
      register(path)
  return True


def peek_serialization_version(blob: bytes) -> int:
  """Field 0 (uint16) of the flatbuffer root table, or 0 when absent.

  The same reading as ``jaxport.serde._read.read_serialization_version``, kept
  here because this script runs in a release's venv where jaxport is not installed.
  """
  table = struct.unpack_from("<I", blob, 0)[0]
  vtable = table - struct.unpack_from("<i", blob, table)[0]
  vtable_size = struct.unpack_from("<H", blob, vtable)[0]
  if vtable_size <= 4:
    return 0
  field = struct.unpack_from("<H", blob, vtable + 4)[0]
  return struct.unpack_from("<H", blob, table + field)[0] if field else 0


def producer_versions() -> dict:
  import jax
  import jaxlib
  jaxlib_version = getattr(jaxlib, "__version__", None)
  if jaxlib_version is None:
    from jaxlib import version as jaxlib_version_module
    jaxlib_version = jaxlib_version_module.__version__
  try:
    import scipy
    scipy_version = scipy.__version__
  except ImportError:
    scipy_version = None
  return {"jax": jax.__version__, "jaxlib": jaxlib_version,
          "numpy": np.__version__, "scipy": scipy_version,
          "python": _platform.python_version()}


def _as_arrays(values) -> list:
  import jax
  return [np.asarray(v) for v in jax.tree_util.tree_leaves(values)]


def _exported_facts(exp) -> dict:
  platforms = getattr(exp, "platforms", None) or exp.lowering_platforms
  version = getattr(exp, "calling_convention_version", None)
  if version is None:
    version = exp.mlir_module_serialization_version
  return {"platforms": list(platforms), "calling_convention_version": int(version),
          "module_text": str(exp.mlir_module())}


def record_case(contract, release, case, platform: str) -> dict:
  """Export, serialize and run one case as the replay contract says; the staged payload.

  The expected outputs are those of the blob read back (as the harness records);
  they must agree with ``jax.jit`` of the case (and ``jax.vjp`` for a VJP) run
  directly, or the round trip is refused.
  """
  import jax
  args, kwargs = case.make_inputs()
  if kwargs:
    raise ValueError(f"{case.case_id}: a release case takes positional arrays only; its inputs "
                     f"have keyword arguments {sorted(kwargs)}")
  inputs = [np.asarray(x) for x in args]
  exp = contract.export_function(
      release.exporter, case.fun, tuple(inputs), {}, polymorphic_shapes=case.polymorphic_shapes,
      platforms=case.platforms, disabled_checks=case.disabled_checks)
  # A release records gradients only where the case asks for them (vjp_order unset is 0 here).
  vjp_order = case.vjp_order or 0
  blob = release.serialize(exp, vjp_order)
  expected = contract.run_exported(release.deserialize(blob), inputs, call=release.call)
  jitted = jax.jit(case.fun)
  direct = _as_arrays(jitted(*inputs))
  if vjp_order >= 1:
    primal_out, pullback = jax.vjp(jitted, *inputs)
    cotangents = [contract.cotangent(o) for o in jax.tree_util.tree_leaves(primal_out)]
    grads = jax.tree_util.tree_leaves(pullback(jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(primal_out), cotangents)))
    direct += _as_arrays(contract.with_cotangent(grads, exp.in_avals))
  if len(direct) != len(expected):
    raise ValueError(f"{case.case_id}: the blob gives {len(expected)} outputs, jax.jit "
                     f"{len(direct)}")
  for i, (want, got) in enumerate(zip(direct, expected)):
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol,
                               err_msg=f"{case.case_id}: output {i} of the round trip")
  facts = _exported_facts(exp)
  meta = {
      "staging_format": STAGING_FORMAT,
      "case_id": case.case_id,
      "family": case.family,
      "platform": platform,
      "fun_name": getattr(exp, "fun_name", case.fun.__name__),
      "platforms": facts["platforms"],
      "calling_convention_version": facts["calling_convention_version"],
      "serialization_version": peek_serialization_version(blob),
      "polymorphic_shapes": list(case.polymorphic_shapes) if case.polymorphic_shapes else None,
      "constraints": None,
      "lowering_only": False,
      "vjp_order": vjp_order,
      "comparison": {"mode": case.checker, "rtol": case.rtol, "atol": case.atol},
      # The jax configuration it was exported and run under, to replay it under the same.
      "x64": bool(case.enable_x64),
  }
  return {"meta": meta, "blob": blob, "inputs": inputs, "expected": expected,
          "module_text": facts["module_text"],
          "module_bytes": bytes(exp.mlir_module_serialized)}


def write_staged(out_dir: str, payload: dict) -> None:
  case_dir = os.path.join(out_dir, payload["meta"]["case_id"])
  os.makedirs(case_dir, exist_ok=False)
  with open(os.path.join(case_dir, "exported.bin"), "wb") as f:
    f.write(payload["blob"])
  np.savez(os.path.join(case_dir, "inputs.npz"), *payload["inputs"])
  np.savez(os.path.join(case_dir, "expected.npz"), *payload["expected"])
  with open(os.path.join(case_dir, "module.mlir"), "w") as f:
    f.write(payload["module_text"])
  with open(os.path.join(case_dir, "module.mlirbc"), "wb") as f:
    f.write(payload["module_bytes"])
  with open(os.path.join(case_dir, "case.json"), "w") as f:
    json.dump(payload["meta"], f, indent=1, sort_keys=True)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True, help="staging folder to create")
  parser.add_argument("--cases-file", action="append", required=True,
                      help="a case module file whose cases() to record (repeatable)")
  parser.add_argument("--case", action="append", default=[], help="only these case ids")
  parser.add_argument("--platform", default="cpu")
  parser.add_argument("--date", default=None, help="record date (ISO), default today")
  args = parser.parse_args(argv)

  import jax
  jax.config.update("jax_platforms", args.platform)
  # Keep only file base names in module locations: golden data must not
  # carry the recording machine's directory layout.
  jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")
  contract = _release.contract()
  # Locations name the case's own lines, never this script's or the contract's.
  exclude_from_locations(
      [os.path.abspath(__file__), _release.__file__, _release.CONTRACT])
  release = contract.ReleaseExport(_release.export_module())
  cases = load_cases(args.cases_file)
  if args.case:
    unknown = sorted(set(args.case) - {c.case_id for c in cases})
    if unknown:
      parser.error(f"unknown case ids {unknown}; known: {[c.case_id for c in cases]}")
    cases = [c for c in cases if c.case_id in args.case]

  os.makedirs(args.out, exist_ok=False)
  skipped = {}
  for case in cases:
    why_not = case.why_not_recordable_by(jax.__version__)
    if why_not is not None:
      skipped[case.case_id] = why_not
      continue
    try:
      if case.enable_x64:
        from jax.experimental import enable_x64
        with enable_x64():
          payload = record_case(contract, release, case, args.platform)
      else:
        payload = record_case(contract, release, case, args.platform)
    except ImportError:
      raise  # The venv is incomplete: no case would record.
    except Exception as e:  # A release that cannot express a case skips it, with why.
      skipped[case.case_id] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
      traceback.print_exc(file=sys.stderr)
      continue
    write_staged(args.out, payload)
    print(f"recorded {case.case_id}", file=sys.stderr)

  producer = producer_versions()
  record_date = args.date or datetime.date.today().isoformat()
  with open(os.path.join(args.out, "producer.json"), "w") as f:
    json.dump({"staging_format": STAGING_FORMAT, "producer": producer,
               "record_date": record_date, "platform": args.platform}, f,
              indent=1, sort_keys=True)
  with open(os.path.join(args.out, "skipped.json"), "w") as f:
    json.dump(skipped, f, indent=1, sort_keys=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
