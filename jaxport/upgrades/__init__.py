"""Upgrading serialized modules whose custom calls jaxlib no longer registers (docs/upgrade.md)."""

from jaxport.upgrades._upgrade import (
    Rewrite as Rewrite,
    UpgradeReport as UpgradeReport,
    upgrade as upgrade,
    upgrade_module as upgrade_module,
    upgrade_with_report as upgrade_with_report,
)

__all__ = ["Rewrite", "UpgradeReport", "upgrade", "upgrade_module", "upgrade_with_report"]
