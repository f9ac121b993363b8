"""Hypothesis fuzzing of jaxport's symbolic shapes: a suite of its own, beside the replay."""
