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

Statistics (:class:`~rocketpipe.client.consumer.stats.ConsumerStats`, as Java's
``ConsumerStatsManager``): every listener call's duration (``incConsumeRT``, also when the queue
was dropped meanwhile), and in ``process_consume_result`` the acknowledged / failed counts
(``incConsumeOKTPS`` / ``incConsumeFailedTPS``), keyed by the queue's topic.

Work per batch, not per message. An ``async def`` listener is run on the spot by the worker
(:meth:`ListenerRunner.call_eagerly`); a call that finishes without waiting and acknowledges its
whole batch is only noted (its messages, its duration), and the notes of one queue are settled
together — one ``remove_messages``, one offset update, one statistics record with one wall-clock
read — before anything else can run: before the worker waits (for batches, or in a listener
that does wait), before a batch that is not a plain success, when the next batch is of another
queue. Other tasks never see a note unsettled. Everything else (failures, send-back, dropped
queues, listeners that wait) takes the per-call path, as before.

Client metrics (with a :class:`~rocketpipe.client.metrics.ClientMeter`, ``ClientConfig.metrics``;
Java's ``MessageMeterInterceptor``): per pulled batch in :meth:`ConcurrentDispatcher.submit`, the
delivery latency (now − the first message's store time) and the arrival time carried by each
request; per listener call, the await time (start − arrival) and the process time of its
messages (acknowledged: ``success``, the rest ``failure``). Without a meter, one attribute test.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner
from ..metrics import ClientMeter
from .consume_pool import MAX_CALLS_PER_HOP as MAX_CALLS_PER_HOP
from .consume_pool import ConsumePool
from .listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    MessageListenerConcurrently,
    prepare_batch,
    stamp_batch,
)
from .offsets import RemoteOffsetStore
from .process_queue import ProcessQueue
from .retry import listener_topic, retry_topic
from .stats import ConsumerStats

log = logging.getLogger(__name__)

#: Delay of the local re-consume after a failed send-back (Java: 5 000 ms).
LOCAL_RETRY_DELAY: Final = 5.0
#: A run of calls that finish without waiting re-reads the wall clock for ``CONSUME_START_TIME``
#: once this much monotonic time has passed (seconds; the stamp has millisecond resolution).
STAMP_REFRESH: Final = 0.001

_SUCCESS: Final = ConsumeConcurrentlyStatus.CONSUME_SUCCESS

SendBack = Callable[[MessageExt, ConsumeConcurrentlyContext], Awaitable[bool]]
"""``(msg, context) -> True`` when the broker (or the retry topic) took the message."""


@dataclass(slots=True)
class ConsumeRequest:
    """One listener call's worth of messages of one queue."""

    msgs: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue
    arrived: float = 0.0  # time.monotonic() of the pull that brought the batch (metrics only)


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
        now_ms: wall clock in ms (``CONSUME_START_TIME``, and the statistics' windows).
        stats: where consume statistics go (also read by the pull loop through
            :attr:`stats`); a new :class:`ConsumerStats` over ``now_ms`` when None.
        meter: where the client metrics go (``ClientConfig.metrics``); None: none recorded.

    Attributes:
        stats: the consume statistics (``ConsumerStatsManager``).
        consumed_ok / consumed_failed: running totals of acknowledged / failed messages.
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
        stats: ConsumerStats | None = None,
        meter: ClientMeter | None = None,
    ) -> None:
        self._group = group
        self._meter = meter
        self._arrived = 0.0  # the arrival stamp of the batch being submitted (metrics only)
        self._pool: ConsumePool[ConsumeRequest, ProcessQueue] = ConsumePool(
            listener,
            group,
            tasks,
            name="consume",
            consume_thread_max=consume_thread_max,
            consume_message_batch_max_size=consume_message_batch_max_size,
            make_request=ConsumeRequest if meter is None else self._stamped_request,
            consume=self._consume,
            consume_many=self._consume_in_one_hop,
            logger=log,
            consume_now=self._consume_now,
            flush=self._settle_noted,
        )
        self._runner = self._pool.runner
        self.stats = stats if stats is not None else ConsumerStats.from_now_ms(now_ms)
        self._store = offset_store
        self._send_back = send_back
        self._tasks = tasks
        self._now_ms = now_ms
        self._retry_topic = retry_topic(group)
        self.consumed_ok = 0
        self.consumed_failed = 0
        # Noted calls (all of one queue): finished without waiting, whole batch acknowledged.
        self._noted_pq: ProcessQueue | None = None
        self._noted_mq: MessageQueue | None = None
        self._noted_msgs: list[MessageExt] = []
        self._noted_calls = 0
        self._noted_rt = 0.0  # seconds
        # CONSUME_START_TIME of a run of calls: wall ms (as a string), and when it was read.
        self._stamp = ""
        self._stamp_at = -1.0
        self._settle_cb = self._settle_noted

    def start(self) -> None:
        """Spawn the worker tasks."""
        self._pool.start()

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """Queue ``msgs`` (already in ``pq``) in batches of ``consume_message_batch_max_size``."""
        meter = self._meter
        if meter is not None and msgs:
            first = msgs[0]
            meter.record_delivery(
                listener_topic(first, self._retry_topic), self._group, self._now_ms() - first.store_timestamp
            )
            self._arrived = time.monotonic()
        self._pool.submit(msgs, pq, mq)

    def _stamped_request(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> ConsumeRequest:
        return ConsumeRequest(msgs, pq, mq, self._arrived)

    def pending(self) -> int:
        """Return the number of queued (not yet started) batches."""
        return self._pool.pending()

    async def close(self) -> None:
        """Stop taking batches; wait for the batches being consumed; stop the thread pool."""
        await self._pool.close()

    def _prepare(self, req: ConsumeRequest, start_ms: int) -> ConsumeConcurrentlyContext:
        """Restore retry topics, stamp ``CONSUME_START_TIME``; return the call's context."""
        prepare_batch(req.msgs, self._group, start_ms)
        return ConsumeConcurrentlyContext(message_queue=req.mq)

    def _consume_now(self, req: ConsumeRequest) -> Awaitable[None] | None:
        """Consume ``req`` with an ``async def`` listener, synchronously when the listener does not
        wait: a plain success is noted for :meth:`_settle_noted`; returns None then, else an
        awaitable that finishes the request on the per-call path."""
        pq = req.pq
        if pq.dropped:
            return None
        if pq is not self._noted_pq and self._noted_pq is not None:
            self._settle_noted()
        msgs = req.msgs
        begin = time.monotonic()
        if begin - self._stamp_at >= STAMP_REFRESH:
            self._stamp = str(self._now_ms())
            self._stamp_at = begin
        stamp_batch(msgs, self._retry_topic, self._stamp)
        meter = self._meter
        if meter is not None and msgs:
            meter.record_await(msgs[0].topic, self._group, begin - req.arrived)
        ctx = ConsumeConcurrentlyContext(req.mq)
        status = self._runner.call_eagerly(list(msgs), ctx, self._settle_cb)
        if not isinstance(status, ConsumeConcurrentlyStatus):
            return self._finish_waited(req, ctx, status, begin)
        rt = time.monotonic() - begin
        if status is _SUCCESS and ctx.ack_index >= len(msgs) - 1 and msgs and not pq.dropped:
            if meter is not None:
                meter.record_process(msgs[0].topic, self._group, rt, len(msgs), 0)
            if self._noted_pq is None:
                self._noted_pq = pq
                self._noted_mq = req.mq
            self._noted_msgs += msgs
            self._noted_calls += 1
            self._noted_rt += rt
            return None
        self._settle_noted()
        return self._finish(req, ctx, status, rt * 1000)

    async def _finish_waited(
        self,
        req: ConsumeRequest,
        ctx: ConsumeConcurrentlyContext,
        status: Awaitable[ConsumeConcurrentlyStatus],
        begin: float,
    ) -> None:
        """The rest of a call whose listener waited (noted calls were settled before)."""
        done = await status
        await self._finish(req, ctx, done, (time.monotonic() - begin) * 1000)

    def _settle_noted(self) -> None:
        """Settle the noted calls: what :meth:`_finish` and :meth:`process_consume_result` do per
        call for a whole-batch success, once for all of them (one statistics record, one
        ``remove_messages``, one offset update)."""
        self._stamp_at = -1.0  # the next call (after a wait, or of another queue) re-reads the clock
        pq, mq = self._noted_pq, self._noted_mq
        if pq is None or mq is None:
            return
        msgs, calls, rt = self._noted_msgs, self._noted_calls, self._noted_rt
        self._noted_pq = self._noted_mq = None
        self._noted_msgs = []
        self._noted_calls = 0
        self._noted_rt = 0.0
        ok = len(msgs)
        self.consumed_ok += ok
        self.stats.inc_consumed(self._group, mq.topic, rt * 1000, calls, ok, 0)
        offset = pq.remove_messages(msgs)
        if offset >= 0 and not pq.dropped:
            self._store.update_offset(mq, offset, increase_only=True)

    async def _finish(
        self, req: ConsumeRequest, ctx: ConsumeConcurrentlyContext, status: ConsumeConcurrentlyStatus, rt_ms: float
    ) -> None:
        """After a listener call: record its RT, then process the result unless the queue was
        dropped meanwhile (``ConsumeRequest.run``)."""
        self.stats.inc_consume_rt(self._group, req.mq.topic, rt_ms)
        meter = self._meter
        if meter is not None and req.msgs:
            ack = ack_index_for(status, ctx.ack_index, len(req.msgs))
            meter.record_process(req.msgs[0].topic, self._group, rt_ms / 1000, ack + 1, len(req.msgs) - ack - 1)
        if req.pq.dropped:
            log.info("queue dropped while consuming, result discarded group=%s mq=%s", self._group, req.mq)
            return
        await self.process_consume_result(status, ctx, req)

    async def _consume_in_one_hop(self, reqs: list[ConsumeRequest]) -> None:
        """Like :meth:`_consume` for several requests, with one thread-pool hop for all the
        listener calls (plain-function listeners only)."""
        self._settle_noted()
        start = self._now_ms()
        calls = [(req, self._prepare(req, start)) for req in reqs if not req.pq.dropped]
        if not calls:
            return
        if self._meter is not None:
            self._record_await([req for req, _ in calls])
        outcomes = await self._runner.call_in_one_hop([(req.msgs, ctx) for req, ctx in calls])
        for (req, ctx), (status, rt_ms) in zip(calls, outcomes, strict=False):
            await self._finish(req, ctx, status, rt_ms)

    async def _consume(self, req: ConsumeRequest) -> None:
        self._settle_noted()
        if req.pq.dropped:
            return
        ctx = self._prepare(req, self._now_ms())
        if self._meter is not None:
            self._record_await([req])
        status, rt_ms = await self._runner.call(req.msgs, ctx)
        await self._finish(req, ctx, status, rt_ms)

    def _record_await(self, reqs: list[ConsumeRequest]) -> None:
        """``rocketmq_await_time`` of prepared requests about to be consumed (meter set)."""
        assert self._meter is not None
        now = time.monotonic()
        for req in reqs:
            if req.msgs:
                self._meter.record_await(req.msgs[0].topic, self._group, now - req.arrived)

    async def process_consume_result(
        self, status: ConsumeConcurrentlyStatus, ctx: ConsumeConcurrentlyContext, req: ConsumeRequest
    ) -> None:
        """Acknowledge, send back failures, and advance the offset (``processConsumeResult``).

        Counts the acknowledged and failed messages in :attr:`stats` under ``req.mq.topic``.
        """
        msgs = req.msgs
        if not msgs:
            return
        ack = ack_index_for(status, ctx.ack_index, len(msgs))
        ok, failed = ack + 1, len(msgs) - ack - 1
        self.consumed_ok += ok
        self.consumed_failed += failed
        topic = req.mq.topic
        self.stats.inc_consume_ok_tps(self._group, topic, ok)
        self.stats.inc_consume_failed_tps(self._group, topic, failed)
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
            self._tasks.spawn(
                self._resubmit_later(ConsumeRequest(failed_local, req.pq, req.mq, req.arrived)), "local-retry"
            )
        offset = req.pq.remove_messages(remaining)
        if offset >= 0 and not req.pq.dropped:
            self._store.update_offset(req.mq, offset, increase_only=True)

    async def _resubmit_later(self, req: ConsumeRequest) -> None:
        await asyncio.sleep(LOCAL_RETRY_DELAY)
        if not req.pq.dropped and not self._pool.closing:
            self._pool.put(req)
