"""``jaxport bisect`` over real jax releases finds where the 0.5.3 triangular-solve entry broke.

jax 0.5.3 lowered ``solve_triangular`` to ``lapack_strsm_ffi(a, b, alpha)``; later
jaxlibs take ``(a, b)``. The releases run in their own venvs (``.jax-venvs``):
the test uses the ones already built and skips, naming the command, when the
ones around the break are missing; with ``JAXPORT_BUILD_RELEASE_VENVS=1`` (the
nightly workflow) it builds them.
"""

import importlib.metadata as md
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.multirelease import _envs as _venvs  # noqa: E402
from jaxport.cli import main  # noqa: E402

ENTRY = "cpu/lapack_trsm/release_triangular_solve_f32/2026-11-29_jax-0.5.3"
NEEDED = ("0.5.3", "0.8.0", "0.8.1")
BUILD = os.environ.get("JAXPORT_BUILD_RELEASE_VENVS") == "1"


@pytest.mark.slow
@pytest.mark.skipif(not BUILD and not all(_venvs.is_ready(v) for v in NEEDED),
                    reason=f"release venvs for jax {', '.join(NEEDED)} are not built; build them with "
                           "jaxport record --with-jax VERSION, or set "
                           "JAXPORT_BUILD_RELEASE_VENVS=1")
def test_bisect_finds_the_release_that_broke_the_three_operand_trsm(capfd, monkeypatch):
  monkeypatch.chdir(ROOT)
  argv = ["bisect", ENTRY, "--releases", f"0.5.3..{md.version('jax')}", "--json", "--envs",
          str(_venvs.default_root())]
  if not BUILD:
    argv.append("--available-only")
  rc = main(argv)
  out, err = capfd.readouterr()
  assert rc == 0, err
  result = json.loads(out)
  assert result["releases"][0] == "0.5.3"
  assert (result["last_good"], result["first_bad"]["release"]) == ("0.8.0", "0.8.1")
  assert result["first_bad"]["stage"] == "run"
  assert "Wrong number of arguments: expected 2 but got 3" in result["first_bad"]["error"]
  assert len(result["probes"]) < len(result["releases"])
