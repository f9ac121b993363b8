"""A difference between an entry's recorded lowering and today's: whose change it is.

An entry another jax release recorded, whose results today's module still computes (or that
is not run), differs because jax's lowering changed (``producer_drift``, reported only) where
there is evidence: today's lowering is that of the case's entry recorded by the replaying jax,
so the function's owner did not change it since. Without that evidence, whose change it is is
unknown (``drift_unattributed``, a warning). A lowering-only entry promises its signatures, so
a difference breaks it (unless it was imported: another function than the case it is compared
with). Anything else is the function's change (``lowering_drift``). A difference of the calling
contract is the function's (``signature_change``), but for what the jax release writes
differently. The replay and ``jaxport audit`` both judge a difference here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from jaxport.golden._signature_drift import added_text, drift, gone_text, shape_blind

from jaxport._vocabulary import Finding, FindingKind, Subject
from jaxport.golden._manifest import CustomCallSignature, Manifest


def jax_side(manifest: Manifest, consumer: str | None, results_match: bool = True) -> str | None:
  """Why a lowering difference of this entry may be jax's change rather than the function's,
  or None when it may only be the function's: another release recorded it, and the results
  still match."""
  producer = manifest.producer.jax
  if producer is None or consumer is None or producer == consumer or not results_match:
    return None
  return f"recorded by jax {producer}, lowered today by jax {consumer}"


def lowers_as_current_entry(manifest: Manifest, today_lines: Iterable[str],
                            current: Sequence[CustomCallSignature] | None) -> bool:
  """The evidence that a difference is jax's: today's lowering, as its differences from this
  entry (``today_lines``) describe it, is the lowering of the case's entry recorded by the
  replaying jax (its signatures ``current``; None: the case has no such entry)."""
  if current is None:
    return False
  recorded = manifest.custom_call_targets
  if manifest.imported_from is not None:
    # An imported entry is compared with today's lowering by shape (``shape_blind``).
    recorded, current = shape_blind(recorded), shape_blind(current)
  return sorted(str(c) for c in drift(recorded, current)) == sorted(today_lines)


def replaced_by_jax(recorded: Iterable[str], today: Iterable[str],
                    rewrites: Iterable[Mapping[str, object]], consumer: str | None) -> dict[str, str]:
  """The lines of a lowering difference this run measured as jax's change, each with why: a
  recorded target the installed jaxlib no longer registers (the entry's readers failed on it
  and ran only after ``jaxport.upgrade`` rewrote it, ``rewrites``) that today's lowering no
  longer emits, and its successor, which today's lowering emits in its place. A function's
  owner cannot make jax emit a target its jaxlib no longer has."""
  recorded, today = set(recorded), set(today)
  lines = {}
  for rewrite in rewrites:
    legacy, successor = rewrite.get("legacy_target"), rewrite.get("target")
    if not (isinstance(legacy, str) and isinstance(successor, str)):
      continue
    if legacy in recorded and legacy not in today and successor in today:
      why = (f"jaxlib of jax {consumer or 'installed'} no longer registers {legacy}: this run's "
             f"readers ran the entry only after jaxport.upgrade's rule {rewrite.get('rule')} "
             f"rewrote it to {successor}, which jax's lowering emits in its place")
      lines[gone_text(legacy)] = why
      if successor not in recorded:
        lines[added_text(successor)] = why
  return lines


def lowering_difference(manifest: Manifest, consumer: str | None, lead: str, line: str,
                        results_match: bool = True, evidence: bool = False,
                        jax_replaced: str | None = None) -> Finding:
  """The finding of one difference ``line`` of today's lowering from the entry's.
  ``evidence``: today's lowering is that of the case's entry recorded by ``consumer``
  (:func:`lowers_as_current_entry`); ``jax_replaced``: why this run measured the line as
  jax's change (:func:`replaced_by_jax`), None where it did not."""
  by_jax = jax_side(manifest, consumer, results_match)
  if by_jax is not None and jax_replaced is not None:
    return Finding(FindingKind.PRODUCER_DRIFT, Subject.TODAY,
                   f"{lead}: {line} ({by_jax}: {jax_replaced})", detail=line)
  if by_jax is not None and evidence:
    return Finding(FindingKind.PRODUCER_DRIFT, Subject.TODAY,
                   f"{lead}: {line} ({by_jax}: a change of jax's lowering between the two "
                   f"releases, the results still match and the case's entry recorded by jax "
                   f"{consumer} lowers as today)", detail=line)
  if by_jax is not None:
    return Finding(FindingKind.DRIFT_UNATTRIBUTED, Subject.TODAY,
                   f"{lead}: {line} ({by_jax}: whose change this is is unknown, jax's or the "
                   f"function's, since no entry of this case recorded by jax {consumer} lowers "
                   f"as today; record the case under jax {consumer} (--compat-update) to "
                   "compare with it)", detail=line)
  kind = (FindingKind.COMPATIBILITY_BREAK
          if manifest.lowering_only and manifest.imported_from is None
          else FindingKind.LOWERING_DRIFT)
  return Finding(kind, Subject.TODAY, f"{lead}: {line}", detail=line)


def contract_findings(manifest: Manifest, consumer: str | None, by_function: Sequence[str],
                      by_jax: Sequence[str], newest: bool,
                      platforms_added: Sequence[str] = (),
                      donation_removed: Sequence[str] = ()) -> tuple[list[Finding], list[str]]:
  """The findings and skip lines of a difference of today's calling contract from the entry's:
  ``by_function``, what the function's owner changed (trees, types, shardings, effects,
  platforms removed, the comparison settings), ``by_jax``, what the jax release writes
  differently, and ``platforms_added``, platforms today's export adds (``platforms_added``:
  the artifact changed, its callers still load it), and ``donation_removed``, inputs today's
  export no longer donates (``donation_removed``: the artifact changed, its callers still call
  it). An entry older than its case's newest promised an earlier contract: only a skip line
  says so."""
  lead = f"calling contract of case {manifest.case_id}"
  findings = [Finding(FindingKind.PRODUCER_DRIFT if manifest.producer.jax != consumer
                      else FindingKind.SIGNATURE_CHANGE, Subject.TODAY, f"{lead}: {line}",
                      detail=line) for line in by_jax]
  skips = []
  if by_function and not newest:
    line = (f"earlier contract: case {manifest.case_id}'s calling contract changed since this "
            f"entry ({'; '.join(by_function)}); it is judged by its readers and recorded outputs "
            "only")
    if any(d.startswith("comparison:") for d in by_function):
      line += (", with the comparison it was recorded with (the case's new one judges the "
               "entries recorded with it)")
    skips.append(line)
  findings += [Finding(FindingKind.SIGNATURE_CHANGE, Subject.TODAY, f"{lead}: {line}",
                       detail=line) for line in (by_function if newest else ())]
  findings += [Finding(FindingKind.PLATFORMS_ADDED, Subject.TODAY,
                       f"{lead}: {line}: callers of the entry still load it, but the artifact "
                       "changed; record it anew (--compat-update) to ship it", detail=line)
               for line in (platforms_added if newest else ())]
  findings += [Finding(FindingKind.DONATION_REMOVED, Subject.TODAY,
                       f"{lead}: {line}: callers of the entry still call it, but the artifact "
                       "changed; record it anew (--compat-update) to ship it", detail=line)
               for line in (donation_removed if newest else ())]
  return findings, skips
