"""Public entry points for symbolic shapes."""

from __future__ import annotations


class SymbolicScope:
  def __init__(self, constraints_str=()):
    raise NotImplementedError("symbolic shapes are being built")


def is_symbolic_dim(p) -> bool:
  return False


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
  raise NotImplementedError("symbolic shapes are being built")


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
  raise NotImplementedError("symbolic shapes are being built")
