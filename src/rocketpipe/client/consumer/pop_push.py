"""The push consumer's POP mode (5.x, L3): POP queues assigned by the broker, consumed with
POP_MESSAGE, acknowledged per message.

Used by :class:`~rocketpipe.client.consumer.push.PushConsumer` when ``client_rebalance`` is
False (and the listener is concurrent, CLUSTERING): the broker assigns queues
(QUERY_ASSIGNMENT, see :mod:`.assignment`); queues in POP mode are consumed here, queues in PULL
mode by the ordinary pull loops. Mirrors, from the Java client 5.3.3:

* ``PopProcessQueue`` → :class:`PopProcessQueue` (messages waiting for their ack, last pop
  time, dropped flag);
* ``DefaultMQPushConsumerImpl.popMessage`` / ``processPopResult`` → :class:`PopLoop`: flow
  control on ``pop_threshold_for_queue`` (50 ms), pause (1 s), POP_MESSAGE of
  ``pop_batch_nums`` messages invisible for ``pop_invisible_time`` with a 15 s long poll, tag
  re-filtering and over-retried messages acknowledged without consumption, FOUND → consume;
  POLLING_FULL / errors → retry after ``pull_time_delay_when_exception``; FLOW_CONTROL → 20 ms;
* ``ConsumeMessagePopConcurrentlyService`` → :class:`PopConsumeService`: batches of
  ``consume_message_batch_max_size``, a batch whose pop has outlived its invisible time is not
  consumed (nor its result applied), CONSUME_SUCCESS → ACK_MESSAGE per message up to
  ``ack_index``, the others → CHANGE_MESSAGE_INVISIBLETIME with :func:`pop_invisible_delay`,
  or, at ``max_reconsume_times``, :func:`max_reconsume_decision`;
* the POP half of ``RebalanceImpl.updateMessageQueueAssignment`` → :class:`PopConsumption`.

Statistics go to the push consumer's :class:`~.stats.ConsumerStats` (pull RT / TPS of FOUND
pops, consume RT, OK / failed counts), as Java's service reports to ``ConsumerStatsManager``.
As in Java, a queue dropped (rebalance, mode switch, shutdown) while a long-polling POP is
parked on the broker leaves what that POP returns unconsumed: those messages become visible
again after ``pop_invisible_time`` (from the pop retry topic, ``reconsume_times`` + 1).

Imports protocol, errors, the client runtime and sibling consumer modules.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...errors import BrokerError, InvalidArgumentError, RocketMQError
from ...protocol.bodies.heartbeat import SubscriptionData
from ...protocol.codes import ResponseCode
from ...protocol.headers.pop import ExtraInfo, pop_retry_topic_v1
from ...protocol.message import MessageExt, MessageQueue
from .._tasks import TaskOwner
from ..metrics import ClientMeter
from .assignment import AssignmentProbe
from .concurrent import ack_index_for
from .consume_pool import ConsumePool
from .listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, MessageListenerConcurrently, prepare_batch
from .pop_calls import PROPERTY_POP_CK, PopStatus, ack_message, change_invisible_time, pop_message
from .process_queue import PULL_DELAY_WHEN_FLOW_CONTROL, PULL_MAX_IDLE_TIME
from .push_controls import PULL_DELAY_WHEN_SUSPEND, PushControls
from .retry import effective_max_reconsume_times, is_retry_topic
from .stats import ConsumerStats

if TYPE_CHECKING:
    from ..runtime import ClientRuntime

log = logging.getLogger(__name__)

__all__ = [
    "MAX_POP_INVISIBLE_TIME",
    "MIN_POP_INVISIBLE_TIME",
    "POP_DELAY_LEVEL",
    "PopConsumeService",
    "PopConsumption",
    "PopLoop",
    "PopProcessQueue",
    "PopRequest",
    "PopSettings",
    "check_pop_settings",
    "max_reconsume_decision",
    "pop_invisible_delay",
]

#: DefaultMQPushConsumerImpl.popDelayLevel: seconds of invisibility per retry level.
POP_DELAY_LEVEL: Final = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: DefaultMQPushConsumerImpl.MIN_POP_INVISIBLE_TIME (5 000 ms), seconds.
MIN_POP_INVISIBLE_TIME: Final = 5.0
#: DefaultMQPushConsumerImpl.MAX_POP_INVISIBLE_TIME (300 000 ms), seconds.
MAX_POP_INVISIBLE_TIME: Final = 300.0
#: DefaultMQPushConsumerImpl.ASYNC_TIMEOUT (3 000 ms) of ack / change-invisible-time, seconds.
ASYNC_TIMEOUT: Final = 3.0
#: PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL (20 ms), seconds.
POP_DELAY_WHEN_BROKER_FLOW_CONTROL: Final = 0.02


# ---------------------------------------------------------------------------------- pure rules


def pop_invisible_delay(delay_level: int, reconsume_times: int) -> int | None:
    """Seconds of invisibility for a message the listener failed (``changePopInvisibleTime``).

    Level 0 (the context's default) means "level = ``reconsume_times``"; the level indexes
    :data:`POP_DELAY_LEVEL`, levels past its end take its last entry (7 200 s). A negative
    level gives None: Java indexes the table with it and fails before sending anything, so
    the message stays invisible until its current invisible time ends.

    >>> pop_invisible_delay(0, 0), pop_invisible_delay(0, 3), pop_invisible_delay(2, 0)
    (10, 120, 60)
    >>> pop_invisible_delay(0, 40), pop_invisible_delay(-1, 0) is None
    (7200, True)
    """
    if delay_level == 0:
        delay_level = reconsume_times
    if delay_level < 0:
        return None
    return POP_DELAY_LEVEL[-1] if delay_level >= len(POP_DELAY_LEVEL) else POP_DELAY_LEVEL[delay_level]


def max_reconsume_decision(now_ms: int, born_timestamp_ms: int) -> int | None:
    """What to do with a failed message at ``max_reconsume_times`` (``checkNeedAckOrDelay``).

    Returns:
        None: acknowledge it (give up) — it was born more than twice the last delay level
        (2 × 7 200 s) ago; otherwise the delay level to hand to :func:`pop_invisible_delay`:
        one past the largest level whose delay the message's age has reached (−1 when its age
        is below the first level, 10 s, which — as in Java — changes nothing).

    >>> max_reconsume_decision(20_000_000, 0) is None
    True
    >>> max_reconsume_decision(45_000, 0), max_reconsume_decision(8_000_000, 0), max_reconsume_decision(5_000, 0)
    (2, 16, -1)
    """
    age = now_ms - born_timestamp_ms
    if age > POP_DELAY_LEVEL[-1] * 1000 * 2:
        return None
    level = len(POP_DELAY_LEVEL) - 1
    while level >= 0:
        if age >= POP_DELAY_LEVEL[level] * 1000:
            return level + 1
        level -= 1
    return level


@dataclass(frozen=True, slots=True)
class PopSettings:
    """POP knobs of a push consumer (seconds for durations).

    Attributes:
        pop_threshold_for_queue: messages waiting for their ack above which a queue stops
            popping (``DefaultMQPushConsumer.popThresholdForQueue``, 96).
        pop_invisible_time: invisibility of popped messages, in [5, 300] s
            (``popInvisibleTime``, 60 000 ms).
        pop_batch_nums: messages per POP_MESSAGE, in [1, 32] (``popBatchNums``, 32).
        broker_suspend_max_time: long-poll time (``BROKER_SUSPEND_MAX_TIME_MILLIS``, 15 s).
        pull_interval: pause after a FOUND pop (``pullInterval``, 0).
        pull_time_delay_when_exception: back-off after errors and POLLING_FULL (1 s).
        max_reconsume_times: −1 = 16 (``maxReconsumeTimes``).
    """

    pop_threshold_for_queue: int = 96
    pop_invisible_time: float = 60.0
    pop_batch_nums: int = 32
    broker_suspend_max_time: float = 15.0
    pull_interval: float = 0.0
    pull_time_delay_when_exception: float = 1.0
    max_reconsume_times: int = -1


def check_pop_settings(pop_threshold_for_queue: int, pop_invisible_time: float, pop_batch_nums: int) -> None:
    """Validate the POP options (``DefaultMQPushConsumerImpl.checkConfig``).

    Raises:
        InvalidArgumentError: ``pop_invisible_time`` outside [5, 300] s, ``pop_batch_nums``
            outside [1, 32], or ``pop_threshold_for_queue`` < 1.
    """
    if not MIN_POP_INVISIBLE_TIME <= pop_invisible_time <= MAX_POP_INVISIBLE_TIME:
        raise InvalidArgumentError("pop_invisible_time must be in [5, 300] seconds")
    if not 1 <= pop_batch_nums <= 32:
        raise InvalidArgumentError("pop_batch_nums must be in [1, 32]")
    if pop_threshold_for_queue < 1:
        raise InvalidArgumentError("pop_threshold_for_queue must be >= 1")


# ---------------------------------------------------------------------------------- state


class PopProcessQueue:
    """Client state of one POP queue (``PopProcessQueue``; sync, no awaits).

    Attributes:
        wait_ack_count: messages popped and not yet acknowledged / changed / given up.
        last_pop_time: loop time (seconds) of the last pop attempt.
        dropped: True once the queue is no longer consumed by this client.
    """

    __slots__ = ("dropped", "last_pop_time", "wait_ack_count")

    def __init__(self, now: float = 0.0) -> None:
        self.wait_ack_count = 0
        self.last_pop_time = now
        self.dropped = False

    def inc_found_msg(self, count: int) -> None:
        """``incFoundMsg``: ``count`` messages were popped."""
        self.wait_ack_count += count

    def ack(self) -> int:
        """``ack``: one message is done; returns the count before the decrement."""
        before = self.wait_ack_count
        self.wait_ack_count -= 1
        return before

    def dec_found_msg(self, count: int) -> None:
        """``decFoundMsg``: ``count`` messages were abandoned (pop timed out, queue dropped)."""
        self.wait_ack_count -= count

    def is_pull_expired(self, now: float) -> bool:
        """True when the last pop is older than 120 s (``isPullExpired``)."""
        return now - self.last_pop_time > PULL_MAX_IDLE_TIME


@dataclass(slots=True)
class PopRequest:
    """One POP queue's loop state (``PopRequest``).

    Attributes:
        mq: the assigned queue (``queue_id`` −1: any queue of the topic on that broker).
        pq: its :class:`PopProcessQueue`.
        init_mode: ``ConsumeInitMode`` for a group without an offset (MIN for
            CONSUME_FROM_FIRST_OFFSET, else MAX; ``RebalancePushImpl.getConsumeInitMode``).
        task: the loop's task once started.
    """

    mq: MessageQueue
    pq: PopProcessQueue
    init_mode: int
    task: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass(slots=True)
class PopConsumeRequest:
    """One listener call's worth of popped messages (``ConsumeRequest``).

    ``pop_time`` / ``invisible_time`` (ms) come from the first message's receipt handle.
    """

    msgs: list[MessageExt]
    pq: PopProcessQueue
    mq: MessageQueue
    pop_time: int = 0
    invisible_time: int = 0
    arrived: float = 0.0  # time.monotonic() of the pop that brought the batch (metrics only)

    @classmethod
    def of(cls, msgs: list[MessageExt], pq: PopProcessQueue, mq: MessageQueue) -> PopConsumeRequest:
        """Build, reading the pop time and invisible time of ``msgs[0]``'s handle (0 if unreadable)."""
        try:
            ei = ExtraInfo.parse(msgs[0].properties.get(PROPERTY_POP_CK))
            return cls(msgs, pq, mq, ei.pop_time, ei.invisible_time)
        except (InvalidArgumentError, IndexError):
            log.error("parse extra info error mq=%s", mq)
            return cls(msgs, pq, mq)

    def is_pop_timeout(self, now_ms: int) -> bool:
        """True when the messages are visible to the group again (``isPopTimeout``)."""
        if not self.msgs or self.pop_time <= 0 or self.invisible_time <= 0:
            return True
        return now_ms - self.pop_time >= self.invisible_time


# ---------------------------------------------------------------------------------- consume


class PopConsumeService:
    """Runs a concurrent listener over popped messages (``ConsumeMessagePopConcurrentlyService``).

    Args:
        runtime: the client runtime (ack / change-invisible-time calls).
        group: consumer group.
        listener: the (hook-wrapped) concurrent listener.
        tasks: the consumer's task owner.
        consume_thread_max: worker count and thread-pool size (``consumeThreadMax``, 20).
        consume_message_batch_max_size: messages per listener call (1).
        max_reconsume_times: −1 = 16.
        now_ms: wall clock, ms.
        stats: where consume statistics go (``ConsumerStatsManager``: consume RT per call, OK /
            failed counts in ``processConsumeResult``); shared with the push consumer's
            dispatcher so GET_CONSUMER_RUNNING_INFO reports both modes.
        meter: where the client metrics go (``ClientConfig.metrics``; None: none recorded), as
            Java 5's POP-based push consumer records them: per popped batch the delivery latency
            (now − the broker's pop time), per listener call the await time (since the pop) and
            the process time of its messages (up to ``ack_index``: ``success``, the rest
            ``failure``).
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        listener: MessageListenerConcurrently,
        tasks: TaskOwner,
        *,
        consume_thread_max: int,
        consume_message_batch_max_size: int,
        max_reconsume_times: int,
        now_ms: Callable[[], int],
        stats: ConsumerStats | None = None,
        meter: ClientMeter | None = None,
    ) -> None:
        self._rt = runtime
        self._group = group
        self._meter = meter
        self._arrived = 0.0  # the arrival stamp of the batch being submitted (metrics only)
        self._pool: ConsumePool[PopConsumeRequest, PopProcessQueue] = ConsumePool(
            listener,
            group,
            tasks,
            name="pop-consume",
            consume_thread_max=consume_thread_max,
            consume_message_batch_max_size=consume_message_batch_max_size,
            make_request=PopConsumeRequest.of if meter is None else self._stamped_request,
            consume=self._consume,
            logger=log,
        )
        self._runner = self._pool.runner
        self.stats = stats if stats is not None else ConsumerStats.from_now_ms(now_ms)
        self._max_times = effective_max_reconsume_times(max_reconsume_times)
        self._now_ms = now_ms
        #: messages acknowledged after CONSUME_SUCCESS.
        self.consumed_ok = 0
        #: messages the listener failed (RECONSUME_LATER, errors, beyond ack_index).
        self.consumed_failed = 0
        #: batches dropped because their pop outlived its invisible time.
        self.pop_timeouts = 0

    @property
    def max_reconsume_times(self) -> int:
        """The effective maximum (16 for −1)."""
        return self._max_times

    def start(self) -> None:
        """Spawn the worker tasks."""
        self._pool.start()

    def submit(self, msgs: list[MessageExt], pq: PopProcessQueue, mq: MessageQueue) -> None:
        """Queue ``msgs`` in batches of ``consume_message_batch_max_size`` (``submitPopConsumeRequest``)."""
        if self._meter is not None and msgs:
            self._arrived = time.monotonic()
            first = self._stamped_request(msgs[:1], pq, mq)
            if first.pop_time > 0:
                self._meter.record_delivery(mq.topic, self._group, self._now_ms() - first.pop_time)
        self._pool.submit(msgs, pq, mq)

    def _stamped_request(self, msgs: list[MessageExt], pq: PopProcessQueue, mq: MessageQueue) -> PopConsumeRequest:
        req = PopConsumeRequest.of(msgs, pq, mq)
        req.arrived = self._arrived
        return req

    async def close(self) -> None:
        """Stop taking batches, wait for the batches being consumed, stop the thread pool."""
        await self._pool.close()

    async def _consume(self, req: PopConsumeRequest) -> None:
        """``ConsumeRequest.run``."""
        if req.pq.dropped:
            return
        if req.is_pop_timeout(self._now_ms()):
            log.info("pop timed out before consumption group=%s mq=%s pop_time=%d", self._group, req.mq, req.pop_time)
            self.pop_timeouts += 1
            req.pq.dec_found_msg(len(req.msgs))
            return
        prepare_batch(req.msgs, self._group, self._now_ms())
        meter = self._meter
        if meter is not None and req.msgs:
            meter.record_await(req.msgs[0].topic, self._group, time.monotonic() - req.arrived)
        ctx = ConsumeConcurrentlyContext(message_queue=req.mq)
        status, rt_ms = await self._runner.call(req.msgs, ctx)
        self.stats.inc_consume_rt(self._group, req.mq.topic, rt_ms)
        if meter is not None and req.msgs:
            n = len(req.msgs)
            ack = ack_index_for(status, ctx.ack_index, n)
            meter.record_process(req.msgs[0].topic, self._group, rt_ms / 1000, ack + 1, n - ack - 1)
        if req.pq.dropped or req.is_pop_timeout(self._now_ms()):
            log.warning(
                "queue dropped or pop timed out, result discarded group=%s mq=%s dropped=%s",
                self._group,
                req.mq,
                req.pq.dropped,
            )
            if req.is_pop_timeout(self._now_ms()):
                self.pop_timeouts += 1
            req.pq.dec_found_msg(len(req.msgs))
            return
        await self.process_consume_result(status, ctx, req)

    async def process_consume_result(
        self, status: ConsumeConcurrentlyStatus, ctx: ConsumeConcurrentlyContext, req: PopConsumeRequest
    ) -> None:
        """Ack the successes, delay the failures (``processConsumeResult``).

        Messages up to ``ack_index`` (all on CONSUME_SUCCESS, none on RECONSUME_LATER) get
        ACK_MESSAGE; the others CHANGE_MESSAGE_INVISIBLETIME for
        ``pop_invisible_delay(ctx.delay_level_when_next_consume, reconsume_times)`` seconds — or,
        when ``reconsume_times >= max_reconsume_times``, an ack or a delay per
        :func:`max_reconsume_decision`. Call errors are logged (Java's calls are asynchronous
        and only log), never raised.
        """
        msgs = req.msgs
        if not msgs:
            return
        ack = ack_index_for(status, ctx.ack_index, len(msgs))
        self.consumed_ok += ack + 1
        self.consumed_failed += len(msgs) - ack - 1
        self.stats.inc_consume_ok_tps(self._group, req.mq.topic, ack + 1)
        self.stats.inc_consume_failed_tps(self._group, req.mq.topic, len(msgs) - ack - 1)
        calls: list[Coroutine[Any, Any, None]] = [self._ack(m) for m in msgs[: ack + 1]]
        for m in msgs[ack + 1 :]:
            if m.reconsume_times >= self._max_times:
                level = max_reconsume_decision(self._now_ms(), m.born_timestamp)
                if level is None:
                    log.warning("consume too many times, ack group=%s msg=%s", self._group, m.msg_id)
                    calls.append(self._ack(m))
                else:
                    calls.append(self._change_invisible(m, level))
                continue
            calls.append(self._change_invisible(m, ctx.delay_level_when_next_consume))
        await asyncio.gather(*calls)  # Java fires them asynchronously: one round trip per batch, not per message
        for _ in msgs:
            req.pq.ack()

    async def ack(self, msg: MessageExt) -> None:
        """ACK_MESSAGE for a message consumed (or filtered) outside a consume request; errors logged."""
        await self._ack(msg)

    async def _ack(self, msg: MessageExt) -> None:
        try:
            await ack_message(self._rt, self._group, msg, ASYNC_TIMEOUT)
        except RocketMQError as exc:
            log.warning("ack message failed group=%s msg=%s err=%s", self._group, msg.msg_id, exc)

    async def _change_invisible(self, msg: MessageExt, delay_level: int) -> None:
        delay = pop_invisible_delay(delay_level, msg.reconsume_times)
        if delay is None:
            log.error("invalid delay level %d, nothing changed group=%s msg=%s", delay_level, self._group, msg.msg_id)
            return
        try:
            await change_invisible_time(self._rt, self._group, msg, delay, ASYNC_TIMEOUT)
        except RocketMQError as exc:
            log.error("changePopInvisibleTime failed group=%s msg=%s err=%s", self._group, msg.msg_id, exc)


# ---------------------------------------------------------------------------------- pop loop


class PopLoop:
    """Runs the POP loop of one assigned queue until it is dropped (``popMessage``).

    Args:
        runtime: the client runtime.
        group: consumer group.
        settings: :class:`PopSettings`.
        subscription_of: topic → current SubscriptionData (None if unsubscribed).
        service: where popped messages go.
        controls: the consumer's pause flag.
        now_ms: wall clock, ms (``bornTime``).
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        settings: PopSettings,
        subscription_of: Callable[[str], SubscriptionData | None],
        service: PopConsumeService,
        controls: PushControls,
        now_ms: Callable[[], int],
    ) -> None:
        self._rt = runtime
        self._group = group
        self._s = settings
        self._sub_of = subscription_of
        self._service = service
        self._controls = controls
        self._now_ms = now_ms
        self.flow_control_times = 0

    async def run(self, req: PopRequest) -> None:
        """Pop ``req.mq`` until dropped; never raises except CancelledError."""
        loop = asyncio.get_running_loop()
        while not req.pq.dropped:
            req.pq.last_pop_time = loop.time()
            try:
                delay = await self._pop_once(req)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pop loop error group=%s mq=%s", self._group, req.mq)
                delay = self._s.pull_time_delay_when_exception
            if delay > 0:
                await asyncio.sleep(delay)

    async def _pop_once(self, req: PopRequest) -> float:
        """One iteration; returns the delay (seconds) before the next one."""
        s = self._s
        if self._controls.paused:
            return PULL_DELAY_WHEN_SUSPEND
        if req.pq.wait_ack_count > s.pop_threshold_for_queue:
            self.flow_control_times += 1
            if self.flow_control_times % 1000 == 1:
                log.warning(
                    "pop flow control group=%s mq=%s waiting_ack=%d", self._group, req.mq, req.pq.wait_ack_count
                )
            return PULL_DELAY_WHEN_FLOW_CONTROL
        sub = self._sub_of(req.mq.topic)
        if sub is None:
            return s.pull_time_delay_when_exception
        loop = asyncio.get_running_loop()
        begin = loop.time()
        try:
            addr = await self._rt.find_master_addr(req.mq.broker_name, req.mq.topic)
            result = await pop_message(
                self._rt,
                addr,
                group=self._group,
                topic=req.mq.topic,
                broker_name=req.mq.broker_name,
                queue_id=req.mq.queue_id,
                max_msg_nums=s.pop_batch_nums,
                invisible_time=s.pop_invisible_time,
                poll_time=s.broker_suspend_max_time,
                born_time_ms=self._now_ms(),
                init_mode=req.init_mode,
                subscription=sub,
            )
        except BrokerError as exc:
            if exc.response_code == ResponseCode.FLOW_CONTROL:
                return POP_DELAY_WHEN_BROKER_FLOW_CONTROL
            log.warning("pop failed group=%s mq=%s err=%s", self._group, req.mq, exc)
            return s.pull_time_delay_when_exception
        except RocketMQError as exc:
            if not req.pq.dropped:
                log.warning("pop failed group=%s mq=%s err=%s", self._group, req.mq, exc)
            return s.pull_time_delay_when_exception
        if result.status is PopStatus.FOUND:
            stats = self._service.stats
            stats.inc_pull_rt(self._group, req.mq.topic, (loop.time() - begin) * 1000)  # as PullLoop
            msgs = await self._filter(list(result.msg_found_list), sub)
            if msgs and not req.pq.dropped:
                stats.inc_pull_tps(self._group, req.mq.topic, len(msgs))
                req.pq.inc_found_msg(len(msgs))
                self._service.submit(msgs, req.pq, req.mq)
                return s.pull_interval
            return 0.0
        if result.status is PopStatus.POLLING_FULL:
            return s.pull_time_delay_when_exception
        return 0.0  # NO_NEW_MSG / POLLING_NOT_FOUND: pop again at once

    async def _filter(self, msgs: list[MessageExt], sub: SubscriptionData) -> list[MessageExt]:
        """``processPopResult``: keep tag matches and messages under the retry limit; ack the rest."""
        kept = msgs
        if sub.tags_set and not sub.class_filter_mode and sub.expression_type in ("", "TAG"):
            kept = [m for m in msgs if m.tags is not None and m.tags in sub.tags_set]
        max_times = self._service.max_reconsume_times
        kept = [m for m in kept if m.reconsume_times <= max_times]
        if len(kept) != len(msgs):
            keep_ids = {id(m) for m in kept}
            dropped = [m for m in msgs if id(m) not in keep_ids]
            for m in dropped:
                log.info(
                    "pop: ack without consumption (filtered or over %d retries) group=%s msg=%s",
                    max_times,
                    self._group,
                    m.msg_id,
                )
            await asyncio.gather(*(self._service.ack(m) for m in dropped))
        return kept


# ---------------------------------------------------------------------------------- queues


class PopConsumption:
    """The POP side of a push consumer: assigned POP queues, their loops, the consume service.

    Args:
        loop_runner: runs one queue (a :class:`PopLoop`).
        service: the consume service.
        tasks: the consumer's task owner.
    """

    def __init__(self, loop_runner: PopLoop, service: PopConsumeService, tasks: TaskOwner) -> None:
        self.loop = loop_runner
        self.service = service
        self.probe = AssignmentProbe()
        self.queues: dict[MessageQueue, PopRequest] = {}
        self._tasks = tasks

    def working_queues(self) -> list[MessageQueue]:
        """Assigned POP queues not dropped (sorted)."""
        return sorted(mq for mq, r in self.queues.items() if not r.pq.dropped)

    def update_queues(
        self, topic: str, assigned: Iterable[MessageQueue], now: float, init_mode: int
    ) -> tuple[bool, list[PopRequest]]:
        """The POP half of ``updateMessageQueueAssignment`` for ``topic``.

        Drops held POP queues of the topic that are no longer assigned or whose last pop is
        older than 120 s; creates requests for newly assigned ones (not started).

        Args:
            topic: the topic.
            assigned: the POP assignments' queues of this topic.
            now: loop time, seconds.
            init_mode: ``ConsumeInitMode`` for the new requests.

        Returns:
            (changed, new requests to :meth:`start`).
        """
        want = {mq for mq in assigned if mq.topic == topic}
        changed = False
        for mq, req in sorted(self.queues.items()):
            if mq.topic == topic and (mq not in want or req.pq.is_pull_expired(now)):
                self.drop(mq)
                changed = True
        new: list[PopRequest] = []
        for mq in sorted(want):
            if mq not in self.queues:
                req = PopRequest(mq, PopProcessQueue(now), init_mode)
                self.queues[mq] = req
                new.append(req)
                log.info("rebalance: add pop queue mq=%s", mq)
                changed = True
        return changed, new

    def start(self, reqs: Iterable[PopRequest]) -> None:
        """Start the loops of new requests."""
        for req in reqs:
            if self.queues.get(req.mq) is req and not req.pq.dropped:
                req.task = self._tasks.spawn(
                    self.loop.run(req), f"pop-{req.mq.topic}-{req.mq.broker_name}-{req.mq.queue_id}"
                )

    def drop(self, mq: MessageQueue) -> None:
        """Stop consuming a POP queue (``removeUnnecessaryPopMessageQueue``: nothing to persist)."""
        req = self.queues.pop(mq, None)
        if req is None:
            return
        req.pq.dropped = True
        if req.task is not None and req.task is not asyncio.current_task():
            req.task.cancel()
        log.info("rebalance: drop pop queue mq=%s", mq)

    def drop_not_subscribed(self, topics: Iterable[str]) -> None:
        """Drop queues of topics no longer subscribed and forget their probe results."""
        keep = set(topics)
        for mq in [mq for mq in self.queues if mq.topic not in keep]:
            self.drop(mq)
        self.probe.retain(keep)

    def stop_popping(self) -> None:
        """Cancel every pop loop; the queues stay live so batches already popped still get
        their ack / change-invisible-time (a dropped queue's results are discarded)."""
        for req in self.queues.values():
            if req.task is not None and req.task is not asyncio.current_task():
                req.task.cancel()

    async def close(self) -> None:
        """Stop popping, wait for the batches being consumed (acked as usual), then drop every
        queue. Java's 5.3.3 shutdown never stops its POP service; this is the graceful order its
        pull path follows (consume service first, then ``rebalanceImpl.destroy``)."""
        self.stop_popping()
        await self.service.close()
        for mq in list(self.queues):
            self.drop(mq)


def update_pop_retry_subscription(
    topic: str,
    group: str,
    has_pull: bool,
    has_pop: bool,
    subscriptions: MutableMapping[str, SubscriptionData],
    now_ms: int,
) -> bool:
    """Subscribe / unsubscribe the topic's POP retry topic when its mode switches.

    Mirrors ``updateMessageQueueAssignment``: a (non-retry) topic assigned only PULL queues
    also consumes ``%RETRY%<group>_<topic>`` (retries left by an earlier POP mode), one
    assigned only POP queues no longer does (the broker pops its retries itself).

    Returns:
        True when the subscriptions changed.

    >>> subs = {}
    >>> update_pop_retry_subscription("T", "g", True, False, subs, 0), sorted(subs)
    (True, ['%RETRY%g_T'])
    >>> update_pop_retry_subscription("T", "g", False, True, subs, 0), sorted(subs)
    (True, [])
    """
    if is_retry_topic(topic):
        return False
    retry = pop_retry_topic_v1(topic, group)
    if has_pull and not has_pop:
        if retry not in subscriptions:
            subscriptions[retry] = SubscriptionData.build(retry, "*", sub_version=now_ms)
            return True
    elif has_pop and not has_pull:
        return subscriptions.pop(retry, None) is not None
    return False
