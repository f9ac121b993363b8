"""Importing jax's own back-compat test data into golden entries (``jaxport import-jax-testdata``)."""
