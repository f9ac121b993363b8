"""Reading an Exported from flatbuffer bytes."""

from __future__ import annotations


def deserialize(blob):
  raise NotImplementedError("deserialization is being built")
