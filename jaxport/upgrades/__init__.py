"""Upgrading serialized modules whose custom calls jaxlib no longer registers (docs/upgrade.md)."""

from jaxport.upgrades._upgrade import (
    Rewrite as Rewrite,
    UpgradeReport as UpgradeReport,
    rewritable_targets as rewritable_targets,
    upgrade as upgrade,
    upgrade_module as upgrade_module,
    upgrade_with_report as upgrade_with_report,
)

__all__ = ["Rewrite", "UpgradeReport", "rewritable_targets", "upgrade", "upgrade_module", "upgrade_with_report"]
