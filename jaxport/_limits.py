"""Resource limits on untrusted input: one place, each with the reason for its value.

Blobs, golden stores, npz files and jax test-data files may come from anyone
(see ``docs/security.md``). Each limit below bounds the time or memory one
input can cost, and sits far above what legitimate data needs. A refusal names
the limit by the constant's name (``jaxport._limits.MAX_DIM_EXPONENT``), so a
reader of the message can find its value and reason here.

Nesting depths are also bounded by Python's recursion limit: the recursive
readers run inside :func:`recursion_room`, which raises that limit for the
duration of one call so that every depth allowed here is reachable (Python
calls between Python functions do not use the C stack, so this is safe).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

# --- symbolic shape specs (jaxport.shapes._parser, DimExpr.__pow__) ----------

# Largest exponent in ``a^N`` or ``d ** N``. Any exponent past 63 overflows a
# 64-bit dimension size for every base > 1; powers are computed by repeated
# multiplication, so an unbounded exponent is an unbounded loop.
MAX_DIM_EXPONENT = 64
# Longest shape spec parsed, in characters. Real specs are tens of characters;
# a blob stores one spec per dimension.
MAX_SPEC_CHARS = 100_000
# Deepest nesting of parentheses and operations (``max(min(mod(...)))``) in one
# spec. The parser is recursive; real specs nest two or three levels.
MAX_SPEC_NESTING = 64

# --- symbolic shape work (jaxport.shapes._decision, _expr, _parser) -----------
# Work is counted, never timed, so the same input gets the same answer on every
# machine. A unit is about a microsecond of Python (see docs/security.md).

# Most units of work one decision may do: building a scope's facts from its
# explicit constraints, or one comparison (or max/min simplification) from them.
# Units are facts recorded and terms merged while combining facts or eliminating
# a term. 60 chained equalities ``a0 == a1 + 1, a1 == a2 + 1, ...`` (which jax
# accepts) take about 800,000; the work grows as the cube of such a chain (100
# take 4.3 million). Comparing a sum of 1,000 variables (jax's own recursion
# stops near there) takes 500,000, and the costliest comparison met fuzzing two
# constraints against jax (jax: 3 s) 1.5 million.
MAX_DECISION_STEPS = 3_000_000
# Deepest chain of eliminations in one bounds computation: each step removes the
# largest term, so a sum of n terms goes n deep. jax's recursive procedure stops
# near 1,000 (Python's default recursion limit); the stack is raised to fit this.
MAX_DECISION_DEPTH = 2_000
# Most units of work all the shape specs parsed in one scope may do together
# (the decisions that simplify max and min, the sums and products of terms
# formed): a blob's dimensions are parsed in one scope, so this bounds a whole
# blob. 30 dimensions each nested 60 max(...) deep over 5 variables take 400,000;
# max nested 40 deep over 40 distinct variables 1.1 million, and 60 deep (jax
# takes minutes to build one) past this.
MAX_SPEC_WORK = 3_000_000
# Most products of terms one multiplication of dimensions may form (terms of one
# side times terms of the other). Real dimensions have a few terms; a product of
# two sums of 1,000 terms would form a million, and each further factor multiplies.
MAX_PRODUCT_TERMS = 100_000

# --- serialized Exported (jaxport.serde) --------------------------------------

# Deepest nesting of flatbuffer tables in a blob. A pytree of depth d nests
# d + 1 tables under the root, and each nested VJP one more. jax 0.10.2 reads
# pytrees up to about 490 levels deep (its recursive reader stops at Python's
# default recursion limit of 1000); this limit is about twice that, so every
# blob jax reads is read here, and only deeper ones are refused.
MAX_TABLE_DEPTH = 1024
# Largest blob: flatbuffers offsets are 32-bit signed.
MAX_BLOB_BYTES = 2**31 - 1
# At most one table per four bytes of blob (the smallest table is a 4-byte
# vtable offset), so shared or overlapping tables cannot make the walk
# visit more tables than the buffer could hold.
TABLES_PER_BYTE = 1 / 4

# --- golden stores (jaxport.golden) -------------------------------------------

# Largest array one npz member may hold, checked against the manifest's shape
# and against the member's declared size before anything is decompressed.
# Golden inputs and outputs are kilobytes.
MAX_ARRAY_BYTES = 256 * 2**20
# Largest ``.npy`` header in an npz member (numpy's own reader allows 10,000).
MAX_NPY_HEADER_BYTES = 64 * 2**10
# Largest manifest.json or shardings.json; real ones are a few kilobytes.
MAX_JSON_BYTES = 16 * 2**20
# Deepest nesting of JSON objects and arrays in a manifest or shardings.json;
# real ones nest four levels. Python's JSON parser is recursive.
MAX_JSON_NESTING = 64
# Largest compatibility report read back (render, merge): about 2 KB an entry, so a
# 10,000-entry store's report is some 20 MB.
MAX_REPORT_BYTES = 1 * 2**30

# --- harness (jaxport.harness._controller._shard, jaxport.harness._worker) -------

# Most shards in ``--compat-shard=I/N``. A CI matrix has tens of jobs; a store
# has at most thousands of cases, so past this every further shard is empty.
MAX_SHARDS = 10_000
# Largest resident memory (RSS) of one worker process while it answers a request
# (``jaxport.harness._worker``), polled about five times a second on Linux; past it
# the worker is killed and the entry fails with this limit named. A golden entry
# needs well under a gigabyte; 8 GiB lets two workers (one per device count) fit
# in a 24 GB machine. RSS is polled rather than bounded with RLIMIT_AS because
# XLA reserves far more address space than it touches. ``--compat-worker-memory-mb``
# sets another value for a run.
MAX_WORKER_RSS_BYTES = 8 * 2**30
# The same limit for a worker that opened a TPU chip: libtpu keeps about 9 GiB of host memory
# resident from the moment the chip opens (9,185 MiB measured on a v5e host before the first
# entry), so the limit counts on top of that.
TPU_RUNTIME_RSS_BYTES = 12 * 2**30

# --- the command line's module parser (jaxport.cli._parser) -----------------------

# Seconds the module parser child of one ``jaxport`` command (inspect, audit, upgrade,
# import-jax-testdata) may spend on one artifact's module: parsing it, listing its custom
# calls, printing it, rewriting it. Real modules take milliseconds to a second (a module
# of some megabytes); a module built to make jaxlib's bytecode reader loop never ends.
# Past it the child is killed, the artifact gets a ``ModuleTimeoutError`` verdict, and
# the next artifact starts a fresh child. ``--parse-timeout`` sets another value.
MODULE_PARSE_TIMEOUT_S = 60.0
# Largest resident memory (RSS) of that child while it works on one artifact, polled as
# the harness polls its worker's (``MAX_WORKER_RSS_BYTES``). The child needs about 160 MiB
# once jax is imported, and a module parses into a few times its size, so a 2 GiB blob
# (``MAX_BLOB_BYTES``) still fits; bytes that make the reader allocate without end do not.
# ``--parse-memory-mb`` sets another value.
MAX_PARSER_RSS_BYTES = 8 * 2**30
# Seconds the child may take to start (import jax and jaxport) before its first answer.
# It starts in about two seconds; a loaded CI machine can take twenty times that.
PARSER_START_TIMEOUT_S = 300.0

# --- jax test-data files (jaxport.corpus._jax_testdata) ---------------------------

# Deepest nesting of literals (lists, tuples, dicts, unary signs) evaluated in
# one jax test-data file; real files nest arrays by rank (under ten levels).
MAX_LITERAL_NESTING = 100
# Largest ``nr_devices`` a dataset may state: the blob's field is a uint32.
# Real datasets state 1 to 8.
MAX_NR_DEVICES = 2**32 - 1
# Largest ``testdata_version`` or ``xla_call_module_version`` a dataset may
# state: the blob's calling_convention_version is a uint16. Real files state
# 1 and 4 to 10.
MAX_FORMAT_VERSION = 2**16 - 1

# --- errors kept in reports (jaxport.harness._worker._error_text) ---------------

# Most lines and characters of a reader's or a recording's error the report and the
# page keep. jax's verifier lists each failing operation in a few lines; 60 lines and
# 12,000 characters keep a dozen of them, while a module printed whole in an error
# cannot grow every entry of a report by megabytes.
MAX_ERROR_LINES = 60
MAX_ERROR_CHARS = 12_000

# --- recursion --------------------------------------------------------------------

# Python frames each nesting level of a recursive reader may use (a function
# its list comprehension and a helper in Python 3.11), plus room for the caller.
_FRAMES_PER_LEVEL = 4
_FRAME_MARGIN = 500


def name(limit: str) -> str:
  """How a refusal names a limit: ``jaxport._limits.NAME = value``."""
  return f"jaxport._limits.{limit} = {globals()[limit]}"


@contextlib.contextmanager
def recursion_room(levels: int) -> Iterator[None]:
  """Lets the current thread recurse ``levels`` nesting levels deeper than it is now.

  Raises Python's recursion limit while the block runs, and lowers it back
  after, unless something else changed it meanwhile.
  """
  old = sys.getrecursionlimit()
  needed = _stack_depth() + levels * _FRAMES_PER_LEVEL + _FRAME_MARGIN
  if needed <= old:
    yield
    return
  sys.setrecursionlimit(needed)
  try:
    yield
  finally:
    if sys.getrecursionlimit() == needed:
      sys.setrecursionlimit(old)


def _stack_depth() -> int:
  depth = 0
  frame = sys._getframe()
  while frame is not None:
    depth += 1
    frame = frame.f_back
  return depth
