"""SYNC_FLUSH group commit: one flush serves many waiters; a stuck flush times out."""

from __future__ import annotations

import asyncio
import threading

from rocketpipe.broker.flush import GroupCommit


async def test_broker_group_commit_one_flush_covers_all_pending_waiters() -> None:
    calls: list[int] = []
    position = 1000

    def flush() -> int:
        calls.append(position)
        return position

    gc = GroupCommit(flush, timeout_s=5.0)
    runner = asyncio.create_task(gc.run())
    try:
        results = await asyncio.gather(*(gc.wait_flushed(t) for t in (100, 500, 1000)))
        assert results == [True, True, True]
        assert len(calls) == 1 and gc.flushed_offset == 1000
        assert await gc.wait_flushed(900)  # already covered: no new flush
        assert len(calls) == 1
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_broker_group_commit_times_out_when_the_flush_does_not_finish() -> None:
    release = threading.Event()

    def slow_flush() -> int:
        release.wait(10)
        return 10

    gc = GroupCommit(slow_flush, timeout_s=0.05)
    runner = asyncio.create_task(gc.run())
    try:
        assert await gc.wait_flushed(10) is False
    finally:
        release.set()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_broker_group_commit_retries_waiters_beyond_the_flushed_position() -> None:
    positions = iter([50, 200])
    gc = GroupCommit(lambda: next(positions), timeout_s=5.0)
    runner = asyncio.create_task(gc.run())
    try:
        assert await gc.wait_flushed(150)
        assert gc.flush_count == 2
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
