"""The judge's steps (``jaxport.harness._judge``) as the tests call them one at a time, with
the installed jax as the consumer unless a test names another."""

import datetime

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.harness._judge import _findings, _release
from jaxport.harness._judge._status import Policy, status_of
from jaxport.harness._protocol._answers import (Numerics, ReaderResult, ReplayAnswer, Stage,
                                                TodayResult)
from jaxport.harness._protocol._requests import ReplayRequest

CONSUMER = installed_jax_version()

def manifest_of_consumer(case_id: str, family: str) -> Manifest:
  """A manifest of an entry without custom calls that the installed jax recorded on the cpu."""
  return Manifest(case_id=case_id, family=family, platform="cpu",
                  record_date=datetime.date(2026, 11, 30),
                  producer=Producer(jax=CONSUMER, jaxlib=CONSUMER, jaxport="0", numpy="2",
                                    scipy=None, python=None),
                  calling_convention_version=10, serialization_version=6,
                  custom_call_targets=(), polymorphic_shapes=None, constraints=None,
                  lowering_only=False, comparison=Comparison("allclose", 1e-5, 1e-5))


def findings_of_today(entry_id, manifest: Manifest, platforms: tuple[str, ...],
                      newest: bool = True, **today):
  """The findings of an entry both readers reproduced, lowered for ``platforms``, whose
  today's export (``today``: the fields of its ``TodayResult``) ran and matched too."""
  numerics = Numerics(True, True, 0.0)
  readers = tuple(ReaderResult(r, Stage.COMPARE, numerics=numerics, platforms=platforms,
                               allowed_targets=()) for r in ("jaxport", "jax"))
  answer = ReplayAnswer(readers=readers, host=None, seconds=0.0, timings={},
                        today=TodayResult(available=True, numerics=numerics, **today))
  request = ReplayRequest("compat_data", entry_id, ("jaxport", "jax"), current=True)
  return findings(answer, request, entry_id=entry_id, manifest=manifest,
                  today=datetime.date(2026, 12, 1), window_days=180, newest=newest)


# Whether the judge finds one reader's replay read, ran and matched.
reproduced = _findings.reproduced


def findings(answer, request, **kwargs):
  """The outcome ``findings_of`` builds from a worker's answer, before its status."""
  return _findings.findings_of(answer, request, consumer=CONSUMER, **kwargs)


def status(outcome, strict=False, changes_fail=False, superseded=False, updating=False):
  """The status the judge gives ``outcome`` under these settings."""
  return status_of(outcome.kinds, Policy(strict, changes_fail, superseded, updating),
                   expected_failure=bool(outcome.expected_failure))


def annotate(outcome, manifest, *, today, table, consumer=None):
  """``outcome`` judged against the expectations ``table`` (release verdict and kinds)."""
  return _release.with_release(outcome, manifest, today=today, table=table,
                               consumer=consumer or CONSUMER)
