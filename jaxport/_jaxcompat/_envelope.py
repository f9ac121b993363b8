"""The flatbuffer envelope as the installed jax writes and reads it.

Two behaviours changed together in jax 0.11.1 (serialization version 12, read
from the wheels of 0.11.0 to 0.12.0.1):

- the writer stores the real serialization version (12) in the header instead
  of the literal 3, and always stores the producer's jax version (field 26);
- the reader refuses, as older than the 6-month backward-compatibility window,
  an envelope whose device count sits only in the legacy 16-bit field, and one
  that stores a sharding as an HloSharding proto. The config flag
  ``jax_export_deserialize_expired_versions`` (added in the same release)
  turns the first refusal into a ``DeprecationWarning``; the second stays.

Both are detected by that flag: a jax that has it writes and reads the new way.
The record's ``_has_named_shardings`` field went away in the same release;
:func:`has_named_shardings` answers for records of every release.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxport._jaxcompat import _messages as jax_messages

EXPIRED_FLAG = "jax_export_deserialize_expired_versions"

# What jax's header says for the layouts before version 12 (jax 0.10.2 and
# 0.11.0 store 3 so that releases older than the layout keep reading it).
LEGACY_HEADER_VERSION = 3
REAL_HEADER_VERSION = 12


# Whether this jax writes version 12 (real header number, jax_version always)
# and refuses expired envelopes.
WRITES_VERSION_12 = EXPIRED_FLAG in jax.config.values
REFUSES_EXPIRED = WRITES_VERSION_12
# Up to jax 0.11.0 a record read from named shardings also carries them as
# HloShardings (in/out_shardings_hlo); from 0.11.1 those are all None.
READ_DERIVES_HLO_SHARDINGS = not WRITES_VERSION_12


def header_version() -> int:
  """The number this jax writes in the header's ``serialization_version``."""
  return REAL_HEADER_VERSION if WRITES_VERSION_12 else LEGACY_HEADER_VERSION


def expired_versions_allowed() -> bool:
  """The value of ``jax_export_deserialize_expired_versions`` (False where jax has no flag)."""
  if not REFUSES_EXPIRED:
    return False
  return bool(getattr(jax.config, EXPIRED_FLAG))


def expired_message(serialization_version: int, producer: str | None) -> str:
  """jax's own words for an expired envelope (its text, missing space included)."""
  msg = ("Exported being deserialized seems to be older than the 6-month "
         "backward-compatibility window and cannot be deserialized anymore."
         f"The Exported uses serialization version {serialization_version}.")
  if producer is not None:
    msg += f" It was created with JAX version {producer}."
  return msg + f" See {jax_messages.EXPORT_PAGE}#compatibility-guarantees."


def has_named_shardings(exp: Any) -> bool:
  """Whether a record (jaxport's or jax's, of any release) keeps its shardings as named ones.

  jax up to 0.11.0 says so in ``_has_named_shardings``; later records always do
  (their ``*_shardings_hlo`` are all None).
  """
  found = getattr(exp, "_has_named_shardings", None)
  if found is not None:
    return bool(found)
  return all(s is None for s in (*exp.in_shardings_hlo, *exp.out_shardings_hlo))


def in_named_shardings(exp: Any) -> tuple[Any, ...]:
  """One named sharding (or None) per input of a record, of any release."""
  if not has_named_shardings(exp):
    return (None,) * len(exp.in_avals)
  return tuple(exp._in_named_shardings)


def out_named_shardings(exp: Any) -> tuple[Any, ...]:
  """One named sharding (or None) per output of a record, of any release."""
  if not has_named_shardings(exp):
    return (None,) * len(exp.out_avals)
  return tuple(exp._out_named_shardings)
