"""Registry of pytree node types that can be serialized."""

from __future__ import annotations


def register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata,
                                       deserialize_auxdata, from_children=None):
  raise NotImplementedError("pytree serialization registry is being built")


def register_namedtuple_serialization(nodetype, *, serialized_name):
  raise NotImplementedError("pytree serialization registry is being built")
