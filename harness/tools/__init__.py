"""Tools that record and replay golden entries with other jax releases (docs/multi-release.md)."""
