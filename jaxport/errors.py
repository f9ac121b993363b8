"""The exception and warning hierarchies of jaxport.

Every error jaxport raises on purpose derives from :class:`JaxportError`, and
also from the builtin type a user would naturally catch (``ValueError``,
``TypeError``, ...), so existing ``except ValueError`` code keeps working. Every
warning it issues derives from :class:`JaxportWarning` (a ``UserWarning``), so one
filter silences or escalates them all.
"""

from __future__ import annotations


class JaxportError(Exception):
  """Root of all errors raised deliberately by jaxport."""


class JaxportWarning(UserWarning):
  """Root of all warnings jaxport issues."""


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


class UnregisteredTypeError(DeserializationError):
  """A valid blob names a pytree type the reading process has no serialization registration
  for, or an effect type it does not know (a project's own type, registered when its code is
  imported)."""


class ExpiredEnvelopeError(DeserializationError):
  """The installed jax refuses this envelope as older than its 6-month window; ``jaxport upgrade`` revives it."""


class ExpiredEnvelopeWarning(JaxportWarning, DeprecationWarning):
  """An expired envelope was read because jax's flag allows expired versions; jax warns the same
  way, with a ``DeprecationWarning``."""


class GoldenDataError(JaxportError, ValueError):
  """A golden entry under compat_data is missing, tampered with or malformed."""


class CheckerError(JaxportError, ValueError):
  """A case's checker raised, or rejects the outputs its case just recorded: nothing is
  recorded."""


class SerializationError(ExportError):
  """An Exported cannot be serialized (unregistered pytree node, effect, missing VJP)."""


class SerializationTypeError(SerializationError, TypeError):
  """A value of the wrong type stands where serialization needs another (non-string dict key)."""


class UnregisteredNodeError(SerializationError):
  """The arguments or results of an Exported hold a pytree node type with no serialization
  registration, which ``jax.export`` refuses too (so jax's reader could not read the blob).

  ``node_type`` is the type, ``part`` says where it is (``"arguments"`` or ``"results"``)
  and ``fix`` is the sentence naming what to do, for callers that word the refusal their way.
  """

  def __init__(self, message: str, *, node_type: type | None = None, part: str = "",
               fix: str = ""):
    super().__init__(message)
    self.node_type, self.part, self.fix = node_type, part, fix

  def __reduce__(self):  # pickled with its fields, which are keyword-only
    return type(self), self.args, self.__dict__


class ExportTypeError(ExportError, TypeError):
  """An export argument has the wrong type (for example a non-string custom-call target)."""


class ReportError(JaxportError, ValueError):
  """A compatibility report (the harness's JSON) is unreadable, malformed or does not fit with others."""


class JaxVersionError(JaxportError, ImportError):
  """The installed jax is older than the releases jaxport supports, or changed an internal
  jaxport depends on."""


class UntestedJaxWarning(JaxportWarning):
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


class WorkerAnswerError(JaxportError, ValueError):
  """An answer of the harness's worker process is not a record the session knows: a key is
  missing, unknown or of the wrong type. The entry gets an error verdict, never a pass."""


class SettingsError(JaxportError, ValueError):
  """A harness setting (a ``--compat-*`` option or a preset) has a value the harness cannot use,
  or contradicts another; the message names the option and the fix."""


class JsonError(JaxportError, ValueError):
  """What is wrong with a JSON text, without where it came from (the caller adds that or
  re-raises it as the error of the file it read)."""


class ExpectedStatusError(JaxportError, ValueError):
  """A project's expectations table (``jaxport_expectations``) is unreadable or malformed."""


class RuleTableError(JaxportError, ValueError):
  """The upgrade rules shipped with jaxport are malformed (a bug in the package, caught by
  its tests)."""


class CorpusImportError(JaxportError, RuntimeError):
  """jax's own back-compat corpus could not be imported for a ``--compat-jax-corpus`` run."""


class ShardError(JaxportError, ValueError):
  """A shard specification (``--compat-shard``) or a costs file the harness cannot use."""


class PrivatePathError(JaxportError, ValueError):
  """A folder or lock file jaxport keeps for itself (the private cache, a build lock) is a
  symbolic link or not a regular file: jaxport neither follows it nor writes through it."""


class RecordingError(JaxportError, ValueError):
  """A case's new entry would not replay: a reader cannot read or call it. Nothing is
  written; the message names the case, the reader and its error."""


class HarnessWarning(JaxportWarning):
  """A harness finding that fails only with ``--compat-strict``: drift, staleness, expiry."""
