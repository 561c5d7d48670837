"""A fake wall clock for tests (L4): :class:`FakeClock`.

Drives every wall-time decision that goes through :class:`rocketpipe.clock.Clock` (store and
born timestamps, delay due times, channel expiry). Deadlines on the event loop's clock are not
affected.
"""

from __future__ import annotations


class FakeClock:
    """A :class:`~rocketpipe.clock.Clock` that only moves when told to.

    Args:
        start_ms: initial time, ms since the epoch.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        """Return the current fake time, ms since the epoch."""
        return self._now

    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds`` (may be fractional); return the new time in ms.

        Raises:
            ValueError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError("a FakeClock only moves forward")
        self._now += round(seconds * 1000)
        return self._now

    def set(self, now_ms: int) -> None:
        """Jump to ``now_ms`` (may go backwards, to test clock-jump guards)."""
        self._now = now_ms
