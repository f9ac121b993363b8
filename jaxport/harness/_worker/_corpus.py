"""Matching entries imported from jax's own corpus with the registered cases of the same operation.

An imported dataset is jax's test function, not a case of this repository, so
its entry has no case of its own. Where a registered case computes the same
operation for the same platform and dtype (``<platform>_<op>[_<variant>]_<dtype>``,
or ``<op>_<dtype>`` for the CPU LAPACK cases), today's lowering of that case is
compared with the dataset's module, signature by signature, with dimension
sizes left out: the two functions use other shapes, so only the custom calls'
element types, ranks and attributes can be compared. The importer records the
dataset's platform, operation, variant and dtype in the entry's
``imported_from`` details.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jaxport.harness import _case
from jaxport.golden._manifest import Manifest
from jaxport._platforms import corpus_prefixes

def candidate_ids(details: Mapping[str, Any]) -> list[str]:
  """Case ids that would match the dataset described by ``details``, best first."""
  platform, op = details.get("dataset_platform"), details.get("dataset_op")
  if not platform or not op:
    return []
  variant, dtype = details.get("dataset_variant"), details.get("dataset_dtype")
  prefixes = corpus_prefixes(platform)
  out = []
  for prefix in prefixes:
    for parts in ((op, variant, dtype), (op, dtype), (op, variant), (op,)):
      if all(parts):
        out.append(prefix + "_".join(parts))
  return list(dict.fromkeys(out))


def is_corpus_dataset(m: Manifest) -> bool:
  """Whether an entry was imported from jax's own corpus (entries that older releases recorded
  through the staging import name their own registered case instead)."""
  return m.imported_from is not None and "dataset_platform" in m.imported_from.details


def matching_case(details: Mapping[str, Any] | None,
                  lookup_case: Callable[[str], _case.Case | None]) -> _case.Case | None:
  """The registered case matching an imported dataset, exported for the dataset's platform."""
  if not details:
    return None
  for case_id in candidate_ids(details):
    case = lookup_case(case_id)
    if case is not None and case.export_platforms() == (details.get("dataset_platform"),):
      return case
  return None

