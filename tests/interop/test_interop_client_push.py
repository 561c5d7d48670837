"""rocketpipe's PushConsumer (concurrent, CLUSTERING) against embedded, Apache 5.x and Apache 4.x.

Every test runs three times (``target`` fixture). Each one is a push-consumer feature whose
behaviour on the real Apache broker is the reference: rebalancing of a group, the
RECONSUME_LATER → ``%RETRY%`` → ``%DLQ%`` path (DLQ read back and compared with what Java's
``AbstractSendMessageProcessor.consumerSendMsgBack`` stores; ``delayLevel = -1``; batch
``ack_index``; the consume-timeout send-back), committed offsets across consumer restarts,
``ConsumeFromWhere`` for a new group, long-polling wake-up, route changes, subscriptions changed
while running and subscriptions posted with each pull.

Client periods are shortened (rebalance, route refresh and offset persistence every second);
the Apache brokers run with one-second delay levels (``FAST_DELAY_LEVELS``), so retries are quick.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from interop_support import Target, create_topic_on, has_route, unique

from rocketpipe import (
    Admin,
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PullStatus,
    PushConsumer,
    SendStatus,
)
from rocketpipe.client import rpc
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.apache import CLUSTER_NAME
from waiting import wait_until

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


#: Short client periods (seconds) so that rebalancing and route refreshes happen within a test.
FAST = {"rebalance_interval": 1.0}


def fast_config(t: Target) -> ClientConfig:
    """Route refresh and offset persistence every second (Java ``pollNameServerInterval`` 30 s,
    ``persistConsumerOffsetInterval`` 5 s); a lenient RPC timeout, the machine being shared with
    JVMs and other test sessions."""
    return ClientConfig(
        namesrv_addr=t.namesrv_addr,
        poll_name_server_interval=1.0,
        persist_consumer_offset_interval=1.0,
        request_timeout=10.0,
    )


async def broker_offsets_reach(t: Target, group: str, topic: str, queue_ids: set[int], offset: int) -> None:
    """Wait until the broker's committed offset of each queue is ``offset``.

    A broker handles UPDATE_CONSUMER_OFFSET (and the commit offset carried by a pull) in a thread
    pool, so an older one-way update can land after the one a consumer sends when it closes (as
    with Java's client): the tests that compare offsets across consumers first let the periodic
    persistence reach the broker, then close.
    """

    async def reached() -> bool:
        try:
            return all(
                [await committed_offset(t, group, MessageQueue(topic, t.broker_name, q)) == offset for q in queue_ids]
            )
        except BrokerError:  # QUERY_NOT_FOUND: nothing committed yet
            return False

    await wait_until(
        reached, timeout=30, interval=0.5, what=f"committed offsets {offset} on queues {sorted(queue_ids)}"
    )


def push_consumer(
    t: Target,
    group: str,
    topic: str,
    got: list[MessageExt],
    *,
    where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    **kwargs: Any,
) -> PushConsumer:
    """A consumer of ``topic`` appending every delivered message to ``got`` (always CONSUME_SUCCESS)."""
    consumer = PushConsumer(group, config=fast_config(t), consume_from_where=where, **{**FAST, **kwargs})
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    return consumer


def topic_queues(consumer: PushConsumer, topic: str) -> set[int]:
    return {mq.queue_id for mq in consumer.assigned_queues() if mq.topic == topic}


async def committed_offset(t: Target, group: str, mq: MessageQueue) -> int:
    """QUERY_CONSUMER_OFFSET straight to the broker."""
    async with Admin(t.namesrv_addr) as admin:
        return await rpc.query_consumer_offset(admin.runtime.pool, t.broker_addr, group, mq, 5.0)


# ------------------------------------------------------------------------------ rebalance


async def test_rebalance_two_consumers_and_on_leave(target: Target) -> None:
    """Two consumers of one group split 4 queues 2/2 and consume every message once; when one
    leaves, the other takes all 4 queues and consumes the new messages on each of them."""
    topic, group = unique("Rebal"), unique("cg")
    await create_topic_on(target, topic, 4)
    got_a: list[MessageExt] = []
    got_b: list[MessageExt] = []
    a = push_consumer(target, group, topic, got_a)
    b = push_consumer(target, group, topic, got_b)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p, a:
        await wait_until(lambda: topic_queues(a, topic) == {0, 1, 2, 3}, timeout=30, what="a alone holds every queue")
        await b.start()
        try:
            await wait_until(
                lambda: (
                    len(topic_queues(a, topic)) == 2
                    and len(topic_queues(b, topic)) == 2
                    and not topic_queues(a, topic) & topic_queues(b, topic)
                ),
                timeout=40,
                what="queues split 2/2",
            )
            qa, qb = topic_queues(a, topic), topic_queues(b, topic)
            assert qa | qb == {0, 1, 2, 3}
            # AllocateMessageQueueAveragely over sorted client ids: the first gets queues 0, 1
            first = a if sorted([a.client_id, b.client_id])[0] == a.client_id else b
            assert topic_queues(first, topic) == {0, 1}
            sent1: dict[str, int] = {}
            for i in range(40):
                r = await p.send(Message.build(topic, f"one-{i}", keys=f"k{i}"))
                sent1[r.msg_id] = r.message_queue.queue_id
            assert set(sent1.values()) == {0, 1, 2, 3}
            await wait_until(lambda: len(got_a) + len(got_b) >= 40, timeout=40, what="first 40 messages")
            consumed = [(m.queue_id, m.queue_offset) for m in got_a + got_b]
            assert Counter(m.msg_id for m in got_a + got_b) == Counter(set(sent1)), sorted(
                consumed
            )  # each exactly once
            assert {m.queue_id for m in got_a} == qa and {m.queue_id for m in got_b} == qb, (
                qa,
                qb,
                sorted(consumed),
            )
            assert all(sent1[m.msg_id] == m.queue_id for m in got_a + got_b)
            await broker_offsets_reach(target, group, topic, qb, 10)
        finally:
            await b.close()  # persists its offsets, then UNREGISTER_CLIENT → the broker notifies a
        for q in qb:
            assert await committed_offset(target, group, MessageQueue(topic, target.broker_name, q)) == 10
        await wait_until(lambda: topic_queues(a, topic) == {0, 1, 2, 3}, timeout=40, what="a takes every queue back")
        n_a = len(got_a)
        sent2: dict[str, int] = {}
        for i in range(40):
            r = await p.send(Message.build(topic, f"two-{i}"))
            sent2[r.msg_id] = r.message_queue.queue_id
        await wait_until(lambda: len(got_a) - n_a >= 40, timeout=40, what="second 40 messages")
        late = got_a[n_a:]
    assert Counter(m.msg_id for m in late) == Counter(set(sent2)), sorted(
        (m.queue_id, m.queue_offset) for m in late
    )  # nothing of part 1 again
    assert {m.queue_id for m in late} == {0, 1, 2, 3}
    # round-robin: 10 per queue each time; the queues taken over resume at b's committed offsets
    assert sorted(m.queue_offset for m in late) == sorted(list(range(10, 20)) * 4)
    assert n_a + len(got_b) == 40


# ------------------------------------------------------------------------------ retry and DLQ


def broker_added(t: Target) -> dict[str, str]:
    """Properties the broker adds to every message it stores from a SEND_MESSAGE."""
    added = {"CLUSTER": CLUSTER_NAME if t.is_apache else "DefaultCluster"}
    if t.kind != "apache-4":  # 5.x's buildMsgContext, which rocketpipe's broker follows
        added.update({"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
    return added


async def read_dlq(t: Target, group: str, count: int) -> list[MessageExt]:
    """The first ``count`` records of ``%DLQ%<group>`` queue 0 (a raw pull: Java creates the DLQ
    topic with PERM_READ | PERM_WRITE in 4.9.7 and 5.3.3, so it is readable as is)."""
    dlq = f"%DLQ%{group}"
    async with Admin(t.namesrv_addr) as admin:
        await wait_until(lambda: has_route(admin, dlq), timeout=30, what="route of the DLQ topic")
        route = await admin.topic_route(dlq)
        (qd,) = route.queue_datas
        assert (qd.read_queue_nums, qd.write_queue_nums, qd.perm) == (
            1,
            1,
            6,
        )  # DLQ_NUMS_PER_GROUP, PERM_READ|PERM_WRITE
        mq = MessageQueue(dlq, t.broker_name, 0)
        await wait_until(lambda: _max_offset_at_least(admin, mq, count), timeout=30, what="DLQ records")
        assert await admin.max_offset(mq) == count
        raw = await admin.pull_raw(mq, 0, 32)
    assert raw.status is PullStatus.FOUND
    return decode_records(raw.body)


async def _max_offset_at_least(admin: Admin, mq: MessageQueue, n: int) -> bool:
    try:
        return await admin.max_offset(mq) >= n
    except Exception:
        return False


async def test_retry_then_dlq_after_max_reconsume_times(target: Target) -> None:
    """RECONSUME_LATER every time with max_reconsume_times=2: delivered with reconsume_times 0, 1,
    2 (the retries through %RETRY%group), then stored in %DLQ%group with reconsume_times 3, the
    original body, keys, tags, properties and UNIQ_KEY, RETRY_TOPIC = the original topic and
    ORIGIN_MESSAGE_ID = the original's offset message id; never delivered again."""
    topic, group = unique("Dlq"), unique("cg")
    seen: list[MessageExt] = []
    consumer = PushConsumer(
        group,
        config=fast_config(target),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=2,
        **FAST,
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(msgs)
        return LATER

    consumer.register_message_listener(listener)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        r1 = await p.send(Message.build(topic, b"poison-1", tags="P", keys=["dk1", "dk"], properties={"x": "1"}))
        r2 = await p.send(Message.build(topic, b"poison-2", tags="Q", keys="dk2", properties={"x": "2"}))
        assert r1.send_status is SendStatus.SEND_OK and r2.send_status is SendStatus.SEND_OK
        async with consumer:
            await wait_until(
                lambda: sum(m.reconsume_times == 2 for m in seen) >= 2, timeout=90, what="deliveries 0, 1, 2"
            )
            dlq = await read_dlq(target, group, 2)
            async with Admin(target.namesrv_addr) as admin:
                retry_queues = await admin.topic_queues(f"%RETRY%{group}")
                # two send-backs per message went to %RETRY%group, the third to the DLQ
                assert sum([await admin.max_offset(mq) for mq in retry_queues]) == 4
    assert len(seen) == 6
    by_body = {m.body: m for m in dlq}
    assert set(by_body) == {b"poison-1", b"poison-2"}
    for body, r, tags, keys, x in ((b"poison-1", r1, "P", "dk1 dk", "1"), (b"poison-2", r2, "Q", "dk2", "2")):
        d = by_body[body]
        assert d.topic == f"%DLQ%{group}" and d.queue_id == 0
        assert d.reconsume_times == 3
        assert d.msg_id == r.msg_id  # UNIQ_KEY kept
        assert d.tags == tags and d.keys == keys and d.properties["x"] == x
        assert d.properties["RETRY_TOPIC"] == topic
        # Java: the stored original is looked up by commit-log offset, a MessageExt whose msgId is
        # the offset message id; ORIGIN_MESSAGE_ID is set from it on the first send-back and kept
        assert d.properties["ORIGIN_MESSAGE_ID"] == r.offset_msg_id
        # the whole property map: the original's (+ CLUSTER, and on 5.x MSG_REGION / TRACE_ON,
        # which 5.x's buildMsgContext stores on every send), the schedule hop's REAL_TOPIC /
        # REAL_QID, WAIT=false and DELAY=0 from consumerSendMsgBack; no DLQ_ORIGIN_* (POP/proxy only)
        assert d.properties == {
            **broker_added(target),
            "KEYS": keys,
            "TAGS": tags,
            "x": x,
            "UNIQ_KEY": r.msg_id,
            "RETRY_TOPIC": topic,
            "ORIGIN_MESSAGE_ID": r.offset_msg_id,
            "REAL_TOPIC": f"%RETRY%{group}",
            "REAL_QID": "0",
            "WAIT": "false",
            "DELAY": "0",
        }
        deliveries = sorted((m.reconsume_times, m.topic, m.msg_id) for m in seen if m.body == body)
        assert deliveries == [(n, topic, r.msg_id) for n in range(3)]


async def test_delay_level_minus_one_goes_straight_to_dlq(target: Target) -> None:
    """``ctx.delay_level_when_next_consume = -1`` with RECONSUME_LATER: the broker dead-letters the
    message at once (``delayLevel < 0``), reconsume_times 1, no retry delivery."""
    topic, group = unique("Dlq1"), unique("cg")
    seen: list[MessageExt] = []
    consumer = PushConsumer(
        group, config=fast_config(target), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(msgs)
        if msgs[0].body == b"dead":
            ctx.delay_level_when_next_consume = -1
            return LATER
        return OK

    consumer.register_message_listener(listener)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        r = await p.send(Message.build(topic, b"dead", keys="dead-key", properties={"y": "z"}))
        async with consumer:
            (d,) = await read_dlq(target, group, 1)
            ok = await p.send(Message.build(topic, b"alive"))
            await wait_until(lambda: any(m.msg_id == ok.msg_id for m in seen), timeout=30, what="a later message")
    assert d.body == b"dead" and d.msg_id == r.msg_id and d.reconsume_times == 1
    assert d.properties == {
        **broker_added(target),
        "KEYS": "dead-key",
        "y": "z",
        "UNIQ_KEY": r.msg_id,
        "RETRY_TOPIC": topic,
        "ORIGIN_MESSAGE_ID": r.offset_msg_id,
        "WAIT": "false",
        "DELAY": "0",
    }
    assert [(m.body, m.reconsume_times) for m in seen] == [(b"dead", 0), (b"alive", 0)]


async def test_consume_batch_ack_index_sends_back_the_tail(target: Target) -> None:
    """consume_message_batch_max_size=4 and ``ctx.ack_index = 0`` on CONSUME_SUCCESS: the first
    message of each batch is done, the others are sent back and redelivered once (reconsume 1)."""
    topic, group = unique("Ack"), unique("cg")
    await create_topic_on(target, topic, 1)
    batches: list[list[MessageExt]] = []
    consumer = PushConsumer(
        group,
        config=fast_config(target),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_message_batch_max_size=4,
        **FAST,
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        batches.append(list(msgs))
        if all(m.reconsume_times == 0 for m in msgs):
            ctx.ack_index = 0
        return OK

    consumer.register_message_listener(listener)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        ids = [(await p.send(Message.build(topic, f"b{i}"))).msg_id for i in range(8)]
        async with consumer:
            await wait_until(
                lambda: sum(len(b) for b in batches if b[0].reconsume_times == 0) >= 8,
                timeout=40,
                what="first deliveries",
            )
            first = [b for b in batches if b[0].reconsume_times == 0]
            failed = {m.msg_id for b in first for m in b[1:]}
            assert len(failed) >= 4  # 8 messages of one pull, batches of up to 4
            await wait_until(
                lambda: len({m.msg_id for b in batches for m in b if m.reconsume_times == 1}) >= len(failed),
                timeout=60,
                what="redeliveries",
            )
    assert sorted(m.msg_id for b in first for m in b) == sorted(ids)
    assert max(len(b) for b in first) == 4
    again = [m for b in batches for m in b if m.reconsume_times > 0]
    assert Counter(m.msg_id for m in again) == Counter(failed)  # each exactly once, reconsume_times 1
    assert {m.reconsume_times for m in again} == {1} and {m.topic for m in again} == {topic}


async def test_consume_timeout_sends_back_stuck_message(target: Target) -> None:
    """A listener stuck on a message longer than consume_timeout: the consumer sends it back
    (delay level 3, ``ProcessQueue.cleanExpiredMsg``) and moves on; it is redelivered with
    reconsume_times 1 while the first call is still running, whose late result is ignored; the
    committed offset passes it."""
    topic, group = unique("Stuck"), unique("cg")
    await create_topic_on(target, topic, 1)
    seen: list[tuple[bytes, int]] = []
    release = asyncio.Event()
    consumer = PushConsumer(
        group,
        config=fast_config(target),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_timeout=2.0,
        **FAST,
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        (m,) = msgs
        seen.append((m.body, m.reconsume_times))
        if m.body == b"stuck" and m.reconsume_times == 0:
            await asyncio.wait_for(release.wait(), 60)
        return OK

    consumer.register_message_listener(listener)
    mq = MessageQueue(topic, target.broker_name, 0)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        stuck = await p.send(Message.build(topic, b"stuck"))
        async with consumer:
            await wait_until(lambda: (b"stuck", 1) in seen, timeout=40, what="redelivery of the stuck message")
            assert not release.is_set()  # the first call is still running
            after = await p.send(Message.build(topic, b"after"))
            await wait_until(lambda: (b"after", 0) in seen, timeout=30, what="a later message")
            await wait_until(lambda: consumer.committed_offsets().get(mq) == 2, timeout=30, what="offset past both")
            await broker_offsets_reach(target, group, topic, {0}, 2)
            release.set()
    assert stuck.queue_offset == 0 and after.queue_offset == 1
    assert sorted(seen) == [(b"after", 0), (b"stuck", 0), (b"stuck", 1)]
    assert await committed_offset(target, group, mq) == 2
    async with Admin(target.namesrv_addr) as admin:
        (rq,) = await admin.topic_queues(f"%RETRY%{group}")
        assert await admin.max_offset(rq) == 1


# ------------------------------------------------------------------------------ offsets


async def test_offsets_resume_after_restart(target: Target) -> None:
    """A consumer consumes 12 messages (committed offsets reach the max offsets on the broker)
    and closes; 8 more are sent; a new consumer of the group gets exactly those 8 (then a
    marker), and the committed offsets follow."""
    topic, group = unique("Resume"), unique("cg")
    await create_topic_on(target, topic, 2)
    got1: list[MessageExt] = []
    got2: list[MessageExt] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        part1 = [(await p.send(Message.build(topic, f"p1-{i}"))).msg_id for i in range(12)]
        async with push_consumer(target, group, topic, got1):
            await wait_until(lambda: len(got1) >= 12, timeout=40, what="part 1")
            await broker_offsets_reach(target, group, topic, {0, 1}, 6)
        assert Counter(m.msg_id for m in got1) == Counter(part1)
        for q in (0, 1):
            assert await committed_offset(target, group, MessageQueue(topic, target.broker_name, q)) == 6
        part2 = [(await p.send(Message.build(topic, f"p2-{i}"))).msg_id for i in range(8)]
        # CONSUME_FROM_FIRST_OFFSET would restart at 0 for a group without offsets: it has some
        async with push_consumer(target, group, topic, got2):
            await wait_until(lambda: len(got2) >= 8, timeout=40, what="part 2")
            mr = await p.send(Message.build(topic, b"marker"))
            marker, mq_id = mr.msg_id, mr.message_queue.queue_id
            await wait_until(lambda: any(m.msg_id == marker for m in got2), timeout=30, what="marker")
            await broker_offsets_reach(target, group, topic, {mq_id}, 11)
            await broker_offsets_reach(target, group, topic, {1 - mq_id}, 10)
    assert Counter(m.msg_id for m in got2) == Counter([*part2, marker])
    assert sorted(m.queue_offset for m in got2) == sorted([6, 7, 8, 9, 6, 7, 8, 9, 10])
    assert await committed_offset(target, group, MessageQueue(topic, target.broker_name, mq_id)) == 11
    assert await committed_offset(target, group, MessageQueue(topic, target.broker_name, 1 - mq_id)) == 10


# ------------------------------------------------------------------------------ ConsumeFromWhere


async def test_consume_from_first_offset_new_group(target: Target) -> None:
    """A new group with CONSUME_FROM_FIRST_OFFSET gets every stored message, then new ones."""
    topic = unique("First")
    await create_topic_on(target, topic, 4)
    got: list[MessageExt] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        old = [(await p.send(Message.build(topic, f"old-{i}"))).msg_id for i in range(10)]
        async with push_consumer(target, unique("cg"), topic, got, where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET):
            await wait_until(lambda: len(got) >= 10, timeout=40, what="old messages")
            new = [(await p.send(Message.build(topic, f"new-{i}"))).msg_id for i in range(6)]
            await wait_until(lambda: len(got) >= 16, timeout=40, what="new messages")
    assert Counter(m.msg_id for m in got) == Counter(old + new)


async def test_consume_from_last_offset_young_queue_starts_at_zero(target: Target) -> None:
    """CONSUME_FROM_LAST_OFFSET for a new group: the broker answers offset 0 to
    QUERY_CONSUMER_OFFSET for a queue whose min offset is 0 and whose first message is still in
    memory (ConsumerManageProcessor.queryConsumerOffset, 4.9.7 and 5.3.3), so the messages stored
    before the group existed are delivered too, on every queue."""
    topic, group = unique("Last"), unique("cg")
    await create_topic_on(target, topic, 4)
    got: list[MessageExt] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        old = [(await p.send(Message.build(topic, f"old-{i}"))).msg_id for i in range(8)]
        async with push_consumer(target, group, topic, got, where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET):
            await wait_until(lambda: len(got) >= 8, timeout=40, what="old messages")
            new = [(await p.send(Message.build(topic, f"new-{i}"))).msg_id for i in range(4)]
            await wait_until(lambda: len(got) >= 12, timeout=40, what="new messages")
    assert Counter(m.msg_id for m in got) == Counter(old + new)
    assert {m.queue_id for m in got if m.msg_id in old} == {0, 1, 2, 3}
    assert sorted(m.queue_offset for m in got if m.msg_id in old) == [0, 0, 0, 0, 1, 1, 1, 1]


async def test_consume_from_timestamp_search_and_young_queue(target: Target) -> None:
    """CONSUME_FROM_TIMESTAMP for a new group. SEARCH_OFFSET_BY_TIMESTAMP resolves the timestamp
    to the first message stored after it (one queue; the before/after gap is wide enough for
    4.9.x's nearest-time search). But the consumer only searches when QUERY_CONSUMER_OFFSET
    answers QUERY_NOT_FOUND, and for a queue whose min offset is 0 and whose data is in memory
    Java's broker answers 0 instead (ConsumerManageProcessor.queryConsumerOffset; the Java client
    sends no setZeroIfNotFound): on such a young queue every message, earlier ones included,
    is delivered — as with Java's DefaultMQPushConsumer."""
    topic = unique("Stamp")
    await create_topic_on(target, topic, 1)
    got: list[MessageExt] = []
    mq = MessageQueue(topic, target.broker_name, 0)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        before = [(await p.send(Message.build(topic, f"before-{i}"))).msg_id for i in range(5)]
        before_done = time.time()
        await wait_until(lambda: time.time() >= before_done + 4.5, timeout=10, what="a gap of 4.5 s")
        stamp = int(time.time())  # a whole second >= 3.5 s after the last early message
        after = [(await p.send(Message.build(topic, f"after-{i}"))).msg_id for i in range(5)]
        async with Admin(target.namesrv_addr) as admin:
            assert await admin.search_offset(mq, stamp * 1000) == 5
            assert await admin.search_offset(mq, int(before_done * 1000) - 60_000) == 0
        consumer = push_consumer(
            target,
            unique("cg"),
            topic,
            got,
            where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
            consume_timestamp=time.strftime("%Y%m%d%H%M%S", time.localtime(stamp)),
        )
        async with consumer:
            await wait_until(lambda: len(got) >= 10, timeout=40, what="every stored message")
            marker = (await p.send(Message.build(topic, b"marker"))).msg_id
            await wait_until(lambda: any(m.msg_id == marker for m in got), timeout=30, what="marker")
    assert [m.msg_id for m in sorted(got, key=lambda m: m.queue_offset)] == [*before, *after, marker]
    assert [m.store_timestamp >= stamp * 1000 for m in sorted(got, key=lambda m: m.queue_offset)] == [False] * 5 + [
        True
    ] * 6


# ------------------------------------------------------------------------------ long polling


async def test_long_polling_wakes_held_pull_on_arrival(target: Target) -> None:
    """A caught-up consumer's pull is held by the broker (15 s suspend); a new message wakes it:
    delivered in well under the hold time, three times in a row."""
    topic = unique("LongPoll")
    await create_topic_on(target, topic, 1)
    got: list[MessageExt] = []
    arrived: dict[str, float] = {}
    consumer = PushConsumer(
        unique("cg"), config=fast_config(target), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            arrived.setdefault(m.msg_id, time.monotonic())
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    mq = MessageQueue(topic, target.broker_name, 0)

    def pull_held_for(seconds: float) -> bool:
        info = consumer.running_info().mq_table.get(mq)
        return info is not None and time.time() * 1000 - info["lastPullTimestamp"] >= seconds * 1000

    latencies: list[float] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        await p.send(Message.build(topic, b"warm-up"))
        async with consumer:
            await wait_until(lambda: len(got) == 1, timeout=40, what="warm-up")
            for i in range(3):
                # the pull in flight has been outstanding for 2 s: the broker holds it
                await wait_until(lambda: pull_held_for(2.0), timeout=20, what="a held pull")
                t0 = time.monotonic()
                r = await p.send(Message.build(topic, f"ping-{i}"))
                await wait_until(lambda r=r: r.msg_id in arrived, timeout=14, what=f"ping-{i}")
                latencies.append(arrived[r.msg_id] - t0)
    print(f"[{target.kind}] long-poll wake-up latencies: {', '.join(f'{x * 1000:.0f} ms' for x in latencies)}")
    assert [m.body for m in got] == [b"warm-up", b"ping-0", b"ping-1", b"ping-2"]
    assert max(latencies) < 5.0, latencies


# ------------------------------------------------------------------------------ route changes


async def test_route_change_more_queues_used_by_producer_and_consumer(target: Target) -> None:
    """A topic grows from 2 to 4 queues (UPDATE_AND_CREATE_TOPIC) while a producer and a consumer
    run; after their route refresh (poll_name_server_interval 1 s) the producer writes to queues 2
    and 3 and the consumer consumes from them; every message is consumed exactly once."""
    topic = unique("Grow")
    await create_topic_on(target, topic, 2)
    got: list[MessageExt] = []
    sent: dict[str, int] = {}
    async with Producer(unique("pg"), config=fast_config(target)) as p:

        async def send(body: str) -> int:
            r = await p.send(Message.build(topic, body))
            sent[r.msg_id] = r.message_queue.queue_id
            return r.message_queue.queue_id

        consumer = push_consumer(target, unique("cg"), topic, got)
        async with consumer:
            for i in range(6):
                await send(f"small-{i}")
            assert set(sent.values()) == {0, 1}
            await wait_until(lambda: len(got) >= 6, timeout=40, what="messages on 2 queues")
            assert topic_queues(consumer, topic) == {0, 1}
            await create_topic_on(target, topic, 4)
            n = 0

            async def reaches_new_queues() -> bool:
                nonlocal n
                n += 1
                await send(f"grow-{n}")
                return {2, 3} <= set(sent.values())

            await wait_until(reaches_new_queues, timeout=30, interval=0.2, what="producer writing to queues 2 and 3")
            recent = [await send(f"big-{i}") for i in range(8)]
            assert sorted(recent) == [0, 0, 1, 1, 2, 2, 3, 3]
            await wait_until(
                lambda: topic_queues(consumer, topic) == {0, 1, 2, 3}, timeout=30, what="consumer holding 4 queues"
            )
            await wait_until(lambda: len(got) >= len(sent), timeout=40, what="every message")
    assert Counter(m.msg_id for m in got) == Counter(set(sent))
    assert {m.queue_id for m in got} == {0, 1, 2, 3}
    assert all(sent[m.msg_id] == m.queue_id for m in got)


# ------------------------------------------------------------------------------ subscriptions


async def test_subscribe_after_start_and_unsubscribe(target: Target) -> None:
    """A topic subscribed while running is consumed (heartbeat with the new subscription, then
    rebalance); after unsubscribe its queues are dropped and its new messages are not delivered."""
    t1, t2 = unique("SubA"), unique("SubB")
    await create_topic_on(target, t1, 2)
    await create_topic_on(target, t2, 2)
    got: list[MessageExt] = []
    consumer = push_consumer(target, unique("cg"), t1, got)
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        a1 = [(await p.send(Message.build(t1, f"a1-{i}"))).msg_id for i in range(4)]
        b1 = [(await p.send(Message.build(t2, f"b1-{i}"))).msg_id for i in range(4)]
        async with consumer:
            await wait_until(lambda: len(got) >= 4, timeout=40, what=f"messages of {t1}")
            assert {m.topic for m in got} == {t1}
            consumer.subscribe(t2, "*")
            await wait_until(lambda: len(got) >= 8, timeout=40, what=f"messages of {t2}")
            assert topic_queues(consumer, t2) == {0, 1}
            assert consumer.subscriptions() == {t1: "*", t2: "*"}
            consumer.unsubscribe(t1)
            await wait_until(lambda: not topic_queues(consumer, t1), timeout=30, what=f"queues of {t1} dropped")
            a2 = (await p.send(Message.build(t1, b"a2"))).msg_id
            b2 = [(await p.send(Message.build(t2, f"b2-{i}"))).msg_id for i in range(2)]
            await wait_until(lambda: len(got) >= 10, timeout=40, what=f"new messages of {t2}")
    assert Counter(m.msg_id for m in got) == Counter(a1 + b1 + b2)
    assert a2 not in {m.msg_id for m in got}


async def test_post_subscription_when_pull_tag_filter(target: Target) -> None:
    """post_subscription_when_pull=True: every pull carries the subscription (FLAG_SUBSCRIPTION)
    and the broker filters by it; only TagA || TagC messages are delivered."""
    topic = unique("PostSub")
    await create_topic_on(target, topic, 2)
    got: list[MessageExt] = []
    consumer = PushConsumer(
        unique("cg"),
        config=fast_config(target),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        post_subscription_when_pull=True,
        **FAST,
    )
    consumer.subscribe(topic, "TagA || TagC")

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(msgs)
        return OK

    consumer.register_message_listener(listener)
    wanted: list[str] = []
    async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
        for i in range(12):
            tag = ["TagA", "TagB", "TagC"][i % 3]
            r = await p.send(Message.build(topic, f"m{i}", tags=tag))
            if tag != "TagB":
                wanted.append(r.msg_id)
        async with consumer:
            await wait_until(lambda: len(got) >= 8, timeout=40, what="filtered messages")
            r = await p.send(Message.build(topic, b"last", tags="TagC"))
            wanted.append(r.msg_id)
            await wait_until(lambda: len(got) >= 9, timeout=30, what="a later TagC message")
    assert Counter(m.msg_id for m in got) == Counter(wanted)
    assert {m.tags for m in got} == {"TagA", "TagC"}
