"""``jaxport bisect`` over this checkout's release venvs (``.jax-venvs``), the harness's
effect types known, the store defaulting to ``compat_data``:

    python harness/tools/bisect_release.py cpu/lapack_trsm/release_triangular_solve_f32/2026-11-29_jax-0.5.3 \\
        --releases 0.5.3..0.10.2 [--available-only] [--json]

Every option is ``jaxport bisect``'s (:mod:`jaxport.multirelease._bisect` does the work).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _venvs  # noqa: E402
from harness.tools.replay_with_jax import HARNESS_EFFECTS  # noqa: E402
from jaxport.cli import _bisect  # noqa: E402
from jaxport.cli._main import build_parser  # noqa: E402
from jaxport.errors import JaxportError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
  args = build_parser().parse_args(["bisect", *(sys.argv[1:] if argv is None else argv)])
  args.envs = args.envs or str(_venvs.DEFAULT_ROOT)
  args.root = args.root or str(_venvs.REPO_ROOT / "compat_data")
  try:
    return _bisect.run(args, effects=HARNESS_EFFECTS)
  except JaxportError as e:
    print(f"bisect: error: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
