"""An asyncio event loop in a daemon thread, for commands that also block (the demo) (L4, cli).

The demo's broker, name server, producer and push consumer live on this loop while the main
thread drives Spark (which blocks). Coroutines are handed over with :meth:`LoopThread.run` or
:meth:`LoopThread.submit`; nothing else crosses threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..eventloop import new_event_loop

T = TypeVar("T")


class LoopThread:
    """Own an event loop running in a daemon thread.

    Use as a context manager: the loop starts on enter and is stopped (after cancelling what
    is left) on exit.
    """

    def __init__(self, name: str = "rocketpipe-loop") -> None:
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (call into it only with the thread-safe methods)."""
        return self._loop

    def __enter__(self) -> LoopThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop and return a future for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result.

        Args:
            coro: the coroutine.
            timeout: seconds to wait; None waits forever.

        Raises:
            TimeoutError: the coroutine did not finish in time (it is cancelled).
            Exception: whatever the coroutine raised.
        """
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError(f"timed out after {timeout} s") from None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the loop (pending tasks are cancelled) and join the thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
