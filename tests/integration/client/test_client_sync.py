"""Blocking facades (SyncProducer, SyncAdmin) against a real cluster."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

from rocketpipe import Message, PullStatus, SendStatus, SyncAdmin, SyncProducer, TraceType, TraceView
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import LocalCluster, local_cluster


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


async def test_sync_admin_query_trace_reads_a_sync_producers_pub(tmp_path: Path) -> None:
    async with local_cluster(tmp_path / "store", trace_topic_enable=True) as c:

        def work() -> list[TraceView]:
            with SyncProducer("pg-sync-trace", c.namesrv_addr, enable_msg_trace=True) as producer:
                sent = producer.send(Message.build("SyncTraced", b"x", tags="t", keys="k"))
            with SyncAdmin(c.namesrv_addr) as admin:  # the producer flushed its traces on close
                return [v for v in admin.query_trace(sent.msg_id) if v.msg_id == sent.msg_id]

        views = await asyncio.to_thread(work)
    assert [(v.trace_type, v.group_name, v.tags, v.keys) for v in views] == [(TraceType.Pub, "pg-sync-trace", "t", "k")]
