"""``python -m jaxport.harness._worker``: the worker process (``_main``)."""

from jaxport.harness._worker._main import main

main()
