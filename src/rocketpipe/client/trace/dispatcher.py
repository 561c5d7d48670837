"""The asynchronous trace dispatcher (L3): buffers trace contexts and sends them as trace messages.

Mirrors ``AsyncTraceDispatcher`` of Java 5.3.3: a bounded queue of contexts (2 048), filled by
the hooks without ever blocking or failing the user's send or consume (a full queue drops the
context and counts it); a worker that takes up to ``trace_msg_batch_num`` contexts (10, at most
20) once that many are queued or 5 s after the last send, packs them
(:func:`~.codec.pack_trace_messages`: per business topic, cut at 128 000 characters) and sends
each trace message with a producer of its own, group
``_INNER_TRACE_PRODUCER-<host group>-<PRODUCE|CONSUME>-<n>``, 5 s send timeout, at most 4
sends in flight (Java's 2–4 sender threads). :meth:`TraceDispatcher.close` flushes what is
queued (within 5 s, Java's ``WAIT_FOR_SHUTDOWN``) and logs one line with the counts when
anything was dropped or failed.

Differences from Java: the trace producer shares the host client's :class:`ClientRuntime`
(Java starts a separate client instance ``PID_CLIENT_INNER_TRACE_PRODUCER``); its sends take
any writable queue of the trace topic and retry like any :meth:`Producer.send` (Java sends
asynchronously once). The producer is made by a factory given to the dispatcher, so this module
does not import the producer.

Hooks may run in listener threads (plain-function listeners): :meth:`TraceDispatcher.append`
hands the context to the event loop (``call_soon_threadsafe``) when called off it.
Imports :mod:`.codec`, :mod:`.model`, protocol, errors and the client's task owner.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

from ...protocol.message import Message
from ...ratelog import RateLimitedLog
from .._tasks import TaskOwner
from .codec import pack_trace_messages
from .model import GROUP_NAME_PREFIX, RMQ_SYS_TRACE_TOPIC, TraceContext

__all__ = [
    "TRACE_FLUSH_INTERVAL",
    "TRACE_MAX_MSG_SIZE",
    "TRACE_QUEUE_SIZE",
    "TRACE_SEND_TIMEOUT",
    "TraceDispatcher",
    "TraceSender",
]

log = logging.getLogger(__name__)

#: AsyncTraceDispatcher.traceContextQueue capacity.
TRACE_QUEUE_SIZE: Final = 2048
#: AsyncTraceDispatcher.maxMsgSize: the trace producer's maxMessageSize (128 000), characters / bytes.
TRACE_MAX_MSG_SIZE: Final = 128_000
#: AsyncTraceDispatcher.flushTraceInterval (5 000 ms), seconds.
TRACE_FLUSH_INTERVAL: Final = 5.0
#: The trace producer's sendMsgTimeout (5 000 ms), seconds.
TRACE_SEND_TIMEOUT: Final = 5.0
#: AsyncTraceDispatcher.WAIT_FOR_SHUTDOWN (5 000 ms), seconds: the flush budget of close().
TRACE_SHUTDOWN_WAIT: Final = 5.0
#: AsyncTraceDispatcher: batchNum is capped at 20.
MAX_TRACE_BATCH_NUM: Final = 20
#: traceExecutor maximumPoolSize: trace messages in flight at once.
MAX_SENDS_IN_FLIGHT: Final = 4

_COUNTER = itertools.count(1)  # AsyncTraceDispatcher.COUNTER: numbers the trace producer groups


class TraceSender(Protocol):
    """What the dispatcher needs of its producer (a :class:`~rocketpipe.client.Producer`)."""

    async def start(self) -> None: ...

    async def send(self, msg: Message, *, timeout: float | None = None) -> object: ...

    async def close(self) -> None: ...


class TraceDispatcher:
    """Buffers trace contexts and sends them to the trace topic.

    Args:
        host_group: the tracing client's producer or consumer group.
        kind: ``"PRODUCE"`` or ``"CONSUME"`` (``TraceDispatcher.Type``), part of the trace
            producer's group name.
        sender_factory: ``group -> producer`` for the trace producer (started by :meth:`start`,
            closed by :meth:`close`).
        trace_topic: ``customizedTraceTopic``; None or blank: ``RMQ_SYS_TRACE_TOPIC``.
        batch_num: contexts per batch (``traceMsgBatchNum``, 10; capped at 20).
        queue_size: contexts buffered at most (2 048); more are dropped and counted.
        max_msg_size: characters per trace message (128 000).
        flush_interval: seconds after the last send when a partial batch goes out (5 s).

    Attributes:
        trace_topic_name: where the trace messages go.
        producer_group: the trace producer's group.
        dropped: contexts dropped (queue full, or appended after close).
        sent: trace messages sent.
        failed: trace messages whose send failed (logged at most once a minute).
    """

    def __init__(
        self,
        host_group: str,
        kind: str,
        sender_factory: Callable[[str], TraceSender],
        *,
        trace_topic: str | None = None,
        batch_num: int = 10,
        queue_size: int = TRACE_QUEUE_SIZE,
        max_msg_size: int = TRACE_MAX_MSG_SIZE,
        flush_interval: float = TRACE_FLUSH_INTERVAL,
    ) -> None:
        self.trace_topic_name = trace_topic if trace_topic and trace_topic.strip() else RMQ_SYS_TRACE_TOPIC
        self.producer_group = f"{GROUP_NAME_PREFIX}-{host_group}-{kind}-{next(_COUNTER)}"
        self.batch_num = max(1, min(batch_num, MAX_TRACE_BATCH_NUM))
        self.queue_size = queue_size
        self.max_msg_size = max_msg_size
        self.flush_interval = flush_interval
        self.dropped = 0
        self.sent = 0
        self.failed = 0
        self._host_group = host_group
        self._sender = sender_factory(self.producer_group)
        self._queue: deque[TraceContext] = deque()
        self._wake = asyncio.Event()
        self._tasks = TaskOwner(f"trace[{host_group}]")
        self._worker: asyncio.Task[None] | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(MAX_SENDS_IN_FLIGHT)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._closed = False
        self._ratelog = RateLimitedLog(log)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start the trace producer and the worker (idempotent).

        Raises:
            ClientClosedError: the host's runtime is closed.
        """
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        await self._sender.start()
        await self._tasks.start()
        self._worker = self._tasks.spawn(self._run(), "dispatch")

    async def flush(self) -> None:
        """Send every queued context now and wait for the sends in flight (``flush``).

        Does nothing before :meth:`start` or after :meth:`close`.
        """
        if not self._tasks.running:
            return
        while self._queue:
            await self._submit(self._take())
        if self._in_flight:
            await asyncio.wait(set(self._in_flight))

    async def close(self) -> None:
        """Flush (at most 5 s), stop the worker and the trace producer; idempotent (``shutdown``)."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.wait([self._worker])
            try:
                async with asyncio.timeout(TRACE_SHUTDOWN_WAIT):
                    await self.flush()
            except TimeoutError:
                log.warning("trace flush at close timed out group=%s queued=%d", self._host_group, len(self._queue))
            await self._tasks.close()  # cancels sends still in flight
        await self._sender.close()
        lost = len(self._queue)
        if self.dropped or self.failed or lost:
            log.warning(
                "trace dispatcher closed group=%s topic=%s sent=%d dropped=%d failed=%d unsent=%d",
                self._host_group,
                self.trace_topic_name,
                self.sent,
                self.dropped,
                self.failed,
                lost,
            )
        self._queue.clear()

    # ------------------------------------------------------------------ hooks' side

    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx`` for sending; never blocks, never raises (``append``).

        Callable from any thread. Returns False when the context was dropped (queue full, or the
        dispatcher not running); a call from another thread returns True once handed over.
        """
        loop = self._loop
        if loop is None or self._closed:
            self._drop(ctx)
            return False
        if threading.get_ident() == self._loop_thread:
            return self._offer(ctx)
        try:
            loop.call_soon_threadsafe(self._offer, ctx)
        except RuntimeError:  # the loop is closed
            self._drop(ctx)
            return False
        return True

    def _offer(self, ctx: TraceContext) -> bool:
        if self._closed or len(self._queue) >= self.queue_size:
            self._drop(ctx)
            return False
        self._queue.append(ctx)
        if len(self._queue) >= self.batch_num or len(self._queue) == 1:
            self._wake.set()
        return True

    def _drop(self, ctx: TraceContext) -> None:
        self.dropped += 1
        self._ratelog.warning(
            "trace-dropped",
            "trace context dropped (queue full or dispatcher closed) group=%s type=%s dropped=%d",
            self._host_group,
            ctx.trace_type.value,
            self.dropped,
        )

    # ------------------------------------------------------------------ worker

    def _take(self) -> list[TraceContext]:
        q = self._queue
        return [q.popleft() for _ in range(min(self.batch_num, len(q)))]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last_flush = loop.time()
        while True:
            q = self._queue
            if q and (len(q) >= self.batch_num or loop.time() - last_flush >= self.flush_interval):
                await self._submit(self._take())
                last_flush = loop.time()
                continue
            self._wake.clear()
            wait = self.flush_interval - (loop.time() - last_flush) if q else None
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _submit(self, batch: list[TraceContext]) -> None:
        """Start sending ``batch`` once fewer than :data:`MAX_SENDS_IN_FLIGHT` sends run."""
        await self._slots.acquire()
        try:
            task = self._tasks.spawn(self._send(batch), "send")
        except RuntimeError:  # not running: the batch is lost (counted at close)
            self._slots.release()
            self._queue.extendleft(reversed(batch))
            raise
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _send(self, batch: list[TraceContext]) -> None:
        try:
            for tm in pack_trace_messages(batch, self.trace_topic_name, self.max_msg_size):
                msg = Message.build(tm.topic, tm.body, keys=list(tm.keys))
                try:
                    await self._sender.send(msg, timeout=TRACE_SEND_TIMEOUT)
                    self.sent += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # never into the user's path: counted and logged
                    self.failed += 1
                    self._ratelog.warning(
                        "trace-send",
                        "send trace data failed group=%s topic=%s failed=%d: %s",
                        self._host_group,
                        tm.topic,
                        self.failed,
                        exc,
                    )
        finally:
            self._slots.release()
