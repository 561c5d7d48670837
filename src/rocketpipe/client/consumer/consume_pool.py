"""The worker pool of a concurrent listener (L3): batches on a queue, worker tasks, graceful close.

The part that ``ConsumeMessageConcurrentlyService`` and ``ConsumeMessagePopConcurrentlyService``
share (used by :class:`~rocketpipe.client.consumer.concurrent.ConcurrentDispatcher` and
:class:`~rocketpipe.client.consumer.pop_push.PopConsumeService`): submitted messages are cut
into batches of ``consume_message_batch_max_size``; ``consume_thread_max`` worker tasks take
batches from a queue and hand them to the service's consume function; the listener is called
through one :class:`~rocketpipe.client.consumer.listener.ListenerRunner` (``async def``
listeners directly, plain functions in a thread pool of ``consume_thread_max`` threads).
What a batch's consumption does (ack, send-back, change-invisible-time) stays with the service.

The batches wait in a plain deque; a worker takes the next one without a task switch while any
is queued and only waits (on a future of its own) when none is. A service may consume a batch
synchronously (``consume_now``, for ``async def`` listeners that do not wait) and keep the
bookkeeping of such batches to do it once for many: the pool calls its ``flush`` before a worker
waits for batches, and the service flushes before anything else of its own waits, so no other
task ever sees the bookkeeping pending.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, Generic, Protocol, TypeVar

from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner
from .listener import ConsumeConcurrentlyStatus, ListenerRunner, MessageListenerConcurrently

__all__ = ["MAX_CALLS_PER_HOP", "ConsumePool"]

log = logging.getLogger(__name__)

#: Most listener calls of a plain-function listener made in one thread-pool hop. A worker takes
#: extra batches only from a backlog (more queued batches than workers), so no batch waits
#: behind another while a worker is idle; each call still gets its own batch and context.
MAX_CALLS_PER_HOP: Final = 16


class _Request(Protocol):
    @property
    def mq(self) -> MessageQueue: ...


ReqT = TypeVar("ReqT", bound=_Request)
PqT = TypeVar("PqT")


class ConsumePool(Generic[ReqT, PqT]):
    """Worker tasks consuming queued batches with bounded parallelism.

    Args:
        listener: the user (hook-wrapped) concurrent listener.
        group: the consumer group (thread names, logs).
        tasks: the consumer's task owner (the workers live there).
        name: prefix of the worker task names (``<name>-<i>``) and of the thread names
            (``<name>-<group>``); with ``-`` read as a space, the start of the log line of a
            failed batch (``"<name> request failed"``).
        consume_thread_max: worker count and thread-pool size (``consumeThreadMax``, 20).
        consume_message_batch_max_size: messages per listener call (1).
        make_request: ``(batch, pq, mq) -> request`` for one batch of :meth:`submit`.
        consume: consumes one request (errors other than ``CancelledError`` are logged).
        consume_many: consumes several requests with one thread-pool hop, or None: always one
            at a time. Used for plain-function listeners only, when more batches are queued
            than there are workers (up to :data:`MAX_CALLS_PER_HOP` per hop).
        logger: where a failed batch is logged.
        consume_now: for ``async def`` listeners, used instead of ``consume``: consumes one
            request synchronously as far as it can and returns None when done, or an awaitable
            that finishes it (errors handled as for ``consume``).
        flush: called before a worker waits for batches and when it stops (the service's
            pending bookkeeping of ``consume_now``).

    Attributes:
        runner: the :class:`ListenerRunner` the consume functions call the listener with.
    """

    def __init__(
        self,
        listener: MessageListenerConcurrently,
        group: str,
        tasks: TaskOwner,
        *,
        name: str,
        consume_thread_max: int,
        consume_message_batch_max_size: int,
        make_request: Callable[[list[MessageExt], PqT, MessageQueue], ReqT],
        consume: Callable[[ReqT], Awaitable[None]],
        consume_many: Callable[[list[ReqT]], Awaitable[None]] | None = None,
        logger: logging.Logger = log,
        consume_now: Callable[[ReqT], Awaitable[None] | None] | None = None,
        flush: Callable[[], None] | None = None,
    ) -> None:
        self.runner = ListenerRunner(
            listener,
            status_type=ConsumeConcurrentlyStatus,
            failure=ConsumeConcurrentlyStatus.RECONSUME_LATER,
            group=group,
            max_threads=consume_thread_max,
            thread_name_prefix=f"{name}-{group}",
        )
        self._group = group
        self._tasks = tasks
        self._name = name
        self._what = name.replace("-", " ")
        self._threads = consume_thread_max
        self._batch = consume_message_batch_max_size
        self._make = make_request
        self._consume = consume
        self._consume_many = None if self.runner.is_async else consume_many
        self._consume_now = consume_now if self.runner.is_async else None
        self._flush = flush
        self._log = logger
        self._queue: deque[ReqT] = deque()
        self._idle: deque[asyncio.Future[None]] = deque()
        self._workers: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closing

    def start(self) -> None:
        """Spawn the worker tasks."""
        for i in range(self._threads):
            self._workers.append(self._tasks.spawn(self._worker(), f"{self._name}-{i}"))

    def submit(self, msgs: list[MessageExt], pq: PqT, mq: MessageQueue) -> None:
        """Queue ``msgs`` in batches of ``consume_message_batch_max_size`` (nothing once closing)."""
        if self._closing:
            return
        make, size = self._make, self._batch
        if size == 1:
            self._queue.extend([make([m], pq, mq) for m in msgs])
        else:
            self._queue.extend([make(msgs[i : i + size], pq, mq) for i in range(0, len(msgs), size)])
        self._wake()

    def put(self, req: ReqT) -> None:
        """Queue one ready request (a local re-consume)."""
        self._queue.append(req)
        self._wake()

    def _wake(self) -> None:
        """Wake one idle worker per queued batch (as many as there are)."""
        idle, n = self._idle, len(self._queue)
        while idle and n > 0:
            fut = idle.popleft()
            if not fut.done():
                fut.set_result(None)
                n -= 1

    def pending(self) -> int:
        """Return the number of queued (not yet started) batches."""
        return len(self._queue)

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
        self.runner.close()

    async def _wait_for_batches(self) -> None:
        fut = asyncio.get_running_loop().create_future()
        self._idle.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._wake()  # woken and cancelled at once: pass the wake-up on
            raise
        finally:
            if not fut.done():
                fut.cancel()

    async def _worker(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        queue = self._queue
        busy = self._busy
        now = self._consume_now
        flush = self._flush
        try:
            while not self._closing:
                if not queue:
                    if flush is not None:
                        flush()
                    busy.discard(me)
                    await self._wait_for_batches()
                    continue
                req = queue.popleft()
                busy.add(me)
                try:
                    if now is not None:
                        rest = now(req)
                        if rest is not None:
                            await rest
                    else:
                        await self._consume_queued(req)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self._log.exception("%s request failed group=%s mq=%s", self._what, self._group, req.mq)
        finally:
            if flush is not None:
                flush()
            busy.discard(me)

    async def _consume_queued(self, req: ReqT) -> None:
        """Consume ``req``, with more queued requests in the same thread hop from a backlog."""
        queue = self._queue
        many = self._consume_many
        extra = 0 if many is None else min(MAX_CALLS_PER_HOP - 1, len(queue) // max(1, self._threads))
        if extra <= 0 or many is None:
            await self._consume(req)
            return
        reqs = [req]
        while extra > 0 and queue:
            reqs.append(queue.popleft())
            extra -= 1
        await many(reqs)
