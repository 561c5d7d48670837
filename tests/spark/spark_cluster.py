"""An embedded name server + broker running on a private event-loop thread, for Spark tests.

Spark executors are other processes, so the cluster listens on real TCP (127.0.0.1, free
ports); the test process keeps it on a daemon thread for the duration of a module.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

from rocketpipe.testing.cluster import LocalCluster, local_cluster

T = TypeVar("T")


class ThreadedCluster:
    """``local_cluster`` on a background loop; ``start()``/``close()`` block until done."""

    def __init__(self, store_dir: Path, **broker_overrides: Any) -> None:
        self._store_dir = store_dir
        self._overrides = broker_overrides
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="spark-test-cluster", daemon=True)
        self._stop: asyncio.Event | None = None
        self._done: Any = None
        self.cluster: LocalCluster | None = None

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` on the cluster's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> LocalCluster:
        self._thread.start()
        ready: asyncio.Future[LocalCluster] | None = None

        async def serve() -> None:
            nonlocal ready
            self._stop = asyncio.Event()
            async with local_cluster(self._store_dir, **self._overrides) as c:
                assert ready is not None
                ready.set_result(c)
                await self._stop.wait()

        async def launch() -> LocalCluster:
            nonlocal ready
            ready = self._loop.create_future()
            self._done = asyncio.ensure_future(serve())
            done, _ = await asyncio.wait({ready, self._done}, return_when=asyncio.FIRST_COMPLETED)
            if ready in done:
                return ready.result()
            self._done.result()  # raises the start-up error
            raise RuntimeError("cluster stopped during start-up")

        self.cluster = self.run(launch())
        return self.cluster

    def close(self) -> None:
        async def stop() -> None:
            assert self._stop is not None
            self._stop.set()
            await self._done

        try:
            if self._stop is not None:
                self.run(stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()


@contextlib.contextmanager
def started(store_dir: Path, **broker_overrides: Any) -> Iterator[ThreadedCluster]:
    """A started :class:`ThreadedCluster` under ``store_dir``, closed on exit."""
    tc = ThreadedCluster(store_dir, **broker_overrides)
    tc.start()
    try:
        yield tc
    finally:
        tc.close()
