"""Consume-result processing of the concurrent dispatcher (ack index, send-back, offsets)."""

from __future__ import annotations

import asyncio
import doctest

from rocketpipe.client._tasks import TaskOwner
from rocketpipe.client.consumer import concurrent
from rocketpipe.client.consumer.concurrent import ConcurrentDispatcher, ConsumeRequest
from rocketpipe.client.consumer.listener import ConsumeConcurrentlyContext
from rocketpipe.client.consumer.listener import ConsumeConcurrentlyStatus as S
from rocketpipe.client.consumer.offsets import RemoteOffsetStore
from rocketpipe.client.consumer.process_queue import ProcessQueue
from rocketpipe.protocol.message import MessageExt, MessageQueue
from waiting import wait_until

MQ = MessageQueue("T", "b", 0)


def test_doctests() -> None:
    assert doctest.testmod(concurrent).failed == 0


async def _noop_query(mq: MessageQueue) -> int:
    return 0


async def _noop_commit(mq: MessageQueue, offset: int, oneway: bool) -> None:
    return None


def make(send_back_ok: bool) -> tuple[ConcurrentDispatcher, RemoteOffsetStore, list[int], TaskOwner]:
    store = RemoteOffsetStore(_noop_query, _noop_commit)
    sent: list[int] = []

    async def send_back(m: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        sent.append(m.queue_offset)
        return send_back_ok

    tasks = TaskOwner("t")
    d = ConcurrentDispatcher(
        "g",
        lambda msgs, ctx: S.CONSUME_SUCCESS,
        store,
        send_back,
        tasks,
        consume_thread_max=2,
        consume_message_batch_max_size=4,
        now_ms=lambda: 0,
    )
    return d, store, sent, tasks


async def test_success_with_ack_index_sends_back_the_rest() -> None:
    d, store, sent, tasks = make(True)
    await tasks.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(4)]
    pq.put_messages(msgs)
    ctx = ConsumeConcurrentlyContext(message_queue=MQ, ack_index=1)
    await d.process_consume_result(S.CONSUME_SUCCESS, ctx, ConsumeRequest(msgs, pq, MQ))
    assert sent == [2, 3]
    assert store.read_memory(MQ) == 4  # everything left the ProcessQueue
    assert (d.consumed_ok, d.consumed_failed) == (2, 2)
    await tasks.close()


async def test_failed_send_back_keeps_message_and_offset() -> None:
    d, store, sent, tasks = make(False)
    await tasks.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(3)]
    pq.put_messages(msgs)
    await d.process_consume_result(
        S.RECONSUME_LATER, ConsumeConcurrentlyContext(message_queue=MQ), ConsumeRequest(msgs, pq, MQ)
    )
    assert sent == [0, 1, 2]
    assert pq.msg_count == 3  # kept for the local re-consume in 5 s
    assert store.read_memory(MQ) == 0  # commit offset stays at the oldest kept message
    assert all(m.reconsume_times == 1 for m in msgs)
    await tasks.close()


async def test_listener_batches_and_sync_listener_in_threads() -> None:
    store = RemoteOffsetStore(_noop_query, _noop_commit)
    seen: list[list[int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S:
        seen.append([m.queue_offset for m in msgs])
        return S.CONSUME_SUCCESS

    async def send_back(m: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        raise AssertionError("nothing should be sent back")

    tasks = TaskOwner("t")
    await tasks.start()
    d = ConcurrentDispatcher(
        "g", listener, store, send_back, tasks, consume_thread_max=3, consume_message_batch_max_size=2, now_ms=lambda: 0
    )
    d.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="%RETRY%g", body=b"x", queue_offset=i, properties={"RETRY_TOPIC": "T"}) for i in range(5)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)
    await wait_until(lambda: store.read_memory(MQ) == 5, timeout=10, what="every offset committed in memory")
    assert store.read_memory(MQ) == 5
    assert sorted(len(b) for b in seen) == [1, 2, 2]
    assert all(m.topic == "T" for m in msgs)  # retry topic restored before the listener
    await d.close()
    await tasks.close()


async def test_sync_listener_backlog_shares_thread_hops_one_call_per_batch() -> None:
    store = RemoteOffsetStore(_noop_query, _noop_commit)
    seen: list[tuple[int, ...]] = []
    contexts: set[int] = set()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S | None:
        seen.append(tuple(m.queue_offset for m in msgs))
        contexts.add(id(ctx))
        if msgs[0].queue_offset == 7:
            raise RuntimeError("boom")  # this batch only: RECONSUME_LATER, then sent back
        if msgs[0].queue_offset == 9:
            return None  # not a status: RECONSUME_LATER
        return S.CONSUME_SUCCESS

    sent: list[int] = []

    async def send_back(m: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        sent.append(m.queue_offset)
        return True

    tasks = TaskOwner("t")
    await tasks.start()
    d = ConcurrentDispatcher(
        "g", listener, store, send_back, tasks, consume_thread_max=2, consume_message_batch_max_size=1, now_ms=lambda: 0
    )
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(200)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)  # a backlog before the workers start: hops carry several calls
    d.start()
    await wait_until(lambda: store.read_memory(MQ) == 200, timeout=10, what="every offset committed in memory")
    assert store.read_memory(MQ) == 200
    assert sorted(seen) == [(i,) for i in range(200)]  # one listener call per batch
    assert len(contexts) >= 1 and sorted(sent) == [7, 9]
    assert (d.consumed_ok, d.consumed_failed) == (198, 2)
    await d.close()
    await tasks.close()


def async_dispatcher(
    listener: object, threads: int = 3, batch: int = 1, send_back_ok: bool = True
) -> tuple[ConcurrentDispatcher, RemoteOffsetStore, list[int], TaskOwner]:
    store = RemoteOffsetStore(_noop_query, _noop_commit)
    sent: list[int] = []

    async def send_back(m: MessageExt, ctx: ConsumeConcurrentlyContext) -> bool:
        sent.append(m.queue_offset)
        return send_back_ok

    tasks = TaskOwner("t")
    d = ConcurrentDispatcher(
        "g",
        listener,  # type: ignore[arg-type]
        store,
        send_back,
        tasks,
        consume_thread_max=threads,
        consume_message_batch_max_size=batch,
        now_ms=lambda: 1234,
    )
    return d, store, sent, tasks


async def test_async_listener_that_never_waits_is_settled_per_run_with_the_same_results() -> None:
    seen: list[tuple[int, ...]] = []
    stamps: set[str] = set()

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S:
        seen.append(tuple(m.queue_offset for m in msgs))
        stamps.update(m.properties["CONSUME_START_TIME"] for m in msgs)
        assert all(m.topic == "T" for m in msgs)  # retry topic restored before the call
        msgs.clear()  # the listener's list is its own
        return S.CONSUME_SUCCESS

    d, store, _, tasks = async_dispatcher(listener, batch=2)
    await tasks.start()
    d.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="%RETRY%g", body=b"x", queue_offset=i, properties={"RETRY_TOPIC": "T"}) for i in range(7)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)
    assert d.pending() == 4
    await wait_until(lambda: store.read_memory(MQ) == 7, timeout=10, what="every offset committed in memory")
    assert seen == [(0, 1), (2, 3), (4, 5), (6,)] and stamps == {"1234"}
    assert (pq.msg_count, d.consumed_ok, d.consumed_failed, d.pending()) == (0, 7, 0, 0)
    st = d.stats.consume_status("g", "T")  # counted under the queue's topic (MQ)
    assert st["consumeOKTPS"] > 0.0 and st["consumeFailedMsgs"] == 0 and st["consumeRT"] >= 0.0
    await d.close()
    await tasks.close()


async def test_async_listener_failures_waits_and_errors_take_the_per_call_path() -> None:
    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S | None:
        off = msgs[0].queue_offset
        if off % 3 == 1:
            await asyncio.sleep(0)  # waits: finished as an awaitable
        if off == 4:
            raise RuntimeError("boom")  # after a wait: RECONSUME_LATER
        if off == 5:
            return S.RECONSUME_LATER
        if off == 6:
            return None  # not a status
        if off == 8:
            ctx.ack_index = -1  # success with nothing acknowledged
        return S.CONSUME_SUCCESS

    d, store, sent, tasks = async_dispatcher(listener, threads=2)
    await tasks.start()
    d.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(12)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)
    await wait_until(lambda: store.read_memory(MQ) == 12, timeout=10, what="every offset committed in memory")
    assert sorted(sent) == [4, 5, 6, 8]
    assert (d.consumed_ok, d.consumed_failed, pq.msg_count) == (8, 4, 0)
    assert d.stats.consume_status("g", "T")["consumeFailedMsgs"] == 4
    await d.close()
    await tasks.close()


async def test_async_listeners_that_wait_still_run_side_by_side() -> None:
    release = asyncio.Event()
    running = 0
    peak = 0

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return S.CONSUME_SUCCESS

    d, store, _, tasks = async_dispatcher(listener, threads=3)
    await tasks.start()
    d.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(6)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)
    await wait_until(lambda: running == 3, timeout=10, what="one call per worker in flight")
    release.set()
    await wait_until(lambda: store.read_memory(MQ) == 6, timeout=10, what="every offset committed in memory")
    assert peak == 3 and d.consumed_ok == 6
    await d.close()
    await tasks.close()


async def test_calls_before_a_wait_are_settled_before_anything_else_runs() -> None:
    # offsets 0-1 finish at once; 2 waits, and the queue is dropped meanwhile: 0-1 count and
    # move the offset (as they did before the drop), 2's result is discarded
    gate = asyncio.Event()
    waiting = asyncio.Event()

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S:
        if msgs[0].queue_offset == 2:
            waiting.set()
            await gate.wait()
        return S.CONSUME_SUCCESS

    d, store, _, tasks = async_dispatcher(listener, threads=1)
    await tasks.start()
    d.start()
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(4)]
    pq.put_messages(msgs)
    d.submit(msgs, pq, MQ)
    await waiting.wait()
    assert (store.read_memory(MQ), d.consumed_ok, pq.msg_count) == (2, 2, 2)
    assert d.stats.consume_status("g", "T")["consumeOKTPS"] > 0.0
    pq.dropped = True
    gate.set()
    await wait_until(lambda: d.pending() == 0, timeout=10, what="the queue drained")
    await d.close()
    assert (store.read_memory(MQ), d.consumed_ok, pq.msg_count) == (2, 2, 2)
    await tasks.close()


async def test_runs_of_two_queues_settle_per_queue() -> None:
    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> S:
        return S.CONSUME_SUCCESS

    d, store, _, tasks = async_dispatcher(listener, threads=1)
    await tasks.start()
    mq2 = MessageQueue("T2", "b", 1)
    pq1, pq2 = ProcessQueue(), ProcessQueue()
    m1 = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(3)]
    m2 = [MessageExt(topic="T2", body=b"x", queue_offset=10 + i) for i in range(2)]
    pq1.put_messages(m1)
    pq2.put_messages(m2)
    d.submit(m1, pq1, MQ)
    d.submit(m2, pq2, mq2)
    d.submit(m1[:0], pq1, MQ)
    d.start()
    await wait_until(lambda: store.read_memory(mq2) == 12, timeout=10, what="both queues committed")
    assert store.read_memory(MQ) == 3 and d.consumed_ok == 5
    assert d.stats.consume_status("g", "T")["consumeOKTPS"] > 0.0
    assert d.stats.consume_status("g", "T2")["consumeOKTPS"] > 0.0
    await d.close()
    await tasks.close()
