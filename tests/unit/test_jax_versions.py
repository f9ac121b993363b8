"""The supported jax range: refused below it at import, warned once above it, declared in pyproject."""

import json
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import jaxport
from jaxport._jaxcompat import _version
from jaxport.errors import JaxVersionError, UntestedJaxWarning
from jaxport.releases import served_releases

REPO = Path(__file__).resolve().parents[2]


def test_an_older_jax_is_refused_with_the_range():
  with pytest.raises(JaxVersionError) as info:
    _version.check_jax_version("0.8.3")
  assert str(info.value).startswith(
      f"jaxport {jaxport.__version__} supports jax {_version.MIN_JAX} to "
      f"{_version.MAX_TESTED_JAX}; found 0.8.3")
  assert isinstance(info.value, ImportError)


def test_a_newer_jax_warns_and_a_supported_one_does_not():
  with pytest.warns(UntestedJaxWarning, match=r"supports jax .* to .*; found 0\.13\.0"):
    _version.check_jax_version("0.13.0")
  with pytest.warns(UntestedJaxWarning, match=r"found 0\.12\.0\.2"):
    _version.check_jax_version("0.12.0.2")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    for release in served_releases():
      _version.check_jax_version(release)
    _version.check_jax_version(_version.MAX_TESTED_JAX + ".dev20260701")


def _import_with(version: str) -> subprocess.CompletedProcess:
  script = (f"import warnings, jax; jax.__version__ = {version!r}\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "  warnings.simplefilter('always')\n"
            "  import jaxport, jaxport.export, jaxport.calling\n"
            "print(sum('supports jax' in str(w.message) for w in caught))\n")
  return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        cwd=REPO, timeout=120)


def test_import_refuses_an_older_jax_at_once():
  proc = _import_with("0.8.3")
  assert proc.returncode != 0
  assert (f"JaxVersionError: jaxport {jaxport.__version__} supports jax {_version.MIN_JAX} "
          f"to {_version.MAX_TESTED_JAX}; found 0.8.3") in proc.stderr


def test_import_under_a_newer_jax_warns_once_and_goes_on():
  proc = _import_with("0.13.0")
  assert proc.returncode == 0, proc.stderr
  assert proc.stdout.strip() == "1"


def test_pyproject_declares_the_range_not_a_pin():
  project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
  assert project["version"] == jaxport.__version__
  deps = {d.split(">")[0].split("=")[0]: d for d in project["dependencies"]}
  assert deps["jax"] == f"jax>={_version.MIN_JAX}"
  assert deps["jaxlib"] == f"jaxlib>={_version.MIN_JAX}"
  assert served_releases()[0] == _version.MIN_JAX
  assert served_releases()[-1] == _version.MAX_TESTED_JAX


def test_the_nightly_matrix_and_the_runner_cover_every_tested_release():
  from jaxport.multirelease import _suites as suites_with_jax
  assert suites_with_jax.supported_releases() == served_releases()
  workflow = (REPO / ".github" / "workflows" / "nightly-compat.yml").read_text()
  job = workflow[workflow.index("supported-releases:"):]
  matrix = re.search(r"jax: \[([^\]]*)\]", job).group(1)
  assert tuple(json.loads(f"[{matrix}]")) == served_releases()


def test_four_part_releases_sort_after_their_base():
  assert _version.release_tuple("0.12.0.1") == (0, 12, 0, 1)
  assert _version.release_tuple("0.12.0") < _version.release_tuple("0.12.0.1") < \
      _version.release_tuple("0.12.1")
  assert _version.release_tuple("0.12.0.1.dev20261101") == (0, 12, 0, 1)
  ordered = sorted(served_releases(), key=_version.release_tuple)
  assert list(served_releases()) == ordered and ordered[-1] == _version.MAX_TESTED_JAX
