"""A wheel of the running jaxport, so that another release's environment runs the same code.

The wheel is made from what this process imports: every file in the folders of the
``jaxport`` package, the ``jaxport_pytest`` plugin and the ``jaxport_in_release`` scripts (byte
code left out; for an editable install those are the source folders, so whatever else lies
there goes too), with the installed
distribution's own metadata and entry points. Its folder is named by a digest of its contents,
so an environment built with it is rebuilt when the code changes and reused while it does not.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import importlib.util
import logging
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

from jaxport._files import replacing
from jaxport.multirelease._envs import VenvError

logger = logging.getLogger(__name__)

DISTRIBUTION = "jaxport"
# The top-level packages the distribution installs: jaxport, its pytest entry point, and the
# scripts run in a release's own environment.
_PACKAGES = ("jaxport", "jaxport_pytest", "jaxport_in_release")
_SKIPPED_DIRS = {"__pycache__"}
_WHEEL_META = ("Wheel-Version: 1.0\nGenerator: jaxport\nRoot-Is-Purelib: true\n"
               "Tag: py3-none-any\n")


def _sources() -> list[tuple[str, Path]]:
  """(path inside the wheel, file here) for every file of the running package and its siblings.

  The distribution's top-level packages lie side by side (in site-packages, or in the source
  folder of an editable install), so each is found beside the ``jaxport`` package imported."""
  spec = importlib.util.find_spec("jaxport")
  if spec is None or not spec.submodule_search_locations:
    raise VenvError("the running jaxport has no package directory to make a wheel of")
  top = Path(next(iter(spec.submodule_search_locations))).parent
  out = []
  for package in _PACKAGES:
    package_dir = top / package
    if not (package_dir / "__init__.py").is_file():
      raise VenvError(f"the running jaxport has no {package} package beside it ({package_dir}); "
                      "reinstall jaxport")
    for dirpath, dirnames, filenames in os.walk(package_dir):
      dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
      for name in sorted(filenames):
        if name.endswith((".pyc", ".pyo")):
          continue
        path = Path(dirpath) / name
        out.append((f"{package}/{path.relative_to(package_dir).as_posix()}", path))
  return out


def _metadata() -> tuple[str, str, str]:
  """The installed distribution's version, METADATA and entry_points.txt."""
  try:
    dist = md.distribution(DISTRIBUTION)
  except md.PackageNotFoundError as e:
    raise VenvError("jaxport runs without its distribution metadata (it is imported from a "
                    "folder, not installed), so no wheel of it can be made: install it (pip "
                    "install jaxport, or pip install -e of a checkout) and run again") from e
  meta = dist.read_text("METADATA") or dist.read_text("PKG-INFO")  # an egg-info has the latter
  if not meta:
    raise VenvError("the installed jaxport distribution has no METADATA; reinstall it")
  return dist.version, meta, dist.read_text("entry_points.txt") or ""


def _record_line(name: str, data: bytes) -> str:
  digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
  return f"{name},sha256={digest},{len(data)}"


def _members() -> Iterator[tuple[str, bytes]]:
  version, meta, entry_points = _metadata()
  for name, path in _sources():
    yield name, path.read_bytes()
  info = f"{DISTRIBUTION}-{version}.dist-info"
  yield f"{info}/METADATA", meta.encode()
  yield f"{info}/entry_points.txt", entry_points.encode()
  yield f"{info}/WHEEL", _WHEEL_META.encode()


def running_wheel(folder: str | os.PathLike) -> Path:
  """The wheel of the running jaxport under ``folder`` (``wheels/<digest>/``), made if missing."""
  version, _, _ = _metadata()
  members = list(_members())
  digest = hashlib.sha256()
  for name, data in members:
    digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
  where = Path(folder) / "wheels" / digest.hexdigest()[:16]
  wheel = where / f"{DISTRIBUTION}-{version}-py3-none-any.whl"
  if wheel.is_file():
    return wheel
  where.mkdir(parents=True, exist_ok=True)
  info = f"{DISTRIBUTION}-{version}.dist-info"
  with replacing(wheel, private=True) as f, zipfile.ZipFile(
      f, "w", compression=zipfile.ZIP_DEFLATED) as zf:  # one temporary file per process
    record = []
    for name, data in members:
      zf.writestr(name, data)
      record.append(_record_line(name, data))
    record.append(f"{info}/RECORD,,")
    zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
  logger.info("made a wheel of the running jaxport: %s", wheel)
  return wheel
