"""Calling a deserialized LAPACK module in a process that lowered no linear algebra.

jaxlib registers its LAPACK kernels lazily, when jax first lowers such an op.
Under jax 0.9.2 a process that only deserialized and called a Cholesky module
crashed XLA with a segmentation fault (jax.export 0.9.2 itself still does);
jaxport now registers the kernels before inlining a CPU callee.
"""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLOB = REPO / "compat_data" / "cpu" / "lapack_potrf" / "cholesky_f32" / "2026-11-29_jax-0.10.2" / "exported.bin"

_CHILD = f"""
import numpy as np, jaxport
exp = jaxport.deserialize(open({str(BLOB)!r}, "rb").read())
out = exp.call(np.eye(4, dtype=np.float32) * 4)
print(float(np.asarray(out).ravel()[0]))
"""


def test_a_cholesky_blob_runs_in_a_fresh_process():
  proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120,
                        cwd=REPO)
  assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
  assert proc.stdout.strip() == "2.0"
