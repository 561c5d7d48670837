"""Concurrent dispatch: batching, listener calls, ack / send-back / offset advance (L3).

Mirrors ``ConsumeMessageConcurrentlyService``: pulled messages are cut into batches of
``consume_message_batch_max_size``; ``consume_thread_max`` worker tasks take batches from a
queue and call the listener (``async def`` listeners directly, plain functions in a bounded
thread pool of the same size; from a backlog, one thread hop carries up to
:data:`MAX_CALLS_PER_HOP` listener calls, each with its own batch and context). Then
``process_consume_result``: messages after ``ack_index`` are sent back
(CONSUMER_SEND_MSG_BACK); messages whose send-back failed stay in the
ProcessQueue and are consumed again locally after 5 s; the others leave the ProcessQueue and
the offset store advances to :meth:`ProcessQueue.remove_messages`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from ...protocol.message import PROPERTY_CONSUME_START_TIMESTAMP, MessageExt, MessageQueue
from .._tasks import TaskOwner
from .listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, MessageListenerConcurrently
from .offsets import RemoteOffsetStore
from .process_queue import ProcessQueue
from .retry import restore_retry_topic

log = logging.getLogger(__name__)

#: Delay of the local re-consume after a failed send-back (Java: 5 000 ms).
LOCAL_RETRY_DELAY: Final = 5.0
#: Most listener calls of a plain-function listener made in one thread-pool hop. A worker takes
#: extra batches only from a backlog (more queued batches than workers), so no batch waits
#: behind another while a worker is idle; each call still gets its own batch and context.
MAX_CALLS_PER_HOP: Final = 16

SendBack = Callable[[MessageExt, ConsumeConcurrentlyContext], Awaitable[bool]]
"""``(msg, context) -> True`` when the broker (or the retry topic) took the message."""


@dataclass(slots=True)
class ConsumeRequest:
    """One listener call's worth of messages of one queue."""

    msgs: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue


def ack_index_for(status: ConsumeConcurrentlyStatus, context_ack_index: int, size: int) -> int:
    """Return the index of the last acknowledged message (−1: none).

    Mirrors ``processConsumeResult``: CONSUME_SUCCESS → ``min(ack_index, size − 1)``;
    RECONSUME_LATER → −1.

    >>> ack_index_for(ConsumeConcurrentlyStatus.CONSUME_SUCCESS, 2**31 - 1, 3)
    2
    >>> ack_index_for(ConsumeConcurrentlyStatus.CONSUME_SUCCESS, 0, 3)
    0
    >>> ack_index_for(ConsumeConcurrentlyStatus.RECONSUME_LATER, 2**31 - 1, 3)
    -1
    """
    if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
        return min(max(context_ack_index, -1), size - 1)
    return -1


class ConcurrentDispatcher:
    """Runs a concurrent listener over pulled messages with bounded parallelism.

    Args:
        group: the consumer group (to restore retry topics).
        listener: the user listener.
        offset_store: where finished offsets go.
        send_back: CONSUMER_SEND_MSG_BACK (with fallback) for failed messages.
        tasks: the consumer's task owner (workers and delayed re-submits live there).
        consume_thread_max: worker count and thread-pool size. Mirrors
            ``DefaultMQPushConsumer.consumeThreadMax`` (20).
        consume_message_batch_max_size: messages per listener call. Mirrors
            ``DefaultMQPushConsumer.consumeMessageBatchMaxSize`` (1).
        now_ms: wall clock in ms (``CONSUME_START_TIME``).
    """

    def __init__(
        self,
        group: str,
        listener: MessageListenerConcurrently,
        offset_store: RemoteOffsetStore,
        send_back: SendBack,
        tasks: TaskOwner,
        *,
        consume_thread_max: int,
        consume_message_batch_max_size: int,
        now_ms: Callable[[], int],
    ) -> None:
        self._group = group
        self._listener = listener
        self._is_async = inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(type(listener).__call__)
        self._store = offset_store
        self._send_back = send_back
        self._tasks = tasks
        self._threads = consume_thread_max
        self._batch = consume_message_batch_max_size
        self._now_ms = now_ms
        self._queue: asyncio.Queue[ConsumeRequest] = asyncio.Queue()
        self._executor: ThreadPoolExecutor | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[None]] = set()
        self._closing = False
        self.consumed_ok = 0
        self.consumed_failed = 0

    def start(self) -> None:
        """Spawn the worker tasks."""
        for i in range(self._threads):
            self._workers.append(self._tasks.spawn(self._worker(), f"consume-{i}"))

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """Queue ``msgs`` (already in ``pq``) in batches of ``consume_message_batch_max_size``."""
        if self._closing:
            return
        for i in range(0, len(msgs), self._batch):
            self._queue.put_nowait(ConsumeRequest(msgs[i : i + self._batch], pq, mq))

    def pending(self) -> int:
        """Return the number of queued (not yet started) batches."""
        return self._queue.qsize()

    async def close(self) -> None:
        """Stop taking batches; wait for the batches being consumed; stop the thread pool."""
        self._closing = True
        busy = set(self._busy)
        for w in self._workers:
            if w not in busy:
                w.cancel()
        if busy:
            await asyncio.wait(busy)
        for w in self._workers:
            w.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _worker(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        queue = self._queue
        while not self._closing:
            req = await queue.get()
            self._busy.add(me)
            try:
                extra = 0 if self._is_async else min(MAX_CALLS_PER_HOP - 1, queue.qsize() // max(1, self._threads))
                if extra <= 0:
                    await self._consume(req)
                else:
                    reqs = [req]
                    while extra > 0 and not queue.empty():
                        reqs.append(queue.get_nowait())
                        extra -= 1
                    await self._consume_in_one_hop(reqs)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("consume request failed group=%s mq=%s", self._group, req.mq)
            finally:
                self._busy.discard(me)

    async def _consume_in_one_hop(self, reqs: list[ConsumeRequest]) -> None:
        """Like :meth:`_consume` for several requests, with one thread-pool hop for all the
        listener calls (plain-function listeners only)."""
        start = str(self._now_ms())
        calls: list[tuple[ConsumeRequest, ConsumeConcurrentlyContext]] = []
        for req in reqs:
            if req.pq.dropped:
                continue
            for m in req.msgs:
                restore_retry_topic(m, self._group)
                m.properties[PROPERTY_CONSUME_START_TIMESTAMP] = start
            calls.append((req, ConsumeConcurrentlyContext(message_queue=req.mq)))
        if not calls:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix=f"consume-{self._group}")
        listener = self._listener

        def run_all() -> list[tuple[bool, object]]:
            out: list[tuple[bool, object]] = []
            for req, ctx in calls:
                try:
                    out.append((True, listener(req.msgs, ctx)))
                except Exception as exc:  # noqa: BLE001 - reported per call on the loop
                    out.append((False, exc))
            return out

        results = await asyncio.get_running_loop().run_in_executor(self._executor, run_all)
        for (req, ctx), (ok, value) in zip(calls, results):
            status = await self._listener_status(ok, value, ctx)
            if req.pq.dropped:
                log.info("queue dropped while consuming, result discarded group=%s mq=%s", self._group, req.mq)
                continue
            await self.process_consume_result(status, ctx, req)

    async def _listener_status(self, ok: bool, value: object, ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        """:meth:`_call_listener`'s outcome rules for a call made in :meth:`_consume_in_one_hop`."""
        if ok and inspect.isawaitable(value):
            try:
                value = await value
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                ok, value = False, exc
        if not ok:
            err = value if isinstance(value, BaseException) else None
            log.error(
                "listener raised group=%s mq=%s; treated as RECONSUME_LATER", self._group, ctx.message_queue,
                exc_info=(type(err), err, err.__traceback__) if err is not None else None,
            )
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        if not isinstance(value, ConsumeConcurrentlyStatus):
            if value is not None:
                log.warning("listener returned %r group=%s; treated as RECONSUME_LATER", value, self._group)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return value

    async def _call_listener(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        try:
            if self._is_async:
                result = await self._listener(msgs, ctx)  # type: ignore[misc]
            else:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix=f"consume-{self._group}")
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(self._executor, functools.partial(self._listener, msgs, ctx))
                if inspect.isawaitable(result):
                    result = await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("listener raised group=%s mq=%s; treated as RECONSUME_LATER", self._group, ctx.message_queue)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        if not isinstance(result, ConsumeConcurrentlyStatus):
            if result is not None:
                log.warning("listener returned %r group=%s; treated as RECONSUME_LATER", result, self._group)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return result

    async def _consume(self, req: ConsumeRequest) -> None:
        if req.pq.dropped:
            return
        start = str(self._now_ms())
        for m in req.msgs:
            restore_retry_topic(m, self._group)
            m.properties[PROPERTY_CONSUME_START_TIMESTAMP] = start
        ctx = ConsumeConcurrentlyContext(message_queue=req.mq)
        status = await self._call_listener(req.msgs, ctx)
        if req.pq.dropped:
            log.info("queue dropped while consuming, result discarded group=%s mq=%s", self._group, req.mq)
            return
        await self.process_consume_result(status, ctx, req)

    async def process_consume_result(self, status: ConsumeConcurrentlyStatus, ctx: ConsumeConcurrentlyContext, req: ConsumeRequest) -> None:
        """Acknowledge, send back failures, and advance the offset (``processConsumeResult``)."""
        msgs = req.msgs
        ack = ack_index_for(status, ctx.ack_index, len(msgs))
        self.consumed_ok += ack + 1
        self.consumed_failed += len(msgs) - ack - 1
        remaining = list(msgs)
        failed_local: list[MessageExt] = []
        for m in msgs[ack + 1 :]:
            if not req.pq.contains(m):
                continue
            ok = await self._send_back(m, ctx)
            if not ok:
                m.reconsume_times += 1
                failed_local.append(m)
        if failed_local:
            ids = {id(m) for m in failed_local}
            remaining = [m for m in msgs if id(m) not in ids]
            self._tasks.spawn(self._resubmit_later(ConsumeRequest(failed_local, req.pq, req.mq)), "local-retry")
        offset = req.pq.remove_messages(remaining)
        if offset >= 0 and not req.pq.dropped:
            self._store.update_offset(req.mq, offset, increase_only=True)

    async def _resubmit_later(self, req: ConsumeRequest) -> None:
        await asyncio.sleep(LOCAL_RETRY_DELAY)
        if not req.pq.dropped and not self._closing:
            self._queue.put_nowait(req)
