"""rocketpipe's consumption styles against a broker: embedded (rocketpipe), Apache 5.x and 4.x.

Each test is one row of the conformance matrix (``target`` = embedded / apache-5 / apache-4):

* orderly push consumption (``MessageListenerOrderly``): per-queue order, broker queue locks
  (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, probed from a third client), take-over by a second member,
  SUSPEND_CURRENT_QUEUE_A_MOMENT;
* broadcasting push consumption: every member gets every message, offsets in the local file,
  a restarted member resumes from it;
* lite pull consumption, assign mode (seek, offsets by time, commit) and subscribe mode (two
  members split the queues), committed offsets checked on the broker (QUERY_CONSUMER_OFFSET);
* simple (POP) consumption: receive / ack / change_invisible_duration / redelivery after the
  invisible time; Apache 4.9.x has no POP, so there the test asserts the typed error.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from interop_support import Target, create_topic, unique

from rocketpipe import (
    Admin,
    BrokerError,
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeInitMode,
    InvalidArgumentError,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    Producer,
    PushConsumer,
    SendResult,
    SendStatus,
    SimpleConsumer,
)
from rocketpipe.client import rpc, select_by_hash
from rocketpipe.client.consumer.local_offsets import decode_offsets, local_offsets_path
from rocketpipe.client.consumer.orderly import (
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    MessageListenerOrderly,
    lock_batch_mq,
    unlock_batch_mq,
)
from rocketpipe.client.consumer.simple import PopNotSupportedError
from waiting import wait_until

SUCCESS = ConsumeOrderlyStatus.SUCCESS
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


class QueueSender:
    """rocketpipe's ``Producer.send`` with ``queue=`` or ``selector=select_by_hash`` (Java's
    ``send(msg, MessageQueueSelector, arg)`` with ``SelectMessageQueueByHash``)."""

    def __init__(self, target: Target, queues: list[MessageQueue]) -> None:
        self.queues = queues
        self.producer = Producer(unique("pg"), namesrv_addr=target.namesrv_addr)

    def select(self, key: str) -> MessageQueue:
        return select_by_hash(self.queues, Message.build(self.queues[0].topic, b""), key)

    async def send(self, msg: Message, *, key: str | None = None, mq: MessageQueue | None = None) -> SendResult:
        if mq is not None:
            r = await self.producer.send(msg, queue=mq)
        else:
            r = await self.producer.send(msg, selector=select_by_hash, arg=key or "")
        assert r.send_status is SendStatus.SEND_OK and r.message_queue == (mq or self.select(key or ""))
        return r


@pytest.fixture
async def senders(target: Target) -> AsyncIterator[Callable[[list[MessageQueue]], QueueSender]]:
    """``senders(queues)`` makes a :class:`QueueSender`; its producer is closed after the test."""
    made: list[QueueSender] = []

    def make(queues: list[MessageQueue]) -> QueueSender:
        made.append(QueueSender(target, queues))
        return made[-1]

    yield make
    for s in made:
        await s.producer.close()


async def broker_offset(admin: Admin, group: str, mq: MessageQueue) -> int:
    """The group's committed offset of ``mq`` on the broker (QUERY_CONSUMER_OFFSET)."""
    return await rpc.query_consumer_offset(
        admin.runtime.pool, await admin.runtime.find_master_addr(mq.broker_name, mq.topic), group, mq, 5.0
    )


# ------------------------------------------------------------------------------ orderly push


async def test_orderly_push_consumption(target: Target, senders: Callable[[list[MessageQueue]], QueueSender]) -> None:
    """MessageListenerOrderly: per-order sequence kept through SUSPEND and a take-over; the
    broker's queue locks are held by the consuming member and released when it leaves."""
    topic, group = unique("OrderSteps"), unique("cg_ord")
    orders, steps = 6, 8
    async with Admin(target.namesrv_addr) as admin:
        queues = await create_topic(admin, topic, 4)
        sender = senders(queues)
        probe = Admin(target.namesrv_addr)  # a third client id: its LOCK_BATCH_MQ shows who holds the locks
        try:
            sent: dict[str, list[tuple[int, int]]] = defaultdict(list)  # order -> [(queue id, offset)]

            async def send_steps(first: int, last: int) -> None:
                for step in range(first, last):
                    for order in range(orders):
                        key = f"order-{order}"
                        r = await sender.send(
                            Message.build(topic, f"{key}:{step}", keys=key, tags=f"step{step}"), key=key
                        )
                        assert r.message_queue == sender.select(key)
                        sent[key].append((r.message_queue.queue_id, r.queue_offset))

            await send_steps(0, steps // 2)

            # (member, queue id, bodies, offsets, reconsume times, status, loop time) per listener call
            calls: list[tuple[str, int, list[str], list[int], list[int], ConsumeOrderlyStatus, float]] = []
            loop = asyncio.get_running_loop()
            suspended: list[str] = []
            suspend_body = "order-5:1"

            def listener(member: str) -> MessageListenerOrderly:
                async def consume(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
                    bodies = [m.body.decode() for m in msgs]
                    assert {m.queue_id for m in msgs} == {ctx.message_queue.queue_id}
                    status = SUCCESS
                    if suspend_body in bodies and not suspended:
                        suspended.append(member)
                        ctx.suspend_current_queue_time_millis = 200
                        status = SUSPEND
                    calls.append(
                        (
                            member,
                            ctx.message_queue.queue_id,
                            bodies,
                            [m.queue_offset for m in msgs],
                            [m.reconsume_times for m in msgs],
                            status,
                            loop.time(),
                        )
                    )
                    return status

                return MessageListenerOrderly(consume)

            def member(name: str) -> PushConsumer:
                c = PushConsumer(
                    group,
                    namesrv_addr=target.namesrv_addr,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    consume_message_batch_max_size=3,
                    rebalance_interval=2.0,
                    lock_renew_interval=2.0,
                )
                c.subscribe(topic, "*")
                c.register_message_listener(listener(name))
                return c

            def completed(who: str | None = None) -> list[str]:
                return [
                    body
                    for m, _q, bodies, _o, _r, status, _t in calls
                    if status is SUCCESS and who in (None, m)
                    for body in bodies
                ]

            a = member("a")
            async with a:
                await wait_until(
                    lambda: len(completed("a")) == orders * steps // 2,
                    timeout=60,
                    what="member a consumes the first half",
                )
                assert {q.queue_id for q in a.locked_queues() if q.topic == topic} == {0, 1, 2, 3}
                # the broker refuses the locks to anyone else while a holds them
                assert await lock_batch_mq(probe.runtime, target.broker_addr, group, queues) == set()
            # a left: it unlocked every queue on the broker (UNLOCK_BATCH_MQ at shutdown), so the
            # probe gets them all at once (and gives them back)
            granted = await lock_batch_mq(probe.runtime, target.broker_addr, group, queues)
            await unlock_batch_mq(probe.runtime, target.broker_addr, group, queues)
            assert granted == set(queues)

            await send_steps(steps // 2, steps)
            b = member("b")
            async with b:
                await wait_until(
                    lambda: len(completed("b")) == orders * steps // 2, timeout=60, what="member b takes over"
                )
                assert {q.queue_id for q in b.locked_queues() if q.topic == topic} == {0, 1, 2, 3}
                assert await lock_batch_mq(probe.runtime, target.broker_addr, group, queues) == set()
                # b resumed where a committed: nothing of the first half again
                assert sorted(completed("b")) == sorted(
                    f"order-{o}:{s}" for o in range(orders) for s in range(steps // 2, steps)
                )
            for q in queues:  # b's offsets are on the broker after it left
                assert await broker_offset(admin, group, q) == await admin.max_offset(q)
        finally:
            await probe.close()

    # SUSPEND_CURRENT_QUEUE_A_MOMENT: the same batch again, next on its queue, reconsume_times + 1
    assert suspended == ["a"]
    i = next(k for k, c in enumerate(calls) if suspend_body in c[2])
    first = calls[i]
    again = next(c for c in calls[i + 1 :] if c[1] == first[1])
    assert first[5] is SUSPEND and again[5] is SUCCESS
    assert again[2] == first[2] and again[3] == first[3]
    assert first[4] == [0] * len(first[2]) and again[4] == [1] * len(first[2])
    assert again[6] - first[6] >= 0.15  # after the context's suspend time (200 ms)
    # per order: every step exactly once, in order; per queue: offsets consumed in order
    done = completed()
    by_order: dict[str, list[int]] = defaultdict(list)
    for body in done:
        key, step = body.split(":")
        by_order[key].append(int(step))
    assert by_order == {f"order-{o}": list(range(steps)) for o in range(orders)}
    by_queue: dict[int, list[int]] = defaultdict(list)
    for _m, q, _bodies, offs, _reconsume, status, _t in calls:
        if status is SUCCESS:
            by_queue[q].extend(offs)
    for q, offs in by_queue.items():
        assert offs == sorted(offs) == list(range(len(offs))), f"queue {q}"
    assert sum(len(v) for v in by_queue.values()) == orders * steps
    # the selector put each order on one queue
    for key, places in sent.items():
        assert {q for q, _ in places} == {sender.select(key).queue_id}


# ------------------------------------------------------------------------------ broadcasting


async def test_broadcasting_consumption(
    target: Target, senders: Callable[[list[MessageQueue]], QueueSender], tmp_path: Path
) -> None:
    """BROADCASTING: each member gets every message; offsets live in the member's local file,
    not on the broker; a restarted member resumes from its file (and, as the 5.x
    LocalFileOffsetStore, keeps the file's offsets of a topic it no longer subscribes)."""
    topic, flags, group = unique("Config"), unique("Flags"), unique("cg_bc")
    offsets_dir = tmp_path / "offsets"
    async with Admin(target.namesrv_addr) as admin:
        queues = await create_topic(admin, topic, 2)
        (flag_q,) = await create_topic(admin, flags, 1)
        sender = senders(queues)
        first = [f"setting-{i}" for i in range(6)]
        for i, body in enumerate(first):
            await sender.send(Message.build(topic, body), mq=queues[i % 2])
        for i in range(2):
            await sender.send(Message.build(flags, f"flag-{i}"), mq=flag_q)

        received: dict[str, list[MessageExt]] = {"a": [], "b": []}

        def member(name: str, topics: tuple[str, ...] = (topic, flags)) -> PushConsumer:
            c = PushConsumer(
                group,
                config=ClientConfig(namesrv_addr=target.namesrv_addr, instance_name=f"bc-{name}-{group}"),
                message_model=MessageModel.BROADCASTING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                offset_store_dir=str(offsets_dir),
            )
            for t in topics:
                c.subscribe(t, "*")

            def on_messages(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
                received[name].extend(msgs)
                return OK

            c.register_message_listener(on_messages)
            return c

        a, b = member("a"), member("b")
        a_id, b_id = a.client_id, b.client_id
        assert a_id != b_id
        await a.start()
        try:
            await b.start()
            try:
                await wait_until(
                    lambda: min(len(v) for v in received.values()) >= 8,
                    timeout=60,
                    what="both members get every message",
                )
                assert sorted(a.assigned_queues()) == sorted(b.assigned_queues()) == sorted([*queues, flag_q])
            finally:
                await b.close()
        finally:
            await a.close()
        for name in received:
            assert sorted(m.body.decode() for m in received[name]) == sorted([*first, "flag-0", "flag-1"])
            assert all(m.reconsume_times == 0 for m in received[name])

        # the offsets are in <dir>/<client id>/<group>/offsets.json (Java's LocalFileOffsetStore layout)
        maxes = {q: await admin.max_offset(q) for q in [*queues, flag_q]}
        assert maxes == {queues[0]: 3, queues[1]: 3, flag_q: 2}
        for cid in (a_id, b_id):
            path = local_offsets_path(cid, group, offsets_dir)
            assert path.is_file(), sorted(p.relative_to(offsets_dir) for p in offsets_dir.rglob("*"))
            assert decode_offsets(path.read_bytes()) == maxes
        # ... and not on the broker (Java: no commit offset in BROADCASTING pulls nor persists)
        for q in [*queues, flag_q]:
            try:
                assert await broker_offset(admin, group, q) == 0
            except BrokerError as exc:
                assert exc.response_code == 22  # QUERY_NOT_FOUND

        # a restarted member (same client id, same directory) resumes from its file
        later = [f"later-{i}" for i in range(4)]
        for i, body in enumerate(later):
            await sender.send(Message.build(topic, body), mq=queues[i % 2])
        received["a"].clear()
        a2 = member("a", (topic,))
        assert a2.client_id == a_id
        async with a2:
            await wait_until(lambda: len(received["a"]) >= 4, timeout=60, what="restarted member gets the new messages")
            await wait_until(
                lambda: (
                    {q: o for q, o in a2.committed_offsets().items() if q.topic == topic} == dict.fromkeys(queues, 5)
                ),
                timeout=30,
                what="restarted member's offsets at the end",
            )
        assert sorted(m.body.decode() for m in received["a"]) == later
        # the file has the new offsets, and still the one of the topic a2 did not subscribe
        assert decode_offsets(local_offsets_path(a_id, group, offsets_dir).read_bytes()) == {
            queues[0]: 5,
            queues[1]: 5,
            flag_q: 2,
        }


# ------------------------------------------------------------------------------ lite pull


async def poll_until(consumer: LitePullConsumer, n: int, timeout: float = 60.0) -> list[MessageExt]:
    got: list[MessageExt] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(got) < n:
        if loop.time() > deadline:
            raise AssertionError(f"polled {len(got)} of {n} messages in {timeout}s")
        got.extend(await consumer.poll(timeout=1))
    return got


async def test_lite_pull_assign(target: Target, senders: Callable[[list[MessageQueue]], QueueSender]) -> None:
    """LitePullConsumer.assign: poll in queue order, commit (sync, persisted) and committed on
    client and broker, seek / seek_to_begin / seek_to_end, offset_for_timestamp, resume from
    the committed offsets."""
    topic, group = unique("Logs"), unique("cg_lpa")
    async with Admin(target.namesrv_addr) as admin:
        q0, q1 = queues = await create_topic(admin, topic, 2)
        sender = senders(queues)
        bodies = {q0: [f"q0-{i}" for i in range(6)], q1: [f"q1-{i}" for i in range(4)]}
        last_ms = 0
        for i in range(6):
            for mq in queues:
                if i < len(bodies[mq]):
                    # distinct store timestamps inside a queue (offset_for_timestamp finds them exactly)
                    await wait_until(
                        lambda last_ms=last_ms: int(time.time() * 1000) > last_ms + 2, timeout=5, what="clock tick"
                    )
                    await sender.send(Message.build(topic, bodies[mq][i]), mq=mq)
                    last_ms = int(time.time() * 1000)

        consumer = LitePullConsumer(group, namesrv_addr=target.namesrv_addr, auto_commit=False, pull_batch_size=4)
        consumer.assign(queues)
        async with consumer:
            got = await poll_until(consumer, 10)
            assert len(got) == 10
            by_q: dict[MessageQueue, list[MessageExt]] = {
                mq: [m for m in got if m.queue_id == mq.queue_id] for mq in queues
            }
            for mq in queues:
                assert [m.body.decode() for m in by_q[mq]] == bodies[mq]
                assert [m.queue_offset for m in by_q[mq]] == list(range(len(bodies[mq])))
            assert await consumer.poll(timeout=0.5) == []

            # commit(): the polled offsets, sent to the broker now
            await consumer.commit(persist=True)
            assert await consumer.committed(q0) == 6 and await consumer.committed(q1) == 4
            assert await broker_offset(admin, group, q0) == 6 and await broker_offset(admin, group, q1) == 4

            # seek inside q0: the following messages start there
            await consumer.seek(q0, 2)
            again = await poll_until(consumer, 4)
            assert [(m.queue_id, m.queue_offset) for m in again] == [(q0.queue_id, o) for o in range(2, 6)]
            with pytest.raises(InvalidArgumentError):
                await consumer.seek(q0, 7)  # beyond the max offset (Java: "Seek offset illegal")

            # seek_to_begin / seek_to_end
            await consumer.seek_to_begin(q1)
            again = await poll_until(consumer, 4)
            assert [m.body.decode() for m in again] == bodies[q1]
            await consumer.seek_to_end(q0)
            assert await consumer.poll(timeout=0.5) == []
            await sender.send(Message.build(topic, b"q0-new"), mq=q0)
            (new,) = await poll_until(consumer, 1)
            assert (new.body, new.queue_id, new.queue_offset) == (b"q0-new", q0.queue_id, 6)

            # offset_for_timestamp: the message stored at a time
            for mq in queues:
                for m in by_q[mq]:
                    assert await consumer.offset_for_timestamp(mq, m.store_timestamp) == m.queue_offset
            assert await consumer.offset_for_timestamp(q0, by_q[q0][0].store_timestamp - 60_000) == 0

            # commit(map, persist): explicit offsets
            await consumer.commit({q0: 3, q1: 1}, persist=True)
            assert await consumer.committed(q0) == 3 and await consumer.committed(q1) == 1
            assert await broker_offset(admin, group, q0) == 3 and await broker_offset(admin, group, q1) == 1

        # a new member of the group resumes from the committed offsets
        resumed = LitePullConsumer(group, namesrv_addr=target.namesrv_addr, auto_commit=False)
        resumed.assign(queues)
        async with resumed:
            assert await resumed.committed(q0) == 3
            rest = await poll_until(resumed, 4 + 3)
        assert sorted((m.queue_id, m.queue_offset) for m in rest) == [(q0.queue_id, o) for o in range(3, 7)] + [
            (q1.queue_id, o) for o in range(1, 4)
        ]


async def test_lite_pull_subscribe(target: Target, senders: Callable[[list[MessageQueue]], QueueSender]) -> None:
    """LitePullConsumer.subscribe: one member polls every message; two members split the
    queues (disjoint, complete), each polls exactly its queues' messages; auto-committed
    offsets reach the broker."""
    topic = unique("Events")
    async with Admin(target.namesrv_addr) as admin:
        queues = await create_topic(admin, topic, 4)
        sender = senders(queues)
        first = {f"e{i}": queues[i % 4] for i in range(20)}
        for body, mq in first.items():
            await sender.send(Message.build(topic, body, tags="T"), mq=mq)

        solo_group = unique("cg_lps1")
        async with LitePullConsumer(
            solo_group, namesrv_addr=target.namesrv_addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ) as solo:
            solo.subscribe(topic, "T")
            got = await poll_until(solo, 20)
            assert solo.assignment() == queues
        assert sorted(m.body.decode() for m in got) == sorted(first)
        assert all(
            queues[m.queue_id].queue_id == m.queue_id and first[m.body.decode()].queue_id == m.queue_id for m in got
        )
        for mq in queues:  # auto commit at close
            assert await broker_offset(admin, solo_group, mq) == 5

        group = unique("cg_lps2")
        members = [
            LitePullConsumer(
                group,
                namesrv_addr=target.namesrv_addr,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                rebalance_interval=1.0,
            )
            for _ in range(2)
        ]
        for c in members:
            c.subscribe(topic, "*")
        a, b = members
        try:
            await a.start()
            await wait_until(lambda: a.assignment() == queues, timeout=30, what="a alone has every queue")
            await b.start()
            await wait_until(
                lambda: (
                    len(a.assignment()) == 2
                    and len(b.assignment()) == 2
                    and set(a.assignment()) | set(b.assignment()) == set(queues)
                ),
                timeout=60,
                what="the two members split the queues 2 + 2",
            )
            # nothing polled before the split: each member polls exactly its own queues, from the first
            # offset (a new group's offset on a fresh store is 0, on Apache and embedded alike)
            second = {f"n{i}": queues[i % 4] for i in range(20)}
            for body, mq in second.items():
                await sender.send(Message.build(topic, body), mq=mq)
            everything = {**first, **second}
            polled: dict[int, list[MessageExt]] = {0: [], 1: []}

            async def drain(k: int) -> None:
                own = set(members[k].assignment())
                polled[k] = await poll_until(members[k], sum(1 for mq in everything.values() if mq in own))

            await asyncio.gather(drain(0), drain(1))
            assert await a.poll(timeout=0.5) == [] and await b.poll(timeout=0.5) == []
            for k, c in enumerate(members):
                own = {mq.queue_id for mq in c.assignment()}
                assert {m.queue_id for m in polled[k]} == own
                assert sorted(m.body.decode() for m in polled[k]) == sorted(
                    body for body, mq in everything.items() if mq.queue_id in own
                )
        finally:
            for c in members:
                await c.close()
        assert len(polled[0]) == len(polled[1]) == 20
        for mq in queues:  # auto-committed at close
            assert await broker_offset(admin, group, mq) == 10


# ------------------------------------------------------------------------------ simple (POP)


async def test_simple_consumer_pop(target: Target, senders: Callable[[list[MessageQueue]], QueueSender]) -> None:
    """SimpleConsumer: receive with an invisible duration, ack, change_invisible_duration
    (visible again after the new duration, re-received with reconsume_times 1 and a new
    receipt handle), an unacked message visible again after its invisible time. Apache 4.9.x
    has no POP: receive raises PopNotSupportedError."""
    topic, group = unique("Jobs"), unique("cg_pop")
    async with Admin(target.namesrv_addr) as admin:
        queues = await create_topic(admin, topic, 2)
        sender = senders(queues)
        for i in range(3):
            await sender.send(Message.build(topic, f"job-{i}", tags="resize"), mq=queues[i % 2])

    consumer = SimpleConsumer(
        group,
        namesrv_addr=target.namesrv_addr,
        subscriptions={topic: "resize"},
        init_mode=ConsumeInitMode.MIN,
        await_duration=1,
    )
    if target.kind == "apache-4":
        async with consumer:
            with pytest.raises(PopNotSupportedError) as info:
                await consumer.receive(16, invisible_duration=10)
        assert info.value.response_code == 3  # REQUEST_CODE_NOT_SUPPORTED
        assert "POP" in str(info.value) and target.broker_addr in str(info.value)
        return

    loop = asyncio.get_running_loop()
    async with consumer:
        jobs: list[MessageExt] = []

        async def receive_all() -> bool:
            jobs.extend(await consumer.receive(16, invisible_duration=60))
            return len(jobs) >= 3

        await wait_until(receive_all, timeout=60, what="three jobs received")
        assert sorted(m.body for m in jobs) == [b"job-0", b"job-1", b"job-2"]
        assert all(m.reconsume_times == 0 and m.receipt_handle and m.topic == topic for m in jobs)
        done, slow, _dropped = sorted(jobs, key=lambda m: m.body)
        handles = {m.body: m.receipt_handle for m in jobs}

        await consumer.ack(done)
        t_change = loop.time()
        new_handle = await consumer.change_invisible_duration(slow, 2)
        assert new_handle != handles[b"job-1"] and slow.receipt_handle == new_handle

        # job-1 comes back after its new (short) invisible duration; job-2 is still invisible (60 s)
        again: list[MessageExt] = []

        async def receive_again() -> bool:
            again.extend(await consumer.receive(16, invisible_duration=3))
            return bool(again)

        await wait_until(receive_again, timeout=60, what="job-1 visible again")
        t_again = loop.time()
        assert [(m.body, m.reconsume_times) for m in again] == [(b"job-1", 1)]
        assert again[0].receipt_handle not in (handles[b"job-1"], new_handle)
        assert again[0].msg_id == slow.msg_id
        assert t_again - t_change >= 1.5

        # not acked: visible again after its invisible time (3 s), with reconsume_times 2;
        # job-0 (acked) never comes back, job-2 is still invisible (60 s from the first receive)
        third: list[MessageExt] = []

        async def receive_third() -> bool:
            third.extend(await consumer.receive(16, invisible_duration=30))
            return bool(third)

        await wait_until(receive_third, timeout=60, what="unacked job-1 visible again")
        assert loop.time() - t_again >= 2.5
        assert [(m.body, m.reconsume_times) for m in third] == [(b"job-1", 2)]
        assert third[0].receipt_handle != again[0].receipt_handle
        await consumer.ack(third[0])
