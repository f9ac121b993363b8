"""jax release dates and the compat window, as the harness has always imported them.

The dates and windows live in :mod:`jaxport.releases` (one release table for
the whole package); this module keeps the harness's and tools' imports working.
"""

from __future__ import annotations

from jaxport.releases._dates import (BACKWARD_WINDOW_DAYS, FORWARD_WINDOW_DAYS, RELEASE_DATES,
                                     WindowPosition, parse_version, release_date, window_position)

__all__ = ["BACKWARD_WINDOW_DAYS", "FORWARD_WINDOW_DAYS", "RELEASE_DATES", "WindowPosition",
           "parse_version", "release_date", "window_position"]
