"""Rate-limited log lines (L0, stdlib only).

A peer that misbehaves thousands of times a second must not write thousands of log lines: a
:class:`RateLimitedLog` writes at most one line per *cause* per interval and, on the next line of
that cause, says how many events the silence stood for. Used by the transport (bad frames,
unsolicited responses, limits) and the store (damaged records, disk full).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """At most one line per cause per ``interval_s``, with the count of suppressed events.

    Args:
        logger: where the lines go.
        interval_s: seconds between two lines of one cause (> 0).
        monotonic: seconds clock (injected by tests).

    Thread-safe: the store calls it from its flush thread, the transport from the loop.
    """

    def __init__(
        self, logger: logging.Logger, interval_s: float = 60.0, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._state: dict[str, tuple[float, int]] = {}  # cause -> (last line time, suppressed count)
        #: events seen per cause (written or suppressed) since construction
        self.counts: dict[str, int] = {}

    def log(self, level: int, cause: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at ``level`` unless ``cause`` was logged within the interval.

        Returns:
            True when a line was written.
        """
        now = self._monotonic()
        with self._lock:
            self.counts[cause] = self.counts.get(cause, 0) + 1
            last, suppressed = self._state.get(cause, (-float("inf"), 0))
            if now - last < self._interval_s:
                self._state[cause] = (last, suppressed + 1)
                return False
            self._state[cause] = (now, 0)
        if suppressed:
            msg = f"{msg} (+%d more of cause={cause} in the last %.0fs)"
            args = (*args, suppressed, now - last)
        self._logger.log(level, msg, *args)
        return True

    def warning(self, cause: str, msg: str, *args: object) -> bool:
        """:meth:`log` at WARNING."""
        return self.log(logging.WARNING, cause, msg, *args)

    def error(self, cause: str, msg: str, *args: object) -> bool:
        """:meth:`log` at ERROR."""
        return self.log(logging.ERROR, cause, msg, *args)
