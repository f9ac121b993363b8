"""The harness's worker process: everything that imports jax to record, replay and lower.
Started as ``python -m jaxport.harness._worker`` by the controller's worker client; imports
nothing of ``jaxport.harness._controller``."""
