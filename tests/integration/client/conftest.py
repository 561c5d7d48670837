"""Fixtures of the client integration tests: a real name server + broker on 127.0.0.1:0."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from rocketpipe import Admin, PushConsumer
from rocketpipe.testing.cluster import LocalCluster, local_cluster

#: One-second delay levels, so that retries come back quickly.
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)

CaughtUp = Callable[..., Awaitable[bool]]


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", message_delay_level=FAST_DELAY_LEVELS) as c:
        yield c


@pytest.fixture
async def caught_up(cluster: LocalCluster) -> AsyncIterator[CaughtUp]:
    """``await caught_up(consumer, *topics)``: every non-empty queue's consume offset reached its max.

    A condition for :func:`waiting.wait_until` that says "everything stored so far was
    consumed (or filtered) and acknowledged".
    """
    admin = Admin(cluster.namesrv_addr)

    async def check(consumer: PushConsumer, *topics: str) -> bool:
        offsets = consumer.committed_offsets()
        for topic in topics:
            for mq in await admin.topic_queues(topic):
                mx = await admin.max_offset(mq)
                if mx > 0 and offsets.get(mq, -1) < mx:
                    return False
        return True

    yield check
    await admin.close()
