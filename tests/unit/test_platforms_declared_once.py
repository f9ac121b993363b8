"""What jaxport knows of each platform is declared once, in ``jaxport/_platforms.py``: no other
module of the package compares a platform's name; it asks the table."""

from __future__ import annotations

import ast
import pathlib

import pytest

from _parsed_sources import parsed, walked

import jaxport
from jaxport import _platforms as P

PACKAGE = pathlib.Path(jaxport.__file__).parent
TABLE = PACKAGE / "_platforms.py"
# jax's backend name of CUDA and ROCm devices, and the wire's, is a platform's name too.
NAMES = set(P.PLATFORMS) | {"gpu"}


def _texts(node: ast.AST) -> set[str]:
  """The string constants ``node`` is, or holds as a tuple, set or list."""
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return {node.value}
  if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
    return set().union(*(_texts(e) for e in node.elts)) if node.elts else set()
  return set()


def platform_comparisons(source: str, where: str) -> list[str]:
  """Where ``source`` compares a text with a platform's name (``==``, ``!=``, ``in``, a
  membership in a literal of names) or asks whether a text starts with one."""
  found = []
  for node in walked(parsed(source)):
    if isinstance(node, ast.Compare):
      texts = _texts(node.left).union(*(_texts(c) for c in node.comparators))
      if texts & NAMES:
        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr in ("startswith", "endswith") and node.args
          and any(t.rstrip("_") in NAMES for t in _texts(node.args[0]))):
      found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
  return found


def test_no_module_but_the_platform_table_compares_a_platforms_name():
  modules = sorted(PACKAGE.rglob("*.py"))
  assert len(modules) > 100
  wrong = [w for p in modules if p != TABLE
           for w in platform_comparisons(p.read_text(encoding="utf-8"),
                                         str(p.relative_to(PACKAGE.parent)))]
  assert not wrong, "ask jaxport._platforms instead:\n" + "\n".join(wrong)


@pytest.mark.parametrize("planted", [
    "if platform == 'cpu':\n  pass",
    "accelerator = platform != 'tpu'",
    "gpu = platform in ('cuda', 'rocm')",
    "on_host = 'cpu' in device_kind.lower()",
    "mine = target.startswith('tpu_')",
    "backend_is_gpu = name == 'gpu'",
], ids=["equal", "not equal", "membership", "a word of a kind", "a target prefix", "jax's gpu"])
def test_the_rule_catches_a_planted_comparison(planted):
  assert platform_comparisons(planted, "planted.py"), planted


def test_the_rule_lets_questions_to_the_table_be():
  asked = ("on_host = is_host(platform)\nholder = single_holder(platform)\n"
           "owner = target_platform(target)\nfolder = store / platform")
  assert platform_comparisons(asked, "asked.py") == []


def test_the_table_orders_the_host_first_then_the_accelerators():
  assert P.PLATFORMS == (P.HOST_PLATFORM, *P.ACCELERATORS)
  assert P.is_host(P.HOST_PLATFORM) and not any(P.is_host(a) for a in P.ACCELERATORS)
  assert not P.is_host("not a platform") and not P.single_holder("not a platform")


@pytest.mark.parametrize("text, version", [("cuda 13000", "13.0"), ("cuda 12080", "12.8"),
                                           ("rocm 60300", "6.3.0"), ("ROCm 70002", "7.0.2"),
                                           ("<unknown>", None), ("cuda", None)])
def test_a_runtimes_version_is_read_as_that_runtime_writes_it(text, version):
  assert P.runtime_version_text(text) == version


@pytest.mark.parametrize("kind, wire", [("cpu", "cpu"), ("TPU v5 lite", "tpu"),
                                        ("NVIDIA H100 80GB HBM3", "gpu"), ("Tesla T4", "gpu"),
                                        ("AMD Instinct MI300X", "gpu"),
                                        ("Graphcore Colossus", None)])
def test_an_older_envelopes_device_kind_names_its_wire_platform(kind, wire):
  assert P.wire_platform_of_device_kind(kind) == wire


@pytest.mark.parametrize("version, platform", [("cuda 12080", "cuda"), ("rocm 60300", "rocm"),
                                               ("HIP runtime", "rocm"), ("", None)])
def test_a_gpu_backend_is_told_apart_by_its_platform_version(version, platform):
  assert P.of_gpu_backend(version) == platform


@pytest.mark.parametrize("target, platform", [
    ("lapack_sgetrf_ffi", "cpu"), ("ducc_fft", "cpu"), ("cusolver_getrf_ffi", "cuda"),
    ("gpu_prng_threefry", "cuda"), ("hipsolver_getrf_ffi", "rocm"), ("tpu_custom_call", "tpu"),
    ("Sharding", None), ("shape_assertion", None)])
def test_a_custom_call_target_belongs_to_the_platform_its_name_says(target, platform):
  assert P.target_platform(target) == platform


def test_an_unknown_platform_is_refused_naming_the_known_ones():
  with pytest.raises(ValueError, match="'ipu' is not a platform jaxport knows; it knows cpu"):
    P.platform("ipu")
  assert P.corpus_prefixes(P.HOST_PLATFORM) == (f"{P.HOST_PLATFORM}_", "")
  assert P.corpus_prefixes("tpu") == ("tpu_",)
