"""Scripts run inside a jax release's own environment, where jaxport may not import: each is
started by its path and loads what it shares with jaxport by path too.

A package of its own beside ``jaxport``: it replays with the release's own ``jax.export``, which
jaxport, an independent implementation of it, never imports."""
