"""SyncLitePullConsumer (blocking facade) against a real cluster."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import ConsumeFromWhere, Message, SyncAdmin, SyncProducer
from rocketpipe.client.consumer.lite_pull_sync import SyncLitePullConsumer
from rocketpipe.testing.cluster import LocalCluster, local_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(tmp_path / "store", mapped_file_size_commit_log=8 * 1024 * 1024) as c:
        yield c


async def test_sync_lite_pull_consumer_assign_poll_seek_commit(cluster: LocalCluster) -> None:
    consumer = pickle.loads(
        pickle.dumps(
            SyncLitePullConsumer(
                "lp-sync",
                cluster.namesrv_addr,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                poll_timeout=0.2,
            )
        )
    )

    def work() -> tuple[list[int], list[int], int]:
        admin = SyncAdmin(cluster.namesrv_addr)
        admin.create_topic("LpSync", 1)
        [mq] = admin.topic_queues("LpSync")
        admin.close()
        producer = SyncProducer("lp-sync-pg", cluster.namesrv_addr)
        for i in range(7):
            producer.send(Message.build("LpSync", f"s{i}"))
        producer.close()
        consumer.assign([mq])
        offsets: list[int] = []
        with consumer:
            assert consumer.assignment() == [mq]
            for m in consumer:
                offsets.append(m.queue_offset)
                if len(offsets) == 7:
                    break
            consumer.seek(mq, 5)
            again: list[int] = []
            while len(again) < 2:
                again += [m.queue_offset for m in consumer.poll(0.5)]
            consumer.commit(persist=True)
            committed = consumer.committed(mq)
        assert list(consumer) == []  # closed: iteration ends
        return offsets, again, committed

    offsets, again, committed = await asyncio.wait_for(asyncio.to_thread(work), 60)
    assert offsets == list(range(7))
    assert again == [5, 6]
    assert committed == 7
