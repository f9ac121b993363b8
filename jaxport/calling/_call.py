"""Calling an Exported: the call_exported primitive, its rules and the custom VJP."""

from __future__ import annotations


def call(exported):
  """A callable that invokes ``exported`` with the pytree structure it was exported with."""
  raise NotImplementedError("jaxport.call is being built")
