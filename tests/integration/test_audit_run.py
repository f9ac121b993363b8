"""``jaxport audit --run``: artifacts with sample inputs at hand (a store entry's, or the npz
files ``jaxport import-artifacts`` reads beside a blob) run by the installed jax in a process of
their own, their outputs judged: a changed expected output fails, a blob without samples is
not run and says why."""

import contextlib
import io
import json

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from jaxport.cli import main
from jaxport.golden._store import GoldenStore

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def _main(*argv: str) -> tuple[int, str]:
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(list(argv))
  return rc, out.getvalue()


def test_audit_run_judges_outputs_with_the_samples_at_hand(tmp_path):
  exp = export.export(jax.jit(jnp.sin))(X)
  blobs = tmp_path / "blobs"
  blobs.mkdir()
  got = np.asarray(exp.call(X))
  for name, expected in (("same", got), ("changed", got + 1), ("bare", None)):
    (blobs / f"{name}.bin").write_bytes(exp.serialize())
    if expected is not None:
      np.savez(blobs / f"{name}.inputs.npz", X)
      np.savez(blobs / f"{name}.expected.npz", expected)
  # The same blob imported: a store entry with its samples.
  store = tmp_path / "store"
  assert _main("import-artifacts", str(blobs / "same.bin"), "--store", str(store))[0] == 0
  (entry,) = GoldenStore(store).entries()
  rc, out = _main("audit", str(blobs), str(entry.path), "--run", "--json", "--no-drift")
  arts = {a["artifact"].rsplit("/", 1)[-1]: a for a in json.loads(out)["artifacts"]}
  assert rc == 1
  entry_art = arts[entry.path.name]
  assert (entry_art["run"]["ran"], entry_art["status"]) == (True, "pass"), entry_art["run"]
  assert (arts["same.bin"]["run"]["ran"], arts["same.bin"]["status"]) == (True, "pass")
  changed = arts["changed.bin"]
  assert (changed["run"]["status"], changed["status"]) == ("fail", "fail")
  (problem,) = changed["problems"]
  assert problem.startswith("run with its sample inputs: ") and "differ" in problem
  bare = arts["bare.bin"]
  assert (bare["run"]["ran"], bare["status"]) == (False, "pass")
  assert "bare.inputs.npz" in bare["run"]["detail"]
  # Without --run nothing is run, and the changed blob's audit passes.
  rc, out = _main("audit", str(blobs / "changed.bin"), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and "run" not in art
