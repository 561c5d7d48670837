"""Wall-clock seam (L0, stdlib only).

Wall time (born/store timestamps, delay due times, expiry scans) goes through a
:class:`Clock` so tests can drive it; deadlines use the event loop's clock instead.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Source of wall-clock time."""

    def now_ms(self) -> int:
        """Return milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The real wall clock (``time.time()``)."""

    def now_ms(self) -> int:
        """Return milliseconds since the Unix epoch."""
        return int(time.time() * 1000)


SYSTEM_CLOCK = SystemClock()
