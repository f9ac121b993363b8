"""Run inside an older release's venv: load artifacts exported for it and judge them.

    python _for_jax_consumer.py FOLDER

FOLDER holds one subfolder per case (``exported.bin``, ``inputs.npz``,
``expected.npz``, ``comparison.json``). Each artifact is read with the release's
own ``jax.export.deserialize``, called as jaxport's replay contract says, and
judged with jaxport's checkers (both loaded by path: jaxport itself does not
install on an older jax). One JSON object per case is printed.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))

import _release_jax  # noqa: E402


def _arrays(path: str) -> list[np.ndarray]:
  with np.load(path, allow_pickle=False) as npz:
    return [npz[f"arr_{i}"] for i in range(len(npz.files))]


def main(folder: str) -> int:
  import jax
  import jax.numpy as jnp
  contract = _release_jax.contract()
  checkers = _release_jax.checkers()
  release = contract.ReleaseExport(_release_jax.export_module())
  # jax before 0.10 registers its LAPACK kernels on the first lowering of a linear-algebra
  # op; a process that only calls deserialized modules crashes without one (its own blobs
  # too), so one native call comes first, as the release replayer does.
  jnp.linalg.cholesky(jnp.eye(2, dtype=jnp.float32)).block_until_ready()
  for name in sorted(os.listdir(folder)):
    case = os.path.join(folder, name)
    with open(os.path.join(case, "comparison.json")) as f:
      cmp = json.load(f)
    row = {"case": name, "jax": jax.__version__}
    try:
      with open(os.path.join(case, "exported.bin"), "rb") as f:
        exp = release.deserialize(f.read())
      row["calling_convention_version"] = int(exp.calling_convention_version)
      inputs = _arrays(os.path.join(case, "inputs.npz"))
      expected = _arrays(os.path.join(case, "expected.npz"))
      actual = contract.run_exported(exp, inputs, call=release.call)
      verdict = checkers.check(cmp["mode"], inputs, expected, actual,
                               rtol=cmp["rtol"], atol=cmp["atol"])
      row.update(ok=bool(verdict.ok), problems=list(verdict.problems))
    except Exception as e:  # noqa: BLE001 - reported per case, judged by the test
      lines = str(e).strip().splitlines()
      row.update(ok=False, problems=[f"{type(e).__name__}: {lines[0] if lines else ''}"])
    print(json.dumps(row), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1]))
