"""The ``jaxport`` command line."""

from jaxport.cli._main import main as main

__all__ = ["main"]
