"""Scripts run inside a jax release's own environment, where jaxport may not import: each is
started by its path and loads what it shares with jaxport by path too."""
