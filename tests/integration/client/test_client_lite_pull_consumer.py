"""LitePullConsumer over real TCP against local_cluster: assign/subscribe, poll, seek, pause, commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketpipe import Admin, ClientConfig, ConsumeFromWhere, Message, MessageExt, MessageQueue, Producer
from rocketpipe.client import rpc
from rocketpipe.client.consumer.lite_pull import LitePullConsumer
from rocketpipe.errors import BrokerError, InvalidArgumentError
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from waiting import wait_until

FAST_DELAY_LEVELS = " ".join(["1s"] * 18)
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with local_cluster(
        tmp_path / "store", mapped_file_size_commit_log=8 * 1024 * 1024, message_delay_level=FAST_DELAY_LEVELS
    ) as c:
        yield c


async def make_topic(c: LocalCluster, topic: str, queues: int) -> list[MessageQueue]:
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(topic, queues)
        return await admin.topic_queues(topic)


async def send(
    c: LocalCluster, topic: str, n: int, *, tags: str | None = None, start: int = 0
) -> dict[MessageQueue, list[bytes]]:
    """Send ``n`` messages; return queue → bodies in offset order."""
    by_queue: dict[MessageQueue, list[bytes]] = {}
    async with Producer("lite-pg", namesrv_addr=c.namesrv_addr) as p:
        for i in range(start, start + n):
            body = f"m-{i}".encode()
            r = await p.send(Message.build(topic, body, tags=tags))
            by_queue.setdefault(r.message_queue, []).append(body)
    return by_queue


async def poll_until(consumer: LitePullConsumer, got: list[MessageExt], n: int, timeout: float = 20.0) -> None:
    async def enough() -> bool:
        got.extend(await consumer.poll(0.2))
        return len(got) >= n

    await wait_until(enough, timeout=timeout, what=f"{n} messages")


async def broker_offset(c: LocalCluster, group: str, mq: MessageQueue) -> int:
    """The group's offset as stored on the broker (-1 when none)."""
    async with Admin(c.namesrv_addr) as admin:
        try:
            return await rpc.query_consumer_offset(admin.runtime.pool, c.broker_addr, group, mq, 3.0)
        except BrokerError:
            return -1


async def test_assign_polls_every_message_in_order_per_queue(cluster: LocalCluster) -> None:
    queues = await make_topic(cluster, "LpOrder", 4)
    sent = await send(cluster, "LpOrder", 60)
    assert len(sent) == 4
    got: list[MessageExt] = []
    async with LitePullConsumer("lp-order", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c:
        c.assign(queues)
        await poll_until(c, got, 60)
        assert await c.poll(0.3) == []  # nothing more, and nothing twice
        assert c.assignment() == queues
    assert len(got) == 60
    for q in queues:
        mine = [m for m in got if m.message_queue == q]
        assert [m.queue_offset for m in mine] == list(range(len(sent[q])))
        assert [m.body for m in mine] == sent[q]
        assert all(m.topic == "LpOrder" and m.broker_name == q.broker_name for m in mine)


async def test_poll_batches_respect_pull_batch_size(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpBatch", 1)
    await send(cluster, "LpBatch", 25)
    async with LitePullConsumer(
        "lp-batch", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST, pull_batch_size=4
    ) as c:
        c.assign([mq])
        got: list[MessageExt] = []
        sizes: list[int] = []

        async def enough() -> bool:
            batch = await c.poll(0.2)
            if batch:
                sizes.append(len(batch))
            got.extend(batch)
            return len(got) >= 25

        await wait_until(enough, timeout=20, what="25 messages")
    assert max(sizes) <= 4
    assert [m.queue_offset for m in got] == list(range(25))


async def test_seek_variants_and_offset_for_timestamp(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpSeek", 1)
    await send(cluster, "LpSeek", 10)
    async with LitePullConsumer("lp-seek", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c:
        c.assign([mq])
        first: list[MessageExt] = []
        await poll_until(c, first, 10)
        assert [m.queue_offset for m in first] == list(range(10))

        await c.seek(mq, 6)
        again: list[MessageExt] = []
        await poll_until(c, again, 4)
        assert [m.queue_offset for m in again] == [6, 7, 8, 9]

        await c.seek_to_begin(mq)
        from_begin: list[MessageExt] = []
        await poll_until(c, from_begin, 10)
        assert [m.queue_offset for m in from_begin] == list(range(10))
        await c.commit()
        assert await c.committed(mq) == 10

        ts = first[4].store_timestamp
        expected = min(m.queue_offset for m in first if m.store_timestamp >= ts)
        assert await c.offset_for_timestamp(mq, ts) == expected
        await c.seek(mq, await c.offset_for_timestamp(mq, ts))
        by_time: list[MessageExt] = []
        await poll_until(c, by_time, 10 - expected)
        assert [m.queue_offset for m in by_time] == list(range(expected, 10))

        await c.seek_to_end(mq)
        assert await c.poll(0.3) == []
        await send(cluster, "LpSeek", 2, start=100)
        tail: list[MessageExt] = []
        await poll_until(c, tail, 2)
        assert [m.body for m in tail] == [b"m-100", b"m-101"]
        assert [m.queue_offset for m in tail] == [10, 11]

        with pytest.raises(InvalidArgumentError):
            await c.seek(mq, 99)  # beyond the max offset
        with pytest.raises(InvalidArgumentError):
            await c.seek(MessageQueue("LpSeek", mq.broker_name, 5), 0)  # not assigned


async def test_seek_backwards_commits_the_right_offset(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpSeekBack", 1)
    await send(cluster, "LpSeekBack", 8)
    async with LitePullConsumer(
        "lp-seek-back", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST, pull_batch_size=2
    ) as c:
        c.assign([mq])
        got: list[MessageExt] = []
        await poll_until(c, got, 8)
        await c.seek(mq, 2)
        batch: list[MessageExt] = []
        await poll_until(c, batch, 1)
        await c.commit(persist=True)
        last = batch[-1].queue_offset
        assert batch[0].queue_offset == 2
        assert await broker_offset(cluster, "lp-seek-back", mq) == last + 1


async def test_pause_and_resume(cluster: LocalCluster) -> None:
    queues = await make_topic(cluster, "LpPause", 2)
    q_paused, q_live = queues
    c = LitePullConsumer("lp-pause", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    c.assign(queues)
    c.pause([q_paused])  # before start, as Java allows for assigned queues
    assert c.is_paused(q_paused) and not c.is_paused(q_live)
    sent = await send(cluster, "LpPause", 20)
    got: list[MessageExt] = []
    async with c:
        await poll_until(c, got, len(sent[q_live]))
        assert {m.message_queue for m in got} == {q_live}
        assert await c.poll(0.3) == []
        c.resume([q_paused])
        await poll_until(c, got, 20)
    assert sorted(m.body for m in got if m.message_queue == q_paused) == sorted(sent[q_paused])


async def test_commit_and_committed_are_visible_to_a_new_consumer(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpCommit", 1)
    await send(cluster, "LpCommit", 10)
    async with LitePullConsumer(
        "lp-commit", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST, auto_commit=False
    ) as c:
        c.assign([mq])
        got: list[MessageExt] = []
        await poll_until(c, got, 10)
        # nothing committed yet (a young queue answers 0 for a group without an offset)
        assert await broker_offset(cluster, "lp-commit", mq) in (-1, 0)
        await c.commit({mq: 4}, persist=True)
        assert await c.committed(mq) == 4
        assert await broker_offset(cluster, "lp-commit", mq) == 4
        await c.commit_sync(persist=True)  # every polled offset
        assert await c.committed(mq) == 10
        assert await broker_offset(cluster, "lp-commit", mq) == 10

    await send(cluster, "LpCommit", 3, start=10)
    async with LitePullConsumer("lp-commit", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c2:
        c2.assign([mq])
        assert await c2.committed(mq) == 10  # read from the broker
        more: list[MessageExt] = []
        await poll_until(c2, more, 3)
        assert [m.queue_offset for m in more] == [10, 11, 12]  # resumes at the committed offset


async def test_auto_commit(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpAuto", 1)
    await send(cluster, "LpAuto", 10)
    cfg = ClientConfig(namesrv_addr=cluster.namesrv_addr, persist_consumer_offset_interval=0.2)
    async with LitePullConsumer("lp-auto", config=cfg, consume_from_where=FIRST, auto_commit_interval=1.0) as c:
        c.assign([mq])
        got: list[MessageExt] = []
        await poll_until(c, got, 10)

        async def committed_by_poll() -> bool:
            await c.poll(0.1)  # auto-commit happens inside poll(), then the runtime persists
            return await broker_offset(cluster, "lp-auto", mq) == 10

        await wait_until(committed_by_poll, timeout=10, what="auto-committed offset on the broker")

    # without auto-commit nothing reaches the broker, not even at close
    [mq2] = await make_topic(cluster, "LpManual", 1)
    await send(cluster, "LpManual", 5)
    async with LitePullConsumer(
        "lp-manual", config=cfg, consume_from_where=FIRST, auto_commit=False, auto_commit_interval=1.0
    ) as c:
        c.assign([mq2])
        got2: list[MessageExt] = []
        await poll_until(c, got2, 5)
    assert await broker_offset(cluster, "lp-manual", mq2) in (-1, 0)


async def test_close_commits_polled_offsets_with_auto_commit(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpClose", 1)
    await send(cluster, "LpClose", 6)
    async with LitePullConsumer("lp-close", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c:
        c.assign([mq])
        got: list[MessageExt] = []
        await poll_until(c, got, 6)
    assert await broker_offset(cluster, "lp-close", mq) == 6


async def test_subscribe_two_consumers_split_queues(cluster: LocalCluster) -> None:
    queues = await make_topic(cluster, "LpSplit", 4)
    c1 = LitePullConsumer("lp-split", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    c2 = LitePullConsumer("lp-split", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    c1.subscribe("LpSplit", "*")
    c2.subscribe("LpSplit", "*")
    async with c1:
        await wait_until(lambda: c1.assignment() == queues, timeout=10, what="c1 owns all queues")
        async with c2:

            def split() -> bool:
                a1, a2 = set(c1.assignment()), set(c2.assignment())
                return len(a1) == 2 and len(a2) == 2 and a1 | a2 == set(queues)

            await wait_until(split, timeout=15, what="queues split 2/2")
            sent = await send(cluster, "LpSplit", 40)
            got1: list[MessageExt] = []
            got2: list[MessageExt] = []

            async def all_received() -> bool:
                b1, b2 = await asyncio.gather(c1.poll(0.1), c2.poll(0.1))
                got1.extend(b1)
                got2.extend(b2)
                return len({m.body for m in got1 + got2}) >= 40

            await wait_until(all_received, timeout=20, what="40 messages across both consumers")
            assert {m.message_queue for m in got1} <= set(c1.assignment())
            assert {m.message_queue for m in got2} <= set(c2.assignment())
            assert got1 and got2
        assert {m.body for m in got1 + got2} == {b for bodies in sent.values() for b in bodies}
        # c2 left (its polled offsets were committed at close): c1 takes every queue over and
        # continues where c2 stopped
        await wait_until(lambda: c1.assignment() == queues, timeout=15, what="c1 owns all queues again")
        await send(cluster, "LpSplit", 8, start=100)
        after: list[MessageExt] = []
        await poll_until(c1, after, 8)
        assert await c1.poll(0.3) == []
    assert sorted(m.body for m in after) == sorted(f"m-{i}".encode() for i in range(100, 108))


async def test_subscribe_filters_by_tag(cluster: LocalCluster) -> None:
    await make_topic(cluster, "LpTags", 2)
    await send(cluster, "LpTags", 6, tags="A")
    await send(cluster, "LpTags", 6, tags="B", start=6)
    await send(cluster, "LpTags", 2, tags="A", start=12)
    async with LitePullConsumer("lp-tags", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST) as c:
        c.subscribe("LpTags", "A")
        got: list[MessageExt] = []
        await poll_until(c, got, 8)
        assert await c.poll(0.3) == []
    assert sorted(m.body for m in got) == sorted([f"m-{i}".encode() for i in (*range(6), 12, 13)])
    assert {m.tags for m in got} == {"A"}


async def test_async_iteration(cluster: LocalCluster) -> None:
    [mq] = await make_topic(cluster, "LpIter", 1)
    await send(cluster, "LpIter", 12)
    c = LitePullConsumer("lp-iter", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST, poll_timeout=0.2)
    c.assign([mq])
    seen: list[MessageExt] = []
    async with c:
        async for m in c:
            seen.append(m)
            if len(seen) == 12:
                break
        assert [m.queue_offset for m in seen] == list(range(12))

        tail: list[MessageExt] = []

        async def drain_forever() -> None:
            async for m in c:
                tail.append(m)

        task = asyncio.ensure_future(drain_forever())
        await send(cluster, "LpIter", 3, start=50)
        await wait_until(lambda: len(tail) == 3, timeout=10, what="3 more messages by iteration")
        assert not task.done()
    # closing the consumer ends the iteration
    await wait_until(task.done, timeout=5, what="iteration ended by close()")
    assert task.exception() is None
    assert [m.body for m in tail] == [b"m-50", b"m-51", b"m-52"]


async def test_assign_with_sub_expression_filters_by_tag(cluster: LocalCluster) -> None:
    queues = await make_topic(cluster, "LpAssignTags", 2)
    await send(cluster, "LpAssignTags", 4, tags="keep")
    await send(cluster, "LpAssignTags", 4, tags="skip", start=4)
    c = LitePullConsumer("lp-assign-tags", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST)
    c.set_sub_expression_for_assign("LpAssignTags", "keep")
    c.assign(queues)
    async with c:
        got: list[MessageExt] = []
        await poll_until(c, got, 4)
        assert await c.poll(0.3) == []
    assert sorted(m.body for m in got) == [b"m-0", b"m-1", b"m-2", b"m-3"]


async def test_subscribe_before_the_topic_exists(cluster: LocalCluster) -> None:
    c = LitePullConsumer("lp-late", namesrv_addr=cluster.namesrv_addr, consume_from_where=FIRST, rebalance_interval=0.5)
    c.subscribe("LpLate", "*")
    async with c:
        assert c.assignment() == []
        queues = await make_topic(cluster, "LpLate", 2)
        await wait_until(lambda: c.assignment() == queues, timeout=15, what="queues of the new topic")
        await send(cluster, "LpLate", 6)
        got: list[MessageExt] = []
        await poll_until(c, got, 6)
    assert sorted(m.body for m in got) == sorted(f"m-{i}".encode() for i in range(6))
