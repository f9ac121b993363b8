"""The one judge of an entry: from the worker's answer to the entry's outcome and status.

The session hands it each replayed entry (``_entry.judge``: the request, the worker's answer,
the manifest and the run's context) and stores what it returns; ``jaxport audit`` hands it what
it read of an artifact (``_artifact``), judged with the same rules (``_age``, ``_targets``,
``_drift``, golden verification's problems, ``_status``); the release replayer's rows and the
matrix's cells get their status from ``_release_runs``. The worker, audit and the release
replayer return results only: nothing else builds a finding or chooses a status or a kind
(the layering test holds it).

Steps, one module each: the answer's findings (``_findings``), its age (``_age``), its
targets (``_targets``), its lowering's differences from today's (``_drift``), its producer
release against the project's expectations table (``_release``), the releases it runs on
against its case's ``min_consumer`` (``_consumers``), and the status those findings make
(``_status``).

Kinds, from worst to mildest:
  ``golden_data_error``    the entry's own files fail verification (a hash, the
                           manifest, an array file): damage to the golden data,
                           not a verdict on jax. Always fails, and no
                           expected-status row ever excuses it.
  ``compatibility_break``  the old entry no longer reads, runs, or computes the
                           recorded results (any reader); golden data that fails
                           verification; a worker crash. Always fails.
  ``export_error``         the case can no longer be exported today. Always fails.
  ``checker_error``        the case's checker raised while it judged outputs (a
                           reader's or today's): the case's code is at fault,
                           not the entry or jax. One line names the checker and
                           the exception, and what the case's checker today
                           makes of the entry's own recorded outputs (accepted:
                           ``--compat-update`` records the case anew). Always
                           fails, and no expectations row excuses it; an entry
                           of a case with a newer entry warns (a failure with
                           ``--strict``), as does one whose case an update run
                           records anew.
  ``below_min_consumer``   the case declares the oldest jax release its entries
                           must run on (``min_consumer``), and the entry's
                           computed range (``jaxport.releases.runs_on``) leaves
                           out that release or a newer one up to the producer;
                           the message names the release and the limiting
                           factor. Always fails.
  ``min_consumer_unknown`` whether the entry runs on its case's ``min_consumer``
                           cannot be said: its range cannot be computed from
                           its blob, or the release table does not measure that
                           release. A warning, a failure with ``--strict``.
  ``signature_change``     today's export is called with other input or output
                           trees, dtypes, shapes, shardings, effects or symbolic
                           constraints than the entry (its calling contract,
                           ``_calling``), is lowered for fewer of the entry's
                           platforms, or is compared otherwise: fails and
                           warns as ``lowering_drift`` does. An entry older than
                           its case's newest is judged by its readers and
                           recorded outputs only (a skip line, "earlier
                           contract").
  ``platforms_added``      today's export of the case's newest entry is lowered
                           for platforms the entry's blob is not (and for all
                           it is): the artifact changed, its callers still load
                           it. A warning, a failure with ``--strict``;
                           ``--compat-update`` records the case anew.
  ``donation_removed``     today's export of the case's newest entry no longer
                           donates an input the entry's module donates: the
                           artifact changed, its callers still call it. A
                           warning, a failure with ``--strict``;
                           ``--compat-update`` records the case anew.
  ``lowering_drift``       today's lowering uses other targets or other operand,
                           result or attribute signatures. Fails lowering-only
                           entries (their signatures are all they promise);
                           otherwise a warning, a failure with ``--strict``.
  ``numerics_change``      today's lowering computes results outside tolerance.
                           A warning, a failure with ``--strict``.
  ``jax_config_changed``   the case's code changed the worker's state while
                           the entry was replayed (a jax setting or a jax
                           context left entered, a warnings filter, a timer,
                           a signal handler); the worker put it back before
                           the next entry. A warning, a failure with
                           ``--strict``.
  ``numerics_drift``       results within tolerance but not bitwise equal, on
                           a host of the recording host's class
                           (``jaxport.golden._host``). Reported only.
  ``numerics_other_host``  results within tolerance but not bitwise equal on
                           a host of another class than the recording one, or
                           with either host unknown: bitwise equality was not
                           expected, so this is a pass with a note, counted
                           apart from the bitwise passes.
  ``upgraded``             the entry failed to run because its custom calls are
                           no longer registered, and ran and matched the
                           recorded outputs after ``jaxport.upgrade`` (the rules
                           applied are in the message); or the installed jax
                           refused its envelope as expired, and it read and
                           matched after ``jaxport.upgrade_envelope`` (rule
                           ``envelope``). Reported only.
  ``producer_drift``       a lowering difference of an entry recorded by
                           another jax release whose results today's module
                           still computes, where the case's entry recorded by
                           the replaying jax lowers as today (``_drift``), or a
                           stale target an expectations table attributes to an
                           old release: jax's change, not the function's.
                           Reported only.
  ``drift_unattributed``   the same difference without that evidence: whose
                           change it is is unknown. A warning, a failure with
                           ``--strict``.
A project whose policy is that a changed function fails (``OnChange.FAIL``, the
default outside jaxport's own repository) fails ``lowering_drift`` and
``numerics_change`` without ``--strict``.
An entry whose breaks the project's expectations table explains (a known
failure of an old producer) is an expected failure (``xfail``).
Staleness (age beyond the compat window, targets no longer emitted) and a
record date after today (``future_date``) are warnings that fail with
``--strict``.
"""
