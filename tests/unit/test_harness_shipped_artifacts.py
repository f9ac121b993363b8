"""How the harness judges imported artifacts (``jaxport import-artifacts``): never orphans,
told once that today's export does not apply, and an expired shipped envelope fails or warns
as the project says."""

import dataclasses
from pathlib import Path

from jaxport.golden import EntryId
from jaxport.harness._controller import _coverage as coverage
from jaxport.harness._judge import _findings
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import EnvelopeRead
from jaxport.report import FindingKind as K
from jaxport.report._sections import Targets

SHIPPED = [EntryId.parse("cpu/serving/model_a/2026-12-06_jax-unknown"),
           EntryId.parse("cpu/serving/model_b/2026-12-06_jax-unknown")]
RECORDED = EntryId.parse("cpu/layers/gone/2026-12-01_jax-0.10.2")
NO_TARGETS = Targets((), (), (), (), ())


@dataclasses.dataclass(frozen=True)
class Replayed:
  """What coverage reads of one replayed entry."""
  entry_id: EntryId
  targets: tuple = ()
  current_targets: tuple | None = None
  lowering_only: bool | None = False
  platforms: tuple | None = ("cpu",)


def _checks(present, imported, strict=False):
  """The session checks of a run that replayed every entry of ``present``."""
  return coverage.session_checks("cpu", Project((), Path("golden")), targets=NO_TARGETS, other={},
                                 entries=[Replayed(e) for e in present], present=present,
                                 case_ids=[], checked_case_ids=[], strict=strict,
                                 imported=imported)


def test_imported_artifacts_are_not_orphans_and_are_told_once_that_todays_export_does_not_apply():
  checks = _checks([*SHIPPED, RECORDED], SHIPPED, strict=True)
  # The recorded entry of a case no module registers is still an orphan, and fails strictly.
  assert len(checks.failures) == 1 and "(gone)" in checks.failures[0]
  assert "model_a" not in checks.failures[0]
  (skip,) = [s for s in checks.skips if s.what == coverage.TODAYS_EXPORT_CHECKS]
  assert skip.why.startswith("2 imported artifacts (jaxport import-artifacts) have no case")


def test_a_store_of_imported_artifacts_only_has_nothing_to_warn():
  checks = _checks(SHIPPED, SHIPPED)
  assert checks.failures == () and checks.warnings == ()
  assert not any(s.what == coverage.TODAYS_EXPORT_CHECKS for s in _checks([RECORDED], ()).skips)


ENVELOPE = EnvelopeRead(layout="short-device-count", from_version=2, to_version=12,
                        reason="older than jax's window", producer=None,
                        error_before="ExpiredEnvelopeError: too old.")


def test_an_expired_shipped_envelope_fails_naming_upgrade_or_warns_as_the_project_says():
  failing = _findings._shipped_envelope_finding("jax", ENVELOPE, "0.12.0.1", fails=True)
  assert failing.kind is K.COMPATIBILITY_BREAK
  assert ("jax reader: jax 0.12.0.1 refuses this shipped artifact as it is (envelope layout "
          "short-device-count, header version 2): ExpiredEnvelopeError: too old. It loads") \
      in failing.message
  assert "`jaxport upgrade BLOB -o NEW.bin`" in failing.message
  warning = _findings._shipped_envelope_finding("jax", ENVELOPE, "0.12.0.1", fails=False)
  assert warning.kind is K.EXPIRED and warning.message == failing.message


def test_the_project_carries_its_shipped_artifact_policy_into_the_worker():
  project = Project(("cases",), Path("golden"), shipped_expired_fails=False)
  assert Project.from_json(project.to_json()) == project
  assert Project(("cases",), Path("golden")).shipped_expired_fails is True
