"""Orderly consumption of the push consumer (L3): queue locks, per-queue serial consumption.

Mirrors ``ConsumeMessageOrderlyService`` + the lock half of ``RebalanceImpl`` +
``ProcessQueue``'s orderly methods. Rules:

* **Broker locks (CLUSTERING only).** A newly allocated queue is consumed only after
  LOCK_BATCH_MQ grants it (:meth:`QueueLocker.lock`); every held queue is re-locked every
  :data:`REBALANCE_LOCK_INTERVAL` (``lockAll``); a queue whose last successful lock is older
  than :data:`REBALANCE_LOCK_MAX_LIVE_TIME` is not consumed (client-side expiry, shorter than
  the broker's 60 s). Queues are unlocked (UNLOCK_BATCH_MQ) when a rebalance takes them away —
  after the batch in flight finished and the offset was persisted — and at shutdown.
* **Pull.** A pull loop does not pull an unlocked queue (retry in 3 s). The first pull after a
  lock re-reads the consume offset from the broker (``PullRequest.previouslyLocked``), so a
  queue moved from another consumer starts where that consumer committed.
* **Consume.** One batch at a time per queue, oldest messages first
  (``consume_message_batch_max_size``); across queues at most ``consume_thread_max`` batches run
  at once. SUCCESS commits the batch; SUSPEND_CURRENT_QUEUE_A_MOMENT (also: exception, None)
  keeps the batch at the head of the queue, bumps each message's local reconsume count and
  retries the same batch after ``suspend_current_queue_time_millis`` (clamped to
  [10, 30 000] ms). A message whose reconsume count reached ``max_reconsume_times`` (−1 means
  ``Integer.MAX_VALUE`` in orderly mode) is sent to ``%RETRY%<group>`` as a plain message
  with ``RECONSUME_TIME = count + 1`` and delay ``3 + count``, which the broker turns into a
  DLQ write; once every such message is sent back the batch counts as consumed.
* **BROADCASTING.** No locks: every queue is consumed serially without asking the broker.
* **Statistics** (:class:`~rocketpipe.client.consumer.stats.ConsumerStats`): every listener
  call's duration; OK counts for SUCCESS (and, with ``auto_commit``, COMMIT / ROLLBACK, which
  are treated as SUCCESS), failed counts for SUSPEND — manual-mode COMMIT and ROLLBACK count
  nothing, as in Java's ``ConsumeMessageOrderlyService.processConsumeResult``.

Simplification (documented): Java delays the UNLOCK of a removed queue by 20 s when messages
are still cached (``unlockDelay``); here the unlock is sent as soon as the batch in flight
finished and the offset was persisted, which gives the next owner the same guarantee.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ...errors import RocketMQError, error_for_response
from ...protocol.bodies.consumer import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.lock import LockBatchMqRequestHeader, UnlockBatchMqRequestHeader
from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner
from ..metrics import ClientMeter
from .listener import ListenerRunner, prepare_batch
from .process_queue import ProcessQueue
from .pull import PullRequest
from .push_controls import ControlledPullLoop
from .retry import listener_topic, retry_topic
from .stats import ConsumerStats

if TYPE_CHECKING:
    from ..runtime import ClientRuntime

log = logging.getLogger(__name__)

#: rocketmq.client.rebalance.lockMaxLiveTime (30 000 ms), seconds: client-side lock expiry.
REBALANCE_LOCK_MAX_LIVE_TIME: Final = 30.0
#: rocketmq.client.rebalance.lockInterval (20 000 ms), seconds: period of ``lockAll``.
REBALANCE_LOCK_INTERVAL: Final = 20.0
#: ConsumeMessageOrderlyService.MAX_TIME_CONSUME_CONTINUOUSLY (60 000 ms), seconds.
MAX_TIME_CONSUME_CONTINUOUSLY: Final = 60.0
#: PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION (3 000 ms), seconds: retry of a pull of an unlocked queue.
PULL_DELAY_WHEN_NOT_LOCKED: Final = 3.0
#: Integer.MAX_VALUE: orderly default of max reconsume times (setting −1).
ORDERLY_DEFAULT_MAX_RECONSUME_TIMES: Final = 2**31 - 1
#: Bounds of the suspend time, ms (``processConsumeResult`` clamps to [10 ms, 30 s]).
SUSPEND_MIN_MS: Final = 10
SUSPEND_MAX_MS: Final = 30_000
#: How long a rebalance waits for the batch in flight before it gives up unlocking now (1 s).
UNLOCK_WAIT_CONSUME: Final = 1.0
_LOCK_TIMEOUT: Final = 1.0


class ConsumeOrderlyStatus(enum.Enum):
    """Result of an orderly listener call (``ConsumeOrderlyStatus``).

    ROLLBACK and COMMIT are honoured only with ``context.auto_commit = False`` (as in Java,
    they are deprecated and behave like SUCCESS otherwise).
    """

    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """Per-call context of an orderly listener (``ConsumeOrderlyContext``).

    Attributes:
        message_queue: the queue of the batch.
        auto_commit: commit the offset on SUCCESS (True). With False, offsets advance only on
            COMMIT and ROLLBACK re-consumes every message since the last commit.
        suspend_current_queue_time_millis: wait before the batch is retried after SUSPEND;
            −1 uses the consumer's ``suspend_current_queue_time_millis`` (1 000 ms).
    """

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


OrderlyResult = ConsumeOrderlyStatus | None
OrderlyListenerFn = Callable[[list[MessageExt], ConsumeOrderlyContext], OrderlyResult | Awaitable[OrderlyResult]]
"""An orderly listener function: ``(msgs, context) -> status`` (sync or async)."""


class MessageListenerOrderly:
    """Marks a listener as orderly for :meth:`PushConsumer.register_message_listener`.

    ``consumer.register_message_listener(MessageListenerOrderly(fn))`` is the same as
    ``consumer.register_message_listener(fn, orderly=True)``. Also usable as a base class:
    override :meth:`consume_message`.
    """

    def __init__(self, fn: OrderlyListenerFn | None = None) -> None:
        self._fn = fn

    def consume_message(
        self, msgs: list[MessageExt], context: ConsumeOrderlyContext
    ) -> OrderlyResult | Awaitable[OrderlyResult]:
        """Consume one batch of one queue; returns a status (sync or async)."""
        if self._fn is None:
            raise NotImplementedError("pass a function or override consume_message")
        return self._fn(msgs, context)

    def __call__(
        self, msgs: list[MessageExt], context: ConsumeOrderlyContext
    ) -> OrderlyResult | Awaitable[OrderlyResult]:
        return self.consume_message(msgs, context)

    @property
    def is_async(self) -> bool:
        """True when the wrapped function (or ``consume_message``) is a coroutine function."""
        target: Any = self._fn if self._fn is not None else self.consume_message
        return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
            getattr(type(target), "__call__", None)  # noqa: B004 - is its __call__ a coroutine function?
        )


def effective_orderly_max_reconsume_times(setting: int) -> int:
    """Map ``max_reconsume_times`` for orderly consumers: −1 means ``Integer.MAX_VALUE``.

    >>> effective_orderly_max_reconsume_times(-1), effective_orderly_max_reconsume_times(3)
    (2147483647, 3)
    """
    return ORDERLY_DEFAULT_MAX_RECONSUME_TIMES if setting == -1 else setting


def clamp_suspend_ms(context_ms: int, default_ms: int) -> int:
    """Return the suspend time of a SUSPEND result: context value (or the consumer default
    for −1), clamped to [10, 30 000] ms.

    >>> clamp_suspend_ms(-1, 1000), clamp_suspend_ms(1, 1000), clamp_suspend_ms(10**6, 1000)
    (1000, 10, 30000)
    """
    ms = default_ms if context_ms == -1 else context_ms
    return max(SUSPEND_MIN_MS, min(SUSPEND_MAX_MS, ms))


class OrderlyProcessQueue(ProcessQueue):
    """ProcessQueue with the orderly state of ``ProcessQueue``.

    Attributes:
        locked: the broker granted (or renewed) this client's lock on the queue.
        last_lock_time: loop time of the last successful lock.
        previously_locked: the pull loop already re-read the offset after the lock.
        consuming: a consume task owns (or is scheduled for) this queue.
        try_unlock_times: unlock attempts postponed because a batch was in flight.
    """

    __slots__ = (
        "_arrivals",
        "_consume_lock",
        "_uncommitted",
        "consuming",
        "last_lock_time",
        "locked",
        "previously_locked",
        "try_unlock_times",
    )

    def __init__(self, now: float = 0.0) -> None:
        super().__init__(now)
        self.locked = False
        self.last_lock_time = now
        self.previously_locked = False
        self.consuming = False
        self.try_unlock_times = 0
        self._uncommitted: list[MessageExt] = []
        self._consume_lock: asyncio.Lock | None = None
        self._arrivals: deque[tuple[int, float]] = deque()  # (last offset, monotonic time); metrics only

    def note_arrival(self, last_offset: int, at: float) -> None:
        """Metrics: messages up to queue offset ``last_offset`` arrived at ``at`` (``time.monotonic()``)."""
        self._arrivals.append((last_offset, at))

    def arrival_of(self, offset: int) -> float | None:
        """Metrics: when the message at ``offset`` arrived (per pulled batch; None: unknown).

        Forgets the batches wholly below ``offset`` (messages are taken in offset order).
        """
        arrivals = self._arrivals
        while arrivals and arrivals[0][0] < offset:
            arrivals.popleft()
        return arrivals[0][1] if arrivals else None

    @property
    def consume_lock(self) -> asyncio.Lock:
        """Held while a batch of this queue is being consumed and its result processed."""
        if self._consume_lock is None:
            self._consume_lock = asyncio.Lock()
        return self._consume_lock

    def is_lock_expired(self, now: float, max_live: float = REBALANCE_LOCK_MAX_LIVE_TIME) -> bool:
        """True when the last lock is older than ``max_live`` seconds (``isLockExpired``)."""
        return now - self.last_lock_time > max_live

    def mark_locked(self, now: float) -> None:
        """Record a granted lock."""
        self.locked = True
        self.last_lock_time = now

    def take_messages(self, n: int) -> list[MessageExt]:
        """Return the next ``n`` oldest cached messages not yet consumed (``takeMessages``).

        They stay cached (flow control still counts them) until :meth:`commit`.
        """
        skip = len(self._uncommitted)
        offsets = self._offsets[skip : skip + n]
        return [self._msgs[o] for o in offsets]

    def mark_consumed(self, msgs: Iterable[MessageExt]) -> None:
        """Keep consumed-but-uncommitted messages aside (``auto_commit=False`` SUCCESS)."""
        self._uncommitted.extend(msgs)

    def commit(self, msgs: Iterable[MessageExt] = ()) -> int:
        """Forget ``msgs`` and every uncommitted message; return the offset to commit (−1: none)."""
        done = [*self._uncommitted, *msgs]
        self._uncommitted.clear()
        return self.remove_messages(done)

    def rollback(self) -> None:
        """Consume the uncommitted messages again (``rollback``)."""
        self._uncommitted.clear()

    def has_uncommitted(self) -> bool:
        """True when messages were consumed but not committed."""
        return bool(self._uncommitted)


# ---------------------------------------------------------------------------------------------
# Broker lock RPCs + lock bookkeeping


async def lock_batch_mq(
    rt: ClientRuntime, addr: str, group: str, mqs: Iterable[MessageQueue], timeout: float = _LOCK_TIMEOUT
) -> set[MessageQueue]:
    """LOCK_BATCH_MQ (41): lock or renew ``mqs`` for this client; return the granted queues.

    Raises:
        BrokerError / TransportError.
    """
    body = LockBatchRequestBody(consumer_group=group, client_id=rt.client_id, mq_set=set(mqs))
    cmd = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, LockBatchMqRequestHeader().to_ext_fields(), body.encode())
    resp = await rt.pool.request(addr, cmd, timeout)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    return LockBatchResponseBody.decode(bytes(resp.body or b"{}")).lock_ok_mq_set


async def unlock_batch_mq(
    rt: ClientRuntime,
    addr: str,
    group: str,
    mqs: Iterable[MessageQueue],
    *,
    oneway: bool = False,
    timeout: float = _LOCK_TIMEOUT,
) -> None:
    """UNLOCK_BATCH_MQ (42) for this client's locks on ``mqs``.

    Raises:
        BrokerError / TransportError.
    """
    body = UnlockBatchRequestBody(consumer_group=group, client_id=rt.client_id, mq_set=set(mqs))
    fields = UnlockBatchMqRequestHeader().to_ext_fields()
    if oneway:
        await rt.pool.oneway(
            addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, fields, body.encode(), oneway=True)
        )
        return
    resp = await rt.pool.request(
        addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, fields, body.encode()), timeout
    )
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)


class QueueLocker:
    """The lock half of ``RebalanceImpl``: lock, lockAll and unlock through the masters.

    Args:
        runtime: client runtime (addresses, pool).
        group: consumer group.
    """

    def __init__(self, runtime: ClientRuntime, group: str) -> None:
        self._rt = runtime
        self._group = group
        #: queues a LOCK_BATCH_MQ may have granted and no UNLOCK released since (shutdown
        #: releases them, even a lock whose request was interrupted before its answer came).
        self.maybe_held: set[MessageQueue] = set()

    async def _by_broker(self, mqs: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
        out: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            try:
                addr = await self._rt.find_master_addr(mq.broker_name, mq.topic)
            except RocketMQError as exc:
                log.warning("lock: no master for mq=%s err=%s", mq, exc)
                continue
            out.setdefault(addr, []).append(mq)
        return out

    async def lock(self, mqs: Iterable[MessageQueue]) -> set[MessageQueue]:
        """Lock ``mqs`` (grouped per master); return the granted ones (errors are logged)."""
        granted: set[MessageQueue] = set()
        for addr, group_mqs in (await self._by_broker(mqs)).items():
            self.maybe_held.update(group_mqs)
            try:
                ok = await lock_batch_mq(self._rt, addr, self._group, group_mqs)
            except RocketMQError as exc:
                log.warning("LOCK_BATCH_MQ failed group=%s broker=%s err=%s", self._group, addr, exc)
                continue
            granted |= ok & set(group_mqs)
        return granted

    async def lock_all(self, held: dict[MessageQueue, OrderlyProcessQueue], now: Callable[[], float]) -> None:
        """Renew every held lock (``lockAll``): granted queues are (re)marked locked, refused
        ones unlocked locally. A broker that does not answer changes nothing."""
        live = {mq: pq for mq, pq in held.items() if not pq.dropped}
        for addr, group_mqs in (await self._by_broker(live)).items():
            self.maybe_held.update(group_mqs)
            try:
                ok = await lock_batch_mq(self._rt, addr, self._group, group_mqs)
            except RocketMQError as exc:
                log.warning("lockAll failed group=%s broker=%s err=%s", self._group, addr, exc)
                continue
            # a queue dropped (and unlocked) while the renewal was on the wire: release it again
            stale = [mq for mq in group_mqs if mq in ok and live[mq].dropped]
            if stale:
                await self.unlock(stale)
            t = now()
            for mq in group_mqs:
                pq = live[mq]
                if mq in ok:
                    if not pq.locked:
                        log.info("lockAll: locked again group=%s mq=%s", self._group, mq)
                    pq.mark_locked(t)
                else:
                    if pq.locked:
                        log.warning("lockAll: lock lost group=%s mq=%s", self._group, mq)
                    pq.locked = False

    async def unlock(self, mqs: Iterable[MessageQueue], *, oneway: bool = False) -> None:
        """Release this client's locks on ``mqs``; errors are logged."""
        for addr, group_mqs in (await self._by_broker(mqs)).items():
            try:
                await unlock_batch_mq(self._rt, addr, self._group, group_mqs, oneway=oneway)
                self.maybe_held.difference_update(group_mqs)
            except RocketMQError as exc:
                log.warning("UNLOCK_BATCH_MQ failed group=%s broker=%s err=%s", self._group, addr, exc)


# ---------------------------------------------------------------------------------------------
# Pull loop with the lock gate


class OrderlyPullLoop(ControlledPullLoop):
    """Pull loop that pulls only locked queues and re-reads the offset after a lock.

    Args:
        *args: as :class:`~rocketpipe.client.consumer.pull.PullLoop`.
        read_start_offset: ``computePullFromWhere`` for one queue (−1: not now).
        clustering: False for BROADCASTING (no lock gate).
        **kw: as :class:`~rocketpipe.client.consumer.push_controls.ControlledPullLoop`
            (``controls``).
    """

    def __init__(
        self,
        *args: Any,
        read_start_offset: Callable[[MessageQueue], Awaitable[int]],
        clustering: bool = True,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self._read_start_offset = read_start_offset
        self._clustering = clustering

    async def _pull_once(self, req: PullRequest) -> float | None:
        pq = req.pq
        if self._clustering and isinstance(pq, OrderlyProcessQueue):
            if not pq.locked:
                return PULL_DELAY_WHEN_NOT_LOCKED
            if not pq.previously_locked:
                offset = await self._read_start_offset(req.mq)
                if offset < 0:
                    return self._s.pull_time_delay_when_exception
                if offset < req.next_offset:
                    log.info("orderly: offset moved back after lock mq=%s %d -> %d", req.mq, req.next_offset, offset)
                req.next_offset = offset
                pq.previously_locked = True
        return await super()._pull_once(req)


# ---------------------------------------------------------------------------------------------
# The consume service

SendToDlq = Callable[[MessageExt, int], Awaitable[bool]]
"""``(msg, max_reconsume_times) -> True`` once the message was handed back to the broker."""
UpdateOffset = Callable[[MessageQueue, int], None]


class OrderlyDispatcher:
    """Runs an orderly listener: one batch at a time per queue, in offset order.

    Same ``start`` / ``submit`` / ``pending`` / ``close`` interface as
    :class:`~rocketpipe.client.consumer.concurrent.ConcurrentDispatcher`.

    Args:
        group: consumer group.
        listener: the user listener (function, or :class:`MessageListenerOrderly`).
        update_offset: ``(mq, offset)`` — set the in-memory consume offset.
        send_back: hand a message past its max reconsume times to the broker.
        lock_one: ``LOCK_BATCH_MQ`` of one queue (``lockOneMQ``); None in BROADCASTING.
        tasks: the consumer's task owner.
        consume_thread_max: batches consumed at once across queues (and thread-pool size).
        consume_message_batch_max_size: messages per call.
        suspend_current_queue_time_millis: default suspend time (1 000 ms).
        max_reconsume_times: −1 = ``Integer.MAX_VALUE``.
        now_ms: wall clock, ms (also the statistics' windows).
        stats: where consume statistics go (also read by the pull loop through
            :attr:`stats`); a new :class:`ConsumerStats` over ``now_ms`` when None.
        meter: where the client metrics go (``ClientConfig.metrics``): per pulled batch the
            delivery latency (now − first store time); per listener call the await time (since
            the pull that brought its first message) and the process time (``SUCCESS`` /
            ``COMMIT``: ``success``, else ``failure``). None: none recorded.

    Attributes:
        stats: the consume statistics (``ConsumerStatsManager``).
        consumed_ok / consumed_failed: running totals of acknowledged / failed messages.
    """

    def __init__(
        self,
        group: str,
        listener: OrderlyListenerFn,
        update_offset: UpdateOffset,
        send_back: SendToDlq,
        lock_one: Callable[[MessageQueue], Awaitable[bool]] | None,
        tasks: TaskOwner,
        *,
        consume_thread_max: int,
        consume_message_batch_max_size: int,
        suspend_current_queue_time_millis: int,
        max_reconsume_times: int,
        now_ms: Callable[[], int],
        stats: ConsumerStats | None = None,
        meter: ClientMeter | None = None,
    ) -> None:
        self._group = group
        self._meter = meter
        self._retry_topic = retry_topic(group)
        self._runner = ListenerRunner(
            listener,
            status_type=ConsumeOrderlyStatus,
            failure=ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
            group=group,
            max_threads=consume_thread_max,
            thread_name_prefix=f"orderly-{group}",
        )
        self.stats = stats if stats is not None else ConsumerStats.from_now_ms(now_ms)
        self._update_offset = update_offset
        self._send_back = send_back
        self._lock_one = lock_one
        self._tasks = tasks
        self._batch = consume_message_batch_max_size
        self._suspend_ms = suspend_current_queue_time_millis
        self._max_reconsume = effective_orderly_max_reconsume_times(max_reconsume_times)
        self._now_ms = now_ms
        self._sem = asyncio.Semaphore(consume_thread_max)
        self._active: set[asyncio.Task[None]] = set()
        self._in_batch: set[asyncio.Task[Any]] = set()
        self._closing = False
        self.consumed_ok = 0
        self.consumed_failed = 0

    @property
    def max_reconsume_times(self) -> int:
        """The effective max reconsume times."""
        return self._max_reconsume

    def start(self) -> None:
        """Nothing to spawn up front: consume tasks are per queue."""

    def pending(self) -> int:
        """Return the number of queues with a consume task."""
        return len(self._active)

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """Pulled messages are in ``pq``: start the queue's consume task unless one runs."""
        if self._closing or not isinstance(pq, OrderlyProcessQueue) or pq.dropped:
            return
        meter = self._meter
        if meter is not None and msgs:
            first = msgs[0]
            meter.record_delivery(
                listener_topic(first, self._retry_topic), self._group, self._now_ms() - first.store_timestamp
            )
            pq.note_arrival(msgs[-1].queue_offset, time.monotonic())
        if not pq.consuming:
            pq.consuming = True
            self._spawn(pq, mq, 0.0)

    async def close(self) -> None:
        """Stop consuming; wait for the batches in flight; stop the thread pool."""
        self._closing = True
        tasks = list(self._active)
        for t in tasks:
            if t not in self._in_batch:
                t.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._runner.close()

    def _spawn(self, pq: OrderlyProcessQueue, mq: MessageQueue, delay: float) -> None:
        task = self._tasks.spawn(self._run(pq, mq, delay), f"orderly-{mq.topic}-{mq.broker_name}-{mq.queue_id}")
        self._active.add(task)
        task.add_done_callback(self._active.discard)

    async def _run(self, pq: OrderlyProcessQueue, mq: MessageQueue, delay: float) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            again = await self._consume_queue(pq, mq)
        except asyncio.CancelledError:
            pq.consuming = False
            raise
        except Exception:
            log.exception("orderly consume failed group=%s mq=%s", self._group, mq)
            again = 1.0
        if again is None or self._closing or pq.dropped:
            pq.consuming = False
        else:
            self._spawn(pq, mq, again)

    async def _try_lock_later(self, pq: OrderlyProcessQueue, mq: MessageQueue) -> float:
        """``tryLockLaterAndReconsume``: lock the queue again; retry soon if granted, else in 3 s."""
        await asyncio.sleep(0.01)
        assert self._lock_one is not None
        ok = await self._lock_one(mq)
        return 0.01 if ok else PULL_DELAY_WHEN_NOT_LOCKED

    async def _consume_queue(self, pq: OrderlyProcessQueue, mq: MessageQueue) -> float | None:
        """Consume batches of one queue; return None when done, else seconds until the next try."""
        loop = asyncio.get_running_loop()
        begin = loop.time()
        me = asyncio.current_task()
        while True:
            if pq.dropped or self._closing:
                return None
            if self._lock_one is not None and (not pq.locked or pq.is_lock_expired(loop.time())):
                log.warning(
                    "orderly: queue not locked (or lock expired), consume later group=%s mq=%s", self._group, mq
                )
                return await self._try_lock_later(pq, mq)
            if loop.time() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                return 0.01
            async with self._sem, pq.consume_lock:
                if pq.dropped or self._closing:
                    return None
                msgs = pq.take_messages(self._batch)
                if not msgs:
                    return None
                if me is not None:
                    self._in_batch.add(me)
                try:
                    prepare_batch(msgs, self._group, self._now_ms())
                    if self._meter is not None:
                        arrived = pq.arrival_of(msgs[0].queue_offset)
                        if arrived is not None:
                            self._meter.record_await(msgs[0].topic, self._group, time.monotonic() - arrived)
                    ctx = ConsumeOrderlyContext(message_queue=mq)
                    status = await self._call_listener(msgs, ctx)
                    delay = await self._process_result(msgs, status, ctx, pq, mq)
                finally:
                    self._in_batch.discard(me)
            if delay is not None:
                return delay

    async def _call_listener(self, msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        """Call the listener once; record its RT; return its status (failures: SUSPEND)."""
        status, rt_ms = await self._runner.call(msgs, ctx)
        self.stats.inc_consume_rt(self._group, ctx.message_queue.topic, rt_ms)
        if self._meter is not None and msgs:
            ok = status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
            n = len(msgs)
            self._meter.record_process(msgs[0].topic, self._group, rt_ms / 1000, n if ok else 0, 0 if ok else n)
        return status

    async def _check_reconsume_times(self, msgs: list[MessageExt]) -> bool:
        """``checkReconsumeTimes``: True when the batch must be consumed again."""
        suspend = False
        for m in msgs:
            if m.reconsume_times >= self._max_reconsume:
                if not await self._send_back(m, self._max_reconsume):
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend

    async def _process_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus,
        ctx: ConsumeOrderlyContext,
        pq: OrderlyProcessQueue,
        mq: MessageQueue,
    ) -> float | None:
        """``processConsumeResult``: return None to go on with the next batch, else the delay
        before the queue is consumed again.

        The offset of a finished batch is recorded even when the queue was dropped meanwhile:
        the drop waits for this batch (consume lock) before it persists and unlocks.
        """
        suspend_s = clamp_suspend_ms(ctx.suspend_current_queue_time_millis, self._suspend_ms) / 1000
        commit_offset = -1
        S = ConsumeOrderlyStatus
        stats, group, topic = self.stats, self._group, mq.topic
        if ctx.auto_commit:
            if status in (S.COMMIT, S.ROLLBACK):
                log.warning("orderly: %s needs auto_commit=False; treated as SUCCESS mq=%s", status.value, mq)
                status = S.SUCCESS
            if status is S.SUCCESS:
                commit_offset = pq.commit(msgs)
                self.consumed_ok += len(msgs)
                stats.inc_consume_ok_tps(group, topic, len(msgs))
            else:
                self.consumed_failed += len(msgs)
                stats.inc_consume_failed_tps(group, topic, len(msgs))
                if await self._check_reconsume_times(msgs):
                    self._apply_offset(mq, commit_offset)
                    return suspend_s
                commit_offset = pq.commit(msgs)
        else:
            if status is S.SUCCESS:
                pq.mark_consumed(msgs)
                self.consumed_ok += len(msgs)
                stats.inc_consume_ok_tps(group, topic, len(msgs))
            elif status is S.COMMIT:
                commit_offset = pq.commit(msgs)
                self.consumed_ok += len(msgs)
            elif status is S.ROLLBACK:
                pq.rollback()
                self.consumed_failed += len(msgs)
                return suspend_s
            else:
                self.consumed_failed += len(msgs)
                stats.inc_consume_failed_tps(group, topic, len(msgs))
                if await self._check_reconsume_times(msgs):
                    return suspend_s
                pq.mark_consumed(msgs)
        self._apply_offset(mq, commit_offset)
        return None

    def _apply_offset(self, mq: MessageQueue, offset: int) -> None:
        if offset >= 0:
            self._update_offset(mq, offset)


__all__ = [
    "MAX_TIME_CONSUME_CONTINUOUSLY",
    "REBALANCE_LOCK_INTERVAL",
    "REBALANCE_LOCK_MAX_LIVE_TIME",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "MessageListenerOrderly",
    "OrderlyDispatcher",
    "OrderlyProcessQueue",
    "OrderlyPullLoop",
    "QueueLocker",
    "clamp_suspend_ms",
    "effective_orderly_max_reconsume_times",
    "lock_batch_mq",
    "unlock_batch_mq",
]
