"""Consume-result processing of the concurrent dispatcher (ack index, send-back, offsets)."""

from __future__ import annotations

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
