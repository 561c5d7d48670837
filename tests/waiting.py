"""Shared test helpers: condition waits with timeouts (never sleeps as synchronisation)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> None:
    """Poll ``predicate`` (sync or async) until it is true; fail the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result  # type: ignore[misc]
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def wait_until_sync(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02, what: str = "condition"
) -> None:
    """Blocking variant of :func:`wait_until` for sync code (Spark, sync facades)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
