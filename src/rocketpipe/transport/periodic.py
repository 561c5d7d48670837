"""The periodic loop shared by broker and client background tasks (L2, asyncio only).

:func:`periodic` is the ``scheduleAtFixedRate`` replacement: a loop on loop time with an
optional :class:`asyncio.Event` wake-up that logs and survives per-iteration errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["periodic"]

log = logging.getLogger(__name__)


async def periodic(
    name: str,
    interval: float,
    fn: Callable[[], Awaitable[object]],
    *,
    initial_delay: float = 0.0,
    wake: asyncio.Event | None = None,
    logger: logging.Logger | None = None,
) -> None:
    """Call ``fn`` every ``interval`` seconds (first after ``initial_delay``) until cancelled.

    ``wake.set()`` runs ``fn`` at once. Exceptions of ``fn`` are logged (on ``logger``, by
    default this module's) and the loop goes on.
    """
    delay = initial_delay
    while True:
        if wake is None:
            await asyncio.sleep(delay)
        else:
            try:
                async with asyncio.timeout(delay):
                    await wake.wait()
            except TimeoutError:
                pass
            wake.clear()
        try:
            await fn()
        except asyncio.CancelledError:
            raise
        except Exception:
            (logger or log).exception("periodic task %s failed", name)
        delay = interval
