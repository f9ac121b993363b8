"""Upgrading serialized modules whose custom calls jaxlib no longer registers (docs/upgrade.md)."""

from jaxport.upgrades._envelope import (
    LAYOUTS as LAYOUTS,
    EnvelopeRewrite as EnvelopeRewrite,
    envelope_layout as envelope_layout,
    expired_reason as expired_reason,
    read_any_envelope as read_any_envelope,
    rewrite_envelope as rewrite_envelope,
    upgrade_envelope as upgrade_envelope,
)
from jaxport.upgrades._upgrade import (
    Rewrite as Rewrite,
    UpgradeReport as UpgradeReport,
    rewritable_targets as rewritable_targets,
    upgrade as upgrade,
    upgrade_module as upgrade_module,
    upgrade_with_report as upgrade_with_report,
)

__all__ = ["LAYOUTS", "EnvelopeRewrite", "envelope_layout", "Rewrite", "UpgradeReport", "expired_reason", "read_any_envelope",
           "rewrite_envelope",
           "rewritable_targets", "upgrade", "upgrade_envelope", "upgrade_module",
           "upgrade_with_report"]
