"""Symbolic input shapes of a shape-polymorphic dataset of jax's corpus.

jax's files do not state the polymorphic shapes a module was exported with,
and ``tensor<?x?xf32>`` alone cannot say whether two unknown dimensions are
one variable. The module itself often does: its public ``main`` reads each
dimension variable with ``stablehlo.get_dimension_size %argN, dim = D`` and
passes it, unchanged but for conversions, to ``_wrapped_jax_export_main``,
whose arguments may carry the variable's name (``jax.global_constant = "b"``).
Where the module says all of that, the specs come from it. Otherwise they come
from :data:`STATED_SPECS`, the specs jax's own test states for the dataset,
and otherwise the dataset is refused with the reason.
"""

from __future__ import annotations

import dataclasses
import re

# The polymorphic_shapes jax's own back-compat test passes for each dataset
# (tests/export_back_compat_test.py of jax v0.10.2; the test name follows each
# entry). Keys are (file stem, dataset variable). Reviewed facts, not guesses:
# add an entry only with the test that states it.
STATED_SPECS: dict[tuple[str, str], tuple[tuple[str | None, ...], str]] = {
    ("stablehlo_dynamic_approx_top_k", "data_2024_05_30"):
        (("b + 4,",), "test_dynamic_approx_top_k"),
    ("stablehlo_dynamic_rng_bit_generator", "data_2023_06_17"):
        ((None, "b0, b1"), "test_stablehlo_dynamic_rbg_bit_generator"),
    ("stablehlo_dynamic_top_k", "data_2023_07_16"):
        (("_, b",), "test_stablehlo_dynamic_top_k"),
    ("stablehlo_dynamic_top_k", "data_2023_08_11"):
        (("_, b",), "test_stablehlo_dynamic_top_k"),
    ("tpu_stablehlo_dynamic_reduce_window", "data_unary_2023_06_17"):
        (("b, ...",), "test_tpu_stablehlo_dynamic_reduce_window_unary"),
    ("tpu_stablehlo_dynamic_reduce_window", "data_variadic_2023_06_17"):
        (("b, ...", "b, ..."), "test_tpu_stablehlo_dynamic_reduce_window_variadic"),
}
STATED_IN = "tests/export_back_compat_test.py of jax v0.10.2"

# Every scan below runs in time linear in the module text: headers are found
# with str.find, each followed by a search for its one terminator, and the
# regular expressions left have no nested or overlapping repetitions (a module
# text is untrusted; a lazy ``(.*?)\)`` retried at each of many headers
# without a terminator is quadratic).
_MAIN_HEAD = "func.func public @main("
_WRAPPED_HEAD = "func.func private @_wrapped_jax_export_main("
_SIGNATURE_END_RE = re.compile(r"\)\s*->")
_ARG_TYPE_RE = re.compile(r"%arg(\d{1,9}): tensor<([^>]*)>")
_DIM_SIZE_RE = re.compile(
    r"(%[\w#]+) = stablehlo\.get_dimension_size %arg(\d{1,9}), dim = (\d{1,9})(?!\d)")
_CONVERT_RE = re.compile(r"(%[\w#]+) = stablehlo\.convert (%[\w#]+) ")
_CALL_HEAD = "call @_wrapped_jax_export_main("
_NAME_HEAD = 'jax.global_constant = "'


@dataclasses.dataclass(frozen=True)
class _Signature:
  """The argument list of a function header found in the module text."""

  args: str   # the text between the parentheses
  end: int    # where the arguments end in the module text


def _signature(text: str, head: str) -> _Signature | None:
  r"""The arguments after the first ``head``: up to the first ``)`` followed by ``->``.

  The same result as searching ``head(.*?)\)\s*->`` with DOTALL, in linear time:
  if no terminator follows the first header, none follows a later one.
  """
  start = text.find(head)
  if start < 0:
    return None
  start += len(head)
  end = _SIGNATURE_END_RE.search(text, start)
  return None if end is None else _Signature(text[start:end.start()], end.start())


def _delimited(text: str, head: str, close: str, *, nonempty: bool = False) -> str | None:
  """The text between the first ``head`` and the next ``close`` (skipping empty ones when
  ``nonempty``), in linear time; None when there is none."""
  pos = 0
  while (start := text.find(head, pos)) >= 0:
    start += len(head)
    end = text.find(close, start)
    if end < 0:
      return None
    if end > start or not nonempty:
      return text[start:end]
    pos = end
  return None


def _has_dynamic_tensor(text: str) -> bool:
  """Whether some ``tensor<...>`` in ``text`` has a ``?`` before its ``>``, in linear time."""
  pos = 0
  while (start := text.find("tensor<", pos)) >= 0:
    end = text.find(">", start)
    segment = text[start:] if end < 0 else text[start:end]
    if "?" in segment:
      return True
    if end < 0:
      return False
    # Every "tensor<" inside the segment ends at the same ">", with no "?" either.
    pos = end
  return False


@dataclasses.dataclass(frozen=True)
class SpecResult:
  """Specs per input (None: static) and where they came from, or why there are none."""

  specs: tuple[str | None, ...] | None
  source: str


def is_shape_polymorphic(module_text: str) -> bool:
  """Whether the module's ``main`` takes or returns arrays of unknown dimensions."""
  if "jax.uses_shape_polymorphism = true" in module_text:
    return True
  main = _signature(module_text, _MAIN_HEAD)
  if main is None:
    return False
  start = module_text.find(_MAIN_HEAD)
  return _has_dynamic_tensor(module_text[start:module_text.find("{", main.end)])


def _split_args(signature: str) -> list[str]:
  """The arguments of a function signature, split at top-level commas."""
  parts, depth, cur = [], 0, []
  for ch in signature:
    if ch in "<({[":
      depth += 1
    elif ch in ">)}]":
      depth -= 1
    if ch == "," and depth == 0:
      parts.append("".join(cur))
      cur = []
    else:
      cur.append(ch)
  if "".join(cur).strip():
    parts.append("".join(cur))
  return [p.strip() for p in parts]


def _main_body(module_text: str, main: _Signature) -> str:
  start = module_text.find("{", main.end)
  end = module_text.find("\n  }", start)
  return module_text[start:end if end > 0 else len(module_text)]


def infer_from_module(module_text: str) -> tuple[tuple[str | None, ...] | None, str]:
  """Specs read from the module (None and the reason where it does not say them all)."""
  main, wrapped = _signature(module_text, _MAIN_HEAD), _signature(module_text, _WRAPPED_HEAD)
  if main is None or wrapped is None:
    return None, "the module has no public main wrapping _wrapped_jax_export_main"
  arg_dims = {}
  for arg in _split_args(main.args):
    t = _ARG_TYPE_RE.match(arg)
    if t is None:
      return None, f"cannot read the type of main's argument {arg[:60]!r}"
    arg_dims[int(t.group(1))] = t.group(2).split("x")[:-1]
  body = _main_body(module_text, main)
  call = _delimited(body, _CALL_HEAD, ")")
  if call is None:
    return None, "main does not call _wrapped_jax_export_main"
  passed = [a.strip() for a in call.split(",")]
  wrapped_args = _split_args(wrapped.args)
  n_vars = len(wrapped_args) - len(arg_dims)
  if n_vars > len(passed):
    return None, (f"_wrapped_jax_export_main takes {len(wrapped_args)} arguments but main "
                  f"passes it {len(passed)}")
  converts = {dst: src for dst, src in _CONVERT_RE.findall(body)}
  reads = {}
  for value, arg, dim in _DIM_SIZE_RE.findall(body):
    reads[value] = (int(arg), int(dim))
  names: dict[tuple[int, int], str] = {}
  for k in range(n_vars):
    value, seen = passed[k], set()
    while value not in reads and value in converts and value not in seen:
      seen.add(value)  # converts may loop in a hostile module
      value = converts[value]
    if value not in reads:
      return None, (f"dimension variable {k} is computed from the argument sizes with arithmetic, "
                    "so the module does not say which dimension it is")
    name = _delimited(wrapped_args[k], _NAME_HEAD, '"', nonempty=True)
    if name is None:
      return None, f"the module does not name dimension variable {k}"
    names[reads[value]] = name
  specs = []
  for i in sorted(arg_dims):
    dims = arg_dims[i]
    if "?" not in dims:
      specs.append(None)
      continue
    out = []
    for d, size in enumerate(dims):
      if size != "?":
        out.append(size)
      elif (i, d) in names:
        out.append(names[(i, d)])
      else:
        return None, f"dimension {d} of argument {i} is unknown and no dimension variable is read from it"
    specs.append(", ".join(out))
  return tuple(specs), "the module (dimension reads and variable names)"


def resolve(module_text: str, stem: str, variable: str) -> SpecResult:
  """The input specs of a shape-polymorphic dataset, or None with the reason."""
  specs, why = infer_from_module(module_text)
  if specs is not None:
    return SpecResult(specs, why)
  stated = STATED_SPECS.get((stem, variable))
  if stated is not None:
    return SpecResult(stated[0], f"{STATED_IN}, {stated[1]} (the module does not say: {why})")
  return SpecResult(None, f"the module does not state its polymorphic shapes ({why}) and "
                          f"{STATED_IN} states none for {stem}.{variable}")
