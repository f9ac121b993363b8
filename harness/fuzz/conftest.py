"""The fuzz suite's settings: its Hypothesis profiles (``ci`` by default)."""

import harness.fuzz._hypothesis_profiles  # noqa: F401  (registers the profiles)
