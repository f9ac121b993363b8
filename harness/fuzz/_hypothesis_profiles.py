"""Hypothesis profiles for the fuzz suite: ``dev``, ``ci`` (the default) and ``nightly``.

Select one with ``pytest harness/ --hypothesis-profile=nightly``. ``ci`` is
derandomized and keeps no example database, so every run of the same code
tries the same examples; ``nightly`` runs at least 10,000 examples of every
property, the expensive ones included (see :func:`budget`); ``budgeted`` runs
``JAXPORT_FUZZ_EXAMPLES`` examples of each cheap property (default 1,000) and
the expensive ones at their ``ci`` budget, sized so that the nightly's fuzz job
against the newest jax ends within the wall-clock budget the job enforces.
Every profile prints the ``@reproduce_failure`` blob of a failure.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

from harness._environment import fuzz_examples

NIGHTLY_EXAMPLES = 10_000

_COMMON = dict(
    deadline=None,
    print_blob=True,
    # The explain phase re-runs failing examples many times; with XLA in the
    # loop it costs minutes and adds little to a shrunk counterexample.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
)

settings.register_profile("dev", max_examples=15, derandomize=False, **_COMMON)
settings.register_profile("ci", max_examples=200, derandomize=True, database=None, **_COMMON)
settings.register_profile("nightly", max_examples=NIGHTLY_EXAMPLES, derandomize=False,
                          **_COMMON)
settings.register_profile("budgeted", max_examples=fuzz_examples(1000), derandomize=False,
                          **_COMMON)
settings.load_profile("ci")


def budget(ci_examples: int) -> settings:
  """Settings for an expensive property: at most ``ci_examples`` outside ``nightly``.

  Properties that compile XLA cost a fraction of a second per example; the
  nightly profile runs them as often as the cheap ones.
  """
  current = settings.default
  if current.max_examples >= NIGHTLY_EXAMPLES:
    return settings(current)
  return settings(current, max_examples=min(current.max_examples, ci_examples))
