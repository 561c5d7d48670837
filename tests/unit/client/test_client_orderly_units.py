"""Orderly consumption, pure parts: OrderlyProcessQueue, result processing, suspend clamp."""

from __future__ import annotations

import doctest

from rocketpipe.client._tasks import TaskOwner
from rocketpipe.client.consumer import orderly
from rocketpipe.client.consumer.orderly import (
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    MessageListenerOrderly,
    OrderlyDispatcher,
    OrderlyProcessQueue,
)
from rocketpipe.protocol.message import MessageExt, MessageQueue

MQ = MessageQueue("T", "b", 0)
S = ConsumeOrderlyStatus


def msgs(*offsets: int) -> list[MessageExt]:
    return [MessageExt(topic="T", body=b"x", queue_id=0, queue_offset=o) for o in offsets]


def test_doctests() -> None:
    r = doctest.testmod(orderly)
    assert r.attempted >= 2 and r.failed == 0


def test_take_commit_rollback() -> None:
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(5, 6, 7, 8))
    batch = pq.take_messages(2)
    assert [m.queue_offset for m in batch] == [5, 6]
    assert [m.queue_offset for m in pq.take_messages(2)] == [5, 6]  # not consumed yet: same head
    assert pq.commit(batch) == 7 and pq.msg_count == 2
    nxt = pq.take_messages(1)
    pq.mark_consumed(nxt)  # auto_commit=False SUCCESS
    assert [m.queue_offset for m in pq.take_messages(5)] == [8]
    assert pq.has_uncommitted()
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(5)] == [7, 8]
    pq.mark_consumed(pq.take_messages(2))
    assert pq.commit() == 9 and pq.is_empty() and not pq.has_uncommitted()


def test_lock_expiry() -> None:
    pq = OrderlyProcessQueue(0.0)
    assert not pq.locked
    pq.mark_locked(100.0)
    assert pq.locked and not pq.is_lock_expired(130.0) and pq.is_lock_expired(130.1)


def make_dispatcher(
    max_reconsume: int = -1, send_ok: bool = True
) -> tuple[OrderlyDispatcher, dict[MessageQueue, int], list[int]]:
    offsets: dict[MessageQueue, int] = {}
    sent: list[int] = []

    async def send_back(m: MessageExt, mx: int) -> bool:
        sent.append(m.queue_offset)
        return send_ok

    d = OrderlyDispatcher(
        "g",
        lambda ms, ctx: S.SUCCESS,
        offsets.__setitem__,
        send_back,
        None,
        TaskOwner("t"),
        consume_thread_max=1,
        consume_message_batch_max_size=2,
        suspend_current_queue_time_millis=1000,
        max_reconsume_times=max_reconsume,
        now_ms=lambda: 0,
    )
    return d, offsets, sent


async def test_success_commits_and_suspend_keeps_batch() -> None:
    d, offsets, sent = make_dispatcher()
    assert d.max_reconsume_times == 2**31 - 1  # orderly default
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(0, 1, 2))
    batch = pq.take_messages(2)
    delay = await d._process_result(batch, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyContext(MQ), pq, MQ)
    assert delay == 1.0 and offsets == {} and [m.reconsume_times for m in batch] == [1, 1]
    assert pq.take_messages(2) == batch  # the same batch comes next
    ctx = ConsumeOrderlyContext(MQ, suspend_current_queue_time_millis=5)
    assert await d._process_result(batch, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, ctx, pq, MQ) == 0.01  # clamped to 10 ms
    assert await d._process_result(batch, S.SUCCESS, ConsumeOrderlyContext(MQ), pq, MQ) is None
    assert offsets == {MQ: 2} and sent == []
    # COMMIT / ROLLBACK with auto_commit behave like SUCCESS
    assert await d._process_result(pq.take_messages(2), S.ROLLBACK, ConsumeOrderlyContext(MQ), pq, MQ) is None
    assert offsets == {MQ: 3}


async def test_manual_commit_mode() -> None:
    d, offsets, _ = make_dispatcher()
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(0, 1, 2, 3))
    manual = ConsumeOrderlyContext(MQ, auto_commit=False)
    assert await d._process_result(pq.take_messages(2), S.SUCCESS, manual, pq, MQ) is None
    assert offsets == {}
    assert await d._process_result(pq.take_messages(1), S.ROLLBACK, manual, pq, MQ) == 1.0
    assert [m.queue_offset for m in pq.take_messages(4)] == [0, 1, 2, 3]  # rolled back to the last commit
    assert await d._process_result(pq.take_messages(3), S.COMMIT, manual, pq, MQ) is None
    assert offsets == {MQ: 3}


async def test_max_reconsume_times_sends_back_then_commits() -> None:
    d, offsets, sent = make_dispatcher(max_reconsume=1)
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(0, 1))
    batch = pq.take_messages(2)
    assert await d._process_result(batch, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyContext(MQ), pq, MQ) == 1.0
    assert sent == [] and [m.reconsume_times for m in batch] == [1, 1]
    assert await d._process_result(batch, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyContext(MQ), pq, MQ) is None
    assert sent == [0, 1] and offsets == {MQ: 2}


async def test_failed_send_back_suspends() -> None:
    d, offsets, sent = make_dispatcher(max_reconsume=0, send_ok=False)
    pq = OrderlyProcessQueue(0.0)
    pq.put_messages(msgs(0))
    batch = pq.take_messages(1)
    assert await d._process_result(batch, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, ConsumeOrderlyContext(MQ), pq, MQ) == 1.0
    assert sent == [0] and offsets == {} and batch[0].reconsume_times == 1


async def test_listener_outcomes_map_to_suspend() -> None:
    def boom(ms: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        raise RuntimeError("x")

    async def none(ms: list[MessageExt], ctx: ConsumeOrderlyContext) -> None:
        return None

    for fn in (boom, none, MessageListenerOrderly(none)):
        d = OrderlyDispatcher(
            "g",
            fn,
            lambda mq, o: None,
            None,
            None,
            TaskOwner("t"),  # type: ignore[arg-type]
            consume_thread_max=1,
            consume_message_batch_max_size=1,
            suspend_current_queue_time_millis=1000,
            max_reconsume_times=-1,
            now_ms=lambda: 0,
        )
        assert await d._call_listener(msgs(0), ConsumeOrderlyContext(MQ)) is S.SUSPEND_CURRENT_QUEUE_A_MOMENT
        await d.close()
    assert MessageListenerOrderly(none).is_async and not MessageListenerOrderly(boom).is_async
