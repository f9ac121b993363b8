"""A difference between an entry's recorded lowering and today's: whose change it is.

An entry another jax release recorded, whose results today's module still computes (or that
is not run), differs because jax's lowering changed (``producer_drift``, reported only). A
lowering-only entry promises its signatures, so a difference breaks it (unless it was
imported: another function than the case it is compared with). Anything else is the
function's change (``lowering_drift``). A difference of the calling contract is the
function's (``signature_change``), but for what the jax release writes differently. The replay
and ``jaxport audit`` both judge a difference here."""

from __future__ import annotations

from collections.abc import Sequence

from jaxport._vocabulary import Finding, FindingKind, Subject
from jaxport.golden._manifest import Manifest


def jax_side(manifest: Manifest, consumer: str | None, results_match: bool = True) -> str | None:
  """Why a lowering difference of this entry is jax's change rather than the function's, or
  None when it may be the function's. A function changed in the same upgrade without
  changing its results cannot be told apart from this (docs/harness.md)."""
  producer = manifest.producer.jax
  if producer is None or consumer is None or producer == consumer or not results_match:
    return None
  return (f"recorded by jax {producer}, lowered today by jax {consumer}: a change of jax's "
          "lowering between the two releases, the results still match")


def lowering_difference(manifest: Manifest, consumer: str | None, lead: str, line: str,
                        results_match: bool = True) -> Finding:
  """The finding of one difference ``line`` of today's lowering from the entry's."""
  by_jax = jax_side(manifest, consumer, results_match)
  if by_jax is not None:
    return Finding(FindingKind.PRODUCER_DRIFT, Subject.TODAY, f"{lead}: {line} ({by_jax})",
                   detail=line)
  kind = (FindingKind.COMPATIBILITY_BREAK
          if manifest.lowering_only and manifest.imported_from is None
          else FindingKind.LOWERING_DRIFT)
  return Finding(kind, Subject.TODAY, f"{lead}: {line}", detail=line)


def contract_findings(manifest: Manifest, consumer: str | None, by_function: Sequence[str],
                      by_jax: Sequence[str], newest: bool) -> tuple[list[Finding], list[str]]:
  """The findings and skip lines of a difference of today's calling contract from the entry's:
  ``by_function``, what the function's owner changed (trees, types, shardings, effects, the
  comparison settings), and ``by_jax``, what the jax release writes differently. An entry
  older than its case's newest promised an earlier contract: only a skip line says so."""
  lead = f"calling contract of case {manifest.case_id}"
  findings = [Finding(FindingKind.PRODUCER_DRIFT if manifest.producer.jax != consumer
                      else FindingKind.SIGNATURE_CHANGE, Subject.TODAY, f"{lead}: {line}",
                      detail=line) for line in by_jax]
  skips = []
  if by_function and not newest:
    skips.append(f"earlier contract: case {manifest.case_id}'s calling contract changed since "
                 f"this entry ({'; '.join(by_function)}); it is judged by its readers and "
                 "recorded outputs only")
  findings += [Finding(FindingKind.SIGNATURE_CHANGE, Subject.TODAY, f"{lead}: {line}",
                       detail=line) for line in (by_function if newest else ())]
  return findings, skips
