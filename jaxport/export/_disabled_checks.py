"""Descriptors of safety checks that a user chose to turn off."""

from __future__ import annotations

from jaxport.errors import ExportTypeError

_CUSTOM_CALL_PREFIX = "custom_call:"
_PLATFORM = "platform"


class DisabledSafetyCheck:
  """A safety check to skip: ``platform()`` at call time, ``custom_call(t)`` at export.

  The wire form is the plain string ``"platform"`` or ``"custom_call:<target>"``;
  ``custom_call("ALL")`` disables the custom-call check entirely.
  """

  __slots__ = ("_impl",)

  def __init__(self, _impl: str):
    self._impl = _impl

  @classmethod
  def platform(cls) -> "DisabledSafetyCheck":
    """Allow calling on a platform the function was not exported for."""
    return cls(_PLATFORM)

  @classmethod
  def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
    """Allow exporting a custom call to ``target_name`` (``"ALL"``: any target)."""
    if not isinstance(target_name, str) or not target_name:
      raise ExportTypeError(
          "DisabledSafetyCheck.custom_call takes the custom-call target name as a non-empty "
          f"string, e.g. DisabledSafetyCheck.custom_call(\"lapack_sgeqrf_ffi\"); got {target_name!r}.")
    return cls(_CUSTOM_CALL_PREFIX + target_name)

  def is_custom_call(self) -> str | None:
    """The target this descriptor allows, or None if it is not a custom-call one."""
    if self._impl.startswith(_CUSTOM_CALL_PREFIX) and len(self._impl) > len(_CUSTOM_CALL_PREFIX):
      return self._impl[len(_CUSTOM_CALL_PREFIX):]
    return None

  def is_platform(self) -> bool:
    return self._impl == _PLATFORM

  def __str__(self) -> str:
    return self._impl

  __repr__ = __str__

  def __eq__(self, other) -> bool:
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self) -> int:
    return hash(self._impl)
