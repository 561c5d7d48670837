"""Blocking facades (SyncProducer, SyncAdmin) against a real cluster."""

from __future__ import annotations

import asyncio
import pickle

from rocketpipe import Message, PullStatus, SendStatus, SyncAdmin, SyncProducer
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import LocalCluster


async def test_sync_producer_and_admin(cluster: LocalCluster) -> None:
    admin = pickle.loads(pickle.dumps(SyncAdmin(cluster.namesrv_addr)))  # as the Spark reader travels
    producer = SyncProducer("pg-sync", cluster.namesrv_addr)

    def work() -> tuple[list[int], list[bytes]]:
        admin.create_topic("SyncT", 2)
        results = [producer.send(Message.build("SyncT", f"s{i}")) for i in range(6)]
        assert all(r.send_status is SendStatus.SEND_OK for r in results)
        batch = producer.send_batch([Message.build("SyncT", b"b1"), Message.build("SyncT", b"b2")])
        assert len(batch.msg_id.split(",")) == 2
        queues = admin.topic_queues("SyncT")
        maxes = [admin.max_offset(q) for q in queues]
        bodies: list[bytes] = []
        for q in queues:
            raw = admin.pull_raw(q, 0, 32)
            assert raw.status is PullStatus.FOUND
            bodies += [m.body for m in decode_records(raw.body)]
        producer.close()
        admin.close()
        return maxes, bodies

    maxes, bodies = await asyncio.to_thread(work)
    assert sum(maxes) == 8
    assert sorted(bodies) == sorted([f"s{i}".encode() for i in range(6)] + [b"b1", b"b2"])
