"""Parts of jax's messages that changed between releases, as the installed jax words them.

jaxport's messages start with jax's words where jax raises the same error, so
these follow the installed release (keyed on its version: no attribute tells
the wordings apart):

- jax 0.12 moved its export pages: ``export/export.html`` became
  ``501/export.html`` and ``export/shape_poly.html`` became
  ``501/shape-polymorphism.html``;
- jax 0.11.2 added to the custom-call refusal a sentence on the targets the
  ``disabled_checks`` allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

import jax

from jaxport._jaxcompat import _version

_RELEASE = _version.release_tuple(jax.__version__)
_BASE = "https://docs.jax.dev/en/latest/"
_MOVED = _RELEASE >= (0, 12)

EXPORT_PAGE = _BASE + ("501/export.html" if _MOVED else "export/export.html")
SHAPE_POLY_PAGE = _BASE + ("501/shape-polymorphism.html" if _MOVED else "export/shape_poly.html")


def custom_call_disabled_note(allowed_unstable: Iterable[str]) -> str:
  """What jax says, after the examples of a custom-call refusal, of the targets that
  ``disabled_checks`` allowed beyond the stable ones ("" where jax says nothing)."""
  if _RELEASE < (0, 11, 2):
    return ""
  targets = sorted(allowed_unstable)
  if targets:
    return ("The custom call safety check was disabled for the following targets via "
            f"disabled_checks: {', '.join(targets)}.\n")
  return ("The custom call safety check was not disabled for any target. You can disable it "
          "for a target by adding jax.export.DisabledSafetyCheck.custom_call('<target>') to "
          "disabled_checks.\n")
