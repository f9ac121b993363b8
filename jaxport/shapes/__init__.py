"""Internal package; the public API is re-exported from jaxport."""
