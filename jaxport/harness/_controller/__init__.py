"""The harness's side in pytest's process: the plugin, the session, the worker pool and its
clients, recording into the store, the run report. Nothing here reaches jax (the layering
test holds it); what needs jax is asked of a worker (``jaxport.harness._worker``)."""
