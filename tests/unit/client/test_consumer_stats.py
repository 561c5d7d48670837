"""Consume statistics (``ConsumerStatsManager``): windows on a FakeClock, the ``ConsumeStatus``
keys, the dispatchers' increments, and the shared listener runner."""

from __future__ import annotations

import asyncio

import pytest

from rocketpipe.client._tasks import TaskOwner
from rocketpipe.client.consumer.concurrent import ConcurrentDispatcher, ConsumeRequest
from rocketpipe.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ListenerRunner
from rocketpipe.client.consumer.offsets import RemoteOffsetStore
from rocketpipe.client.consumer.orderly import (
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    OrderlyDispatcher,
    OrderlyProcessQueue,
)
from rocketpipe.client.consumer.process_queue import ProcessQueue
from rocketpipe.client.consumer.stats import ConsumerStats, StatsWindow, zero_consume_status
from rocketpipe.protocol.message import MessageExt, MessageQueue
from rocketpipe.testing import FakeClock

C = ConsumeConcurrentlyStatus
OS = ConsumeOrderlyStatus
#: a multiple of one hour: bucket boundaries fall on whole seconds / minutes from here
T0 = 1_700_002_800_000
assert T0 % 3_600_000 == 0
KEYS = ["consumeFailedMsgs", "consumeFailedTPS", "consumeOKTPS", "consumeRT", "pullRT", "pullTPS"]


def clock_at(t: int = T0) -> FakeClock:
    c = FakeClock()
    c.set(t)
    return c


def test_unknown_topic_reads_zeros_with_javas_keys() -> None:
    st = ConsumerStats(clock_at()).consume_status("g", "T")
    assert sorted(st) == KEYS and st == zero_consume_status()
    assert isinstance(st["consumeFailedMsgs"], int)


def test_tps_covers_the_time_since_the_first_increment_then_the_minute() -> None:
    clock = clock_at()
    stats = ConsumerStats(clock)
    stats.inc_consume_ok_tps("g", "T", 30)
    assert stats.consume_status("g", "T")["consumeOKTPS"] == 30.0  # at least one 1 s bucket
    clock.advance(10)
    assert stats.consume_status("g", "T")["consumeOKTPS"] == 3.0
    for _ in range(60):  # 6 msgs a second for a minute
        clock.advance(1)
        stats.inc_consume_ok_tps("g", "T", 6)
    # the first 30 fell out of the window: 60 buckets x 6 msgs over 60 s
    assert stats.consume_status("g", "T")["consumeOKTPS"] == pytest.approx(6.0)
    clock.advance(61)
    assert stats.consume_status("g", "T")["consumeOKTPS"] == 0.0


def test_window_edges_are_bucket_aligned() -> None:
    w = StatsWindow(1_000, 60)
    w.add(T0, 5)
    assert w.snapshot(T0 + 59_999).sum == 5  # bucket T0 is the 60th of the window
    assert w.snapshot(T0 + 60_000).sum == 0
    w.add(T0 + 120_000, 1)  # reuses the same ring slot: the old value is gone
    assert w.snapshot(T0 + 120_000).sum == 1 and w.snapshot(T0 + 120_000).times == 1
    with pytest.raises(ValueError):
        StatsWindow(0)


def test_rt_is_the_average_per_call_and_separate_per_topic_and_group() -> None:
    clock = clock_at()
    stats = ConsumerStats(clock)
    for rt in (10, 20, 30):
        stats.inc_pull_rt("g", "T", rt)
        stats.inc_consume_rt("g", "T", rt / 10)
    stats.inc_pull_tps("g", "T", 32)
    stats.inc_pull_rt("other", "T", 1000)
    stats.inc_pull_rt("g", "U", 1000)
    clock.advance(2)
    st = stats.consume_status("g", "T")
    assert st["pullRT"] == 20.0 and st["consumeRT"] == 2.0
    assert st["pullTPS"] == 16.0  # 32 messages over the 2 s since the first increment
    assert stats.consume_status("other", "T")["pullRT"] == 1000.0
    assert stats.consume_status("g", "U")["pullTPS"] == 0.0


def test_consume_rt_falls_back_to_the_hour_and_failed_msgs_count_the_hour() -> None:
    clock = clock_at()
    stats = ConsumerStats(clock)
    stats.inc_consume_rt("g", "T", 8)
    stats.inc_consume_rt("g", "T", 4)
    stats.inc_consume_failed_tps("g", "T", 5)
    clock.advance(30 * 60)
    stats.inc_consume_failed_tps("g", "T", 3)
    st = stats.consume_status("g", "T")
    assert st["consumeRT"] == 6.0  # nothing in the last minute: the hour's average
    assert st["consumeFailedMsgs"] == 8 and st["consumeFailedTPS"] == pytest.approx(3 / 60)
    clock.advance(31 * 60)  # the first 5 are more than an hour old
    st = stats.consume_status("g", "T")
    assert st["consumeFailedMsgs"] == 3 and st["consumeFailedTPS"] == 0.0 and st["consumeRT"] == 0.0


def test_a_clock_going_backwards_never_raises() -> None:
    clock = clock_at()
    stats = ConsumerStats(clock)
    stats.inc_consume_ok_tps("g", "T", 4)
    clock.set(T0 - 5_000)
    stats.inc_consume_ok_tps("g", "T", 1)
    st = stats.consume_status("g", "T")
    assert st["consumeOKTPS"] >= 0.0


# --------------------------------------------------------------------------- dispatchers

MQ = MessageQueue("T", "b", 0)
RETRY_MQ = MessageQueue("%RETRY%g", "b", 0)


async def _q(mq: MessageQueue) -> int:
    return 0


async def _c(mq: MessageQueue, offset: int, oneway: bool) -> None:
    return None


def msgs(*offsets: int, topic: str = "T") -> list[MessageExt]:
    return [MessageExt(topic=topic, body=b"x", queue_offset=o) for o in offsets]


async def test_concurrent_counts_ok_failed_and_rt_where_java_does() -> None:
    clock = clock_at()

    def listener(batch: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if batch[0].queue_offset == 0:
            ctx.ack_index = 0  # 1 ok, 1 failed
            return C.CONSUME_SUCCESS
        return C.RECONSUME_LATER

    async def send_back(m: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        return True

    tasks = TaskOwner("t")
    await tasks.start()
    d = ConcurrentDispatcher(
        "g",
        listener,
        RemoteOffsetStore(_q, _c),
        send_back,
        tasks,
        consume_thread_max=1,
        consume_message_batch_max_size=2,
        now_ms=clock.now_ms,
    )
    try:
        pq = ProcessQueue()
        batch = msgs(0, 1) + msgs(2, 3)
        pq.put_messages(batch)
        await d._consume(ConsumeRequest(batch[:2], pq, MQ))
        await d._consume_in_one_hop([ConsumeRequest(batch[2:], pq, MQ)])
        st = d.stats.consume_status("g", "T")
        assert st["consumeFailedMsgs"] == 3  # 1 past ack_index + 2 RECONSUME_LATER
        assert st["consumeOKTPS"] == 1.0 and st["consumeFailedTPS"] == 3.0
        assert st["consumeRT"] > 0.0  # two timed calls through the thread pool
        # a retry message is counted under the retry queue's topic
        rpq = ProcessQueue()
        retry = msgs(0, topic="%RETRY%g")
        rpq.put_messages(retry)
        await d.process_consume_result(
            C.CONSUME_SUCCESS, ConsumeConcurrentlyContext(RETRY_MQ), ConsumeRequest(retry, rpq, RETRY_MQ)
        )
        assert d.stats.consume_status("g", "%RETRY%g")["consumeOKTPS"] == 1.0
        # a dropped queue: the call is timed, the result is not counted
        dpq = ProcessQueue()
        dropped = msgs(9)
        dpq.put_messages(dropped)
        req = ConsumeRequest(dropped, dpq, MessageQueue("D", "b", 0))
        dpq.dropped = True
        await d._finish(req, ConsumeConcurrentlyContext(req.mq), C.CONSUME_SUCCESS, 5.0)
        st = d.stats.consume_status("g", "D")
        assert st["consumeRT"] == 5.0 and st["consumeOKTPS"] == 0.0
    finally:
        await d.close()
        await tasks.close()


async def test_shared_stats_object_is_used_when_given() -> None:
    stats = ConsumerStats(clock_at())
    d = ConcurrentDispatcher(
        "g",
        lambda ms, ctx: C.CONSUME_SUCCESS,
        RemoteOffsetStore(_q, _c),
        None,
        TaskOwner("t"),  # type: ignore[arg-type]
        consume_thread_max=1,
        consume_message_batch_max_size=1,
        now_ms=lambda: 0,
        stats=stats,
    )
    assert d.stats is stats


async def test_orderly_counts_per_status_as_java() -> None:
    clock = clock_at()
    offsets: dict[MessageQueue, int] = {}

    async def send_back(m: MessageExt, mx: int) -> bool:
        return True

    async def listener(batch: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        return OS.SUCCESS

    d = OrderlyDispatcher(
        "g",
        listener,
        offsets.__setitem__,
        send_back,
        None,
        TaskOwner("t"),
        consume_thread_max=1,
        consume_message_batch_max_size=2,
        suspend_current_queue_time_millis=1000,
        max_reconsume_times=-1,
        now_ms=clock.now_ms,
    )
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(0, 1, 2, 3, 4, 5))
    b = pq.take_messages(2)
    assert await d._call_listener(b, ConsumeOrderlyContext(MQ)) is OS.SUCCESS
    assert await d._process_result(b, OS.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyContext(MQ), pq, MQ) == 1.0
    assert await d._process_result(b, OS.SUCCESS, ConsumeOrderlyContext(MQ), pq, MQ) is None
    manual = ConsumeOrderlyContext(MQ, auto_commit=False)
    assert await d._process_result(pq.take_messages(2), OS.COMMIT, manual, pq, MQ) is None  # counts nothing
    assert await d._process_result(pq.take_messages(2), OS.ROLLBACK, manual, pq, MQ) == 1.0  # counts nothing
    st = d.stats.consume_status("g", "T")
    assert st["consumeOKTPS"] == 2.0 and st["consumeFailedMsgs"] == 2 and st["consumeRT"] > 0.0
    await d.close()


# --------------------------------------------------------------------------- the listener runner


def runner(listener: object, threads: int = 2) -> ListenerRunner[ConsumeConcurrentlyStatus]:
    return ListenerRunner(
        listener, status_type=C, failure=C.RECONSUME_LATER, group="g", max_threads=threads, thread_name_prefix="t"
    )


async def test_runner_maps_outcomes_and_times_each_call() -> None:
    ctx = ConsumeConcurrentlyContext(MQ)

    def boom(ms: list[MessageExt], c: object) -> C:
        raise RuntimeError("x")

    async def later(ms: list[MessageExt], c: object) -> C:
        await asyncio.sleep(0)
        return C.CONSUME_SUCCESS

    def returns_coroutine(ms: list[MessageExt], c: object) -> object:
        return later(ms, c)

    cases: list[tuple[object, C]] = [
        (boom, C.RECONSUME_LATER),
        (lambda ms, c: None, C.RECONSUME_LATER),
        (lambda ms, c: "CONSUME_SUCCESS", C.RECONSUME_LATER),  # not the enum
        (later, C.CONSUME_SUCCESS),
        (returns_coroutine, C.CONSUME_SUCCESS),
        (lambda ms, c: C.CONSUME_SUCCESS, C.CONSUME_SUCCESS),
    ]
    for fn, expected in cases:
        r = runner(fn)
        status, rt = await r.call(msgs(0), ctx)
        assert status is expected and rt >= 0.0, fn
        r.close()
    assert runner(later).is_async and not runner(boom).is_async


async def test_runner_one_hop_keeps_order_and_per_call_outcomes() -> None:
    seen: list[int] = []

    def fn(ms: list[MessageExt], c: ConsumeConcurrentlyContext) -> C | None:
        seen.append(ms[0].queue_offset)
        if ms[0].queue_offset == 1:
            raise ValueError("bad")
        return None if ms[0].queue_offset == 2 else C.CONSUME_SUCCESS

    r = runner(fn)
    out = await r.call_in_one_hop([(msgs(i), ConsumeConcurrentlyContext(MQ)) for i in range(4)])
    r.close()
    assert seen == [0, 1, 2, 3]
    assert [o.status for o in out] == [C.CONSUME_SUCCESS, C.RECONSUME_LATER, C.RECONSUME_LATER, C.CONSUME_SUCCESS]
    assert all(o.rt_ms >= 0.0 for o in out)


def test_one_record_of_many_calls_reads_as_the_calls_one_by_one() -> None:
    clock = clock_at()
    one_by_one, at_once = ConsumerStats(clock), ConsumerStats(clock)
    for rt, ok, failed in ((2.0, 1, 0), (4.0, 1, 0), (9.0, 0, 1)):
        one_by_one.inc_consume_rt("g", "T", rt)
        one_by_one.inc_consume_ok_tps("g", "T", ok)
        one_by_one.inc_consume_failed_tps("g", "T", failed)
    at_once.inc_consumed("g", "T", 15.0, 3, 2, 1)
    assert at_once.consume_status("g", "T") == one_by_one.consume_status("g", "T")
    assert at_once.consume_status("g", "T")["consumeRT"] == 5.0
    rt_only = ConsumerStats(clock)
    rt_only.inc_consume_rt("g", "T", 15.0, calls=3)
    assert rt_only.consume_status("g", "T")["consumeRT"] == 5.0


async def test_runner_eager_call_finishes_on_the_spot_or_hands_over_an_awaitable() -> None:
    ctx = ConsumeConcurrentlyContext(MQ)
    suspended: list[str] = []

    def note() -> None:
        suspended.append("x")

    async def now(ms: list[MessageExt], c: object) -> C:
        return C.CONSUME_SUCCESS

    async def boom(ms: list[MessageExt], c: object) -> C:
        raise RuntimeError("x")

    async def not_a_status(ms: list[MessageExt], c: object) -> object:
        return "CONSUME_SUCCESS"

    async def waits(ms: list[MessageExt], c: object) -> C:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return C.CONSUME_SUCCESS

    async def waits_then_raises(ms: list[MessageExt], c: object) -> C:
        await asyncio.sleep(0)
        raise ValueError("late")

    for fn, expected in ((now, C.CONSUME_SUCCESS), (boom, C.RECONSUME_LATER), (not_a_status, C.RECONSUME_LATER)):
        assert runner(fn).call_eagerly(msgs(0), ctx, note) is expected, fn
    assert suspended == []
    for fn, expected in ((waits, C.CONSUME_SUCCESS), (waits_then_raises, C.RECONSUME_LATER)):
        rest = runner(fn).call_eagerly(msgs(0), ctx, note)
        assert not isinstance(rest, C) and suspended == ["x"]
        assert await rest is expected
        suspended.clear()

    class Awaitable:
        def __await__(self) -> object:
            return waits([], ctx).__await__()

    class Listener:
        is_async = True

        def __call__(self, ms: list[MessageExt], c: object) -> Awaitable:
            return Awaitable()

    rest = runner(Listener()).call_eagerly(msgs(0), ctx, note)
    assert suspended == ["x"] and await rest is C.CONSUME_SUCCESS  # type: ignore[misc]


async def test_runner_eager_call_that_waits_can_be_cancelled() -> None:
    started = asyncio.Event()
    cleaned: list[str] = []

    async def forever(ms: list[MessageExt], c: object) -> C:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("done")
        return C.CONSUME_SUCCESS

    async def call() -> C:
        rest = runner(forever).call_eagerly(msgs(0), ConsumeConcurrentlyContext(MQ), lambda: None)
        assert not isinstance(rest, C)
        return await rest

    task = asyncio.ensure_future(call())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["done"]
