"""SYNC_FLUSH group commit (L3): one fsync in a worker thread covers every pending send.

Mirrors ``CommitLog.GroupCommitService``: a send that needs durability registers the
commit-log position it must see flushed (``wrote_offset + wrote_bytes``) and waits; the
:meth:`GroupCommit.run` loop swaps the pending list, runs one commit-log-only flush
(``store.flush(consume_queues=False)``; consume queues and the checkpoint are the periodic
flush loop's job, as with ``FlushConsumeQueueService``) in a worker thread, and completes
every waiter the flushed position covers. Sends arriving during a flush wait for the next one. A waiter not satisfied within ``timeout_s`` gets False (the broker
answers FLUSH_DISK_TIMEOUT; the message is stored either way).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class GroupCommit:
    """Batches durability waits into shared flushes.

    Args:
        flush: blocking commit-log flush, e.g. ``functools.partial(store.flush, consume_queues=False)``;
            returns the flushed commit-log offset in bytes.
        timeout_s: how long one waiter waits, seconds (``syncFlushTimeout`` = 5 s).
    """

    def __init__(self, flush: Callable[[], int], timeout_s: float) -> None:
        self._flush = flush
        self._timeout_s = timeout_s
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self.flushed_offset = 0
        self.flush_count = 0

    async def wait_flushed(self, target: int) -> bool:
        """Wait until the commit log is flushed up to ``target`` bytes.

        Returns:
            True when flushed in time, False on timeout.
        """
        if target <= self.flushed_offset:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, fut))
        self._wake.set()
        try:
            async with asyncio.timeout(self._timeout_s):
                await asyncio.shield(fut)
            return True
        except TimeoutError:
            log.warning("sync flush timed out target=%d flushed=%d", target, self.flushed_offset)
            return False

    async def run(self) -> None:
        """Serve waiters until cancelled (one flush per wake-up)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            waiters, self._waiters = self._waiters, []
            if not waiters:
                continue
            try:
                flushed = await asyncio.to_thread(self._flush)
                self.flush_count += 1
                self.flushed_offset = max(self.flushed_offset, flushed)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("group commit flush failed")
                await asyncio.sleep(0.01)
            for target, fut in waiters:
                if fut.done():
                    continue
                if target <= self.flushed_offset:
                    fut.set_result(None)
                else:
                    self._waiters.append((target, fut))
            if self._waiters:
                self._wake.set()

    def release_all(self) -> None:
        """Complete every waiter (after the store's final flush on close)."""
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_result(None)
