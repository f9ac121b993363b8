"""The exception hierarchy of jaxport.

Every error jaxport raises on purpose derives from :class:`JaxportError`, and
also from the builtin type a user would naturally catch (``ValueError``,
``TypeError``, ...), so existing ``except ValueError`` code keeps working.
"""

from __future__ import annotations


class JaxportError(Exception):
  """Root of all errors raised deliberately by jaxport."""


class ExportError(JaxportError, ValueError):
  """The function cannot be exported as requested."""


class CustomCallError(ExportError):
  """The module uses custom-call targets without a stability guarantee."""


class CallError(JaxportError, ValueError):
  """An Exported was called with arguments or in a context it does not accept."""


class ShapeError(JaxportError, ValueError):
  """A symbolic shape specification or constraint is malformed or unsatisfiable."""


class ShapeTypeError(ShapeError, TypeError):
  """A value that is neither an int nor a symbolic dimension stands where a dimension is needed."""


class DeserializationError(JaxportError, ValueError):
  """A blob is not a valid serialized Exported."""


class ExpiredEnvelopeError(DeserializationError):
  """The installed jax refuses this envelope as older than its 6-month window; ``jaxport upgrade`` revives it."""


class GoldenDataError(JaxportError, ValueError):
  """A golden entry under compat_data is missing, tampered with or malformed."""


class SerializationError(ExportError):
  """An Exported cannot be serialized (unregistered pytree node, effect, missing VJP)."""


class SerializationTypeError(SerializationError, TypeError):
  """A value of the wrong type stands where serialization needs another (non-string dict key)."""


class ExportTypeError(ExportError, TypeError):
  """An export argument has the wrong type (for example a non-string custom-call target)."""


class ReportError(JaxportError, ValueError):
  """A compatibility report (the harness's JSON) is unreadable, malformed or does not fit with others."""


class JaxVersionError(JaxportError, ImportError):
  """The installed jax is older than the releases jaxport supports."""


class UntestedJaxWarning(UserWarning):
  """The installed jax is newer than the newest release jaxport is tested with."""


class UpgradeError(JaxportError, ValueError):
  """A removed custom call cannot be rewritten into today's target (a precondition fails)."""


class ReleaseTableError(JaxportError, ValueError):
  """A jax release is not in the release table, or the table file is malformed."""


class ModuleParserError(JaxportError, RuntimeError):
  """The child process that parses an artifact's StableHLO module for a ``jaxport`` command
  did not answer: it crashed, hung, grew past its memory limit or could not start."""


class ModuleCrashError(ModuleParserError):
  """Parsing an artifact's module killed the parser child with a signal (SIGSEGV, SIGABRT)."""


class ModuleTimeoutError(ModuleParserError):
  """Parsing an artifact's module did not finish within the per-artifact time limit."""


class ModuleMemoryError(ModuleParserError):
  """Parsing an artifact's module grew the parser child past its memory limit."""
