"""Per-queue pull loops of the push consumer (L3).

Mirrors ``DefaultMQPushConsumerImpl.pullMessage`` + ``PullAPIWrapper.processPullResult``: flow
control, long-poll pulls (suspend 15 s, RPC timeout 30 s) with a piggy-backed commit offset,
one decode of the pull body per pull, client-side tag re-filtering, PullStatus handling
(FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL repair) and error back-off.

Statistics: a FOUND pull records its round trip (request sent → body decoded and filtered, ms,
on the loop's monotonic clock) with ``ConsumerStats.inc_pull_rt`` and, when messages are left,
their number with ``inc_pull_tps`` — as the pull callback of
``DefaultMQPushConsumerImpl.pullMessage`` does (``incPullRT`` / ``incPullTPS``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ...errors import BrokerError, RocketMQError
from ...protocol.codes import ResponseCode
from ...protocol.message import PROPERTY_MAX_OFFSET, PROPERTY_MIN_OFFSET, MessageExt, MessageQueue, decode_records
from ...protocol.sysflag import build_pull_sys_flag
from .. import rpc
from ..routing import MASTER_ID
from ..rpc import PullRaw, PullStatus
from .offsets import RemoteOffsetStore
from .process_queue import FlowControlLimits, ProcessQueue, flow_control_delay

if TYPE_CHECKING:
    from ...protocol.bodies.heartbeat import SubscriptionData
    from ..runtime import ClientRuntime
    from .concurrent import ConcurrentDispatcher
    from .stats import ConsumerStats

log = logging.getLogger(__name__)

#: PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL (20 ms), seconds.
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL: Final = 0.02


def process_pull_result(raw: PullRaw, mq: MessageQueue, sub: SubscriptionData | None) -> list[MessageExt]:
    """Decode a FOUND body once and apply the client-side tag filter.

    Mirrors ``PullAPIWrapper.processPullResult``: when the subscription lists tags, keep only
    messages whose ``TAGS`` is one of them (untagged messages are dropped); set the broker
    name and the ``MIN_OFFSET`` / ``MAX_OFFSET`` properties.

    Raises:
        ProtocolError: the body is malformed.
    """
    if raw.status is not PullStatus.FOUND or not raw.body:
        return []
    msgs = decode_records(raw.body)
    tags = sub.tags_set if sub is not None and sub.expression_type == "TAG" else None
    if tags:
        msgs = [m for m in msgs if m.properties.get("TAGS") in tags]
    lo, hi = str(raw.min_offset), str(raw.max_offset)
    for m in msgs:
        m.broker_name = mq.broker_name
        m.properties[PROPERTY_MIN_OFFSET] = lo
        m.properties[PROPERTY_MAX_OFFSET] = hi
    return msgs


@dataclass(slots=True)
class PullRequest:
    """State of one queue's pull loop (``PullRequest``).

    Attributes:
        mq: the queue.
        pq: its ProcessQueue.
        next_offset: offset of the next pull.
        suggest_broker_id: broker id suggested by the last response (0 = master).
        task: the loop's task once started.
    """

    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    suggest_broker_id: int = MASTER_ID
    task: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class PullSettings:
    """Pull knobs of a push consumer (seconds for durations).

    Attributes:
        pull_batch_size: ``maxMsgNums`` per pull (``pullBatchSize``, 32).
        pull_interval: pause after a FOUND pull (``pullInterval``, 0).
        broker_suspend_max_time: broker hold time (``BROKER_SUSPEND_MAX_TIME_MILLIS``, 15 s).
        consumer_timeout_when_suspend: RPC timeout of a long poll
            (``CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND``, 30 s).
        pull_time_delay_when_exception: back-off after errors (1 s).
        post_subscription_when_pull: send the expression with each pull (False).
        limits: flow-control thresholds.
    """

    pull_batch_size: int = 32
    pull_interval: float = 0.0
    broker_suspend_max_time: float = 15.0
    consumer_timeout_when_suspend: float = 30.0
    pull_time_delay_when_exception: float = 1.0
    post_subscription_when_pull: bool = False
    limits: FlowControlLimits = field(default_factory=FlowControlLimits)


class PullLoop:
    """Runs the pull loop of one queue until its ProcessQueue is dropped or it is cancelled.

    Args:
        runtime: client runtime (addresses, pool).
        group: consumer group.
        settings: pull knobs.
        subscription_of: topic → current SubscriptionData (None if unsubscribed).
        offset_store: the group's offset store.
        dispatcher: where pulled messages go; its ``stats`` receive the pull statistics
            unless ``stats`` is given.
        on_offset_illegal: called after an OFFSET_ILLEGAL repair (the rebalance recreates the queue).
        stats: where pull RT / TPS go (default: ``dispatcher.stats``).
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        settings: PullSettings,
        subscription_of: Callable[[str], SubscriptionData | None],
        offset_store: RemoteOffsetStore,
        dispatcher: ConcurrentDispatcher,
        on_offset_illegal: Callable[[PullRequest], Awaitable[None]],
        stats: ConsumerStats | None = None,
    ) -> None:
        self._rt = runtime
        self._group = group
        self._s = settings
        self._sub_of = subscription_of
        self._store = offset_store
        self._dispatcher = dispatcher
        self._on_offset_illegal = on_offset_illegal
        self._stats = stats if stats is not None else dispatcher.stats
        self._flow_control_times = 0

    async def run(self, req: PullRequest) -> None:
        """Pull ``req.mq`` until dropped; never raises except CancelledError."""
        loop = asyncio.get_running_loop()
        while not req.pq.dropped:
            req.pq.last_pull_time = loop.time()
            try:
                delay = await self._pull_once(req)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pull loop error group=%s mq=%s", self._group, req.mq)
                delay = self._s.pull_time_delay_when_exception
            if delay is None:
                return
            if delay > 0:
                await asyncio.sleep(delay)

    async def _pull_once(self, req: PullRequest) -> float | None:
        """One iteration; returns the delay before the next one, or None to stop."""
        s = self._s
        fc = flow_control_delay(req.pq, s.limits)
        if fc is not None:
            self._flow_control_times += 1
            if self._flow_control_times % 1000 == 1:
                log.warning(
                    "flow control group=%s mq=%s count=%d size=%d span=%d",
                    self._group,
                    req.mq,
                    req.pq.msg_count,
                    req.pq.msg_size,
                    req.pq.max_span(),
                )
            return fc
        sub = self._sub_of(req.mq.topic)
        if sub is None:
            return s.pull_time_delay_when_exception
        commit_offset = self._store.read_memory(req.mq)
        has_commit = commit_offset > 0
        addr = self._rt.find_broker_addr(req.mq.broker_name, req.suggest_broker_id)
        if addr is None:
            req.suggest_broker_id = MASTER_ID
            try:
                addr = await self._rt.find_master_addr(req.mq.broker_name, req.mq.topic)
            except RocketMQError as exc:
                log.warning("no broker for pull mq=%s err=%s", req.mq, exc)
                return s.pull_time_delay_when_exception
        if req.suggest_broker_id != MASTER_ID:
            has_commit = False
        flag = build_pull_sys_flag(commit_offset=has_commit, suspend=True, subscription=s.post_subscription_when_pull)
        begin = asyncio.get_running_loop().time()
        try:
            raw = await rpc.pull_message(
                self._rt.pool,
                addr,
                consumer_group=self._group,
                mq=req.mq,
                queue_offset=req.next_offset,
                max_msg_nums=s.pull_batch_size,
                sys_flag=flag,
                commit_offset=commit_offset if has_commit else 0,
                suspend_timeout=s.broker_suspend_max_time,
                subscription=sub.sub_string if s.post_subscription_when_pull else None,
                sub_version=sub.sub_version,
                expression_type=sub.expression_type,
                timeout=s.consumer_timeout_when_suspend,
            )
        except BrokerError as exc:
            if exc.response_code == ResponseCode.FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            log.warning("pull failed group=%s mq=%s offset=%d err=%s", self._group, req.mq, req.next_offset, exc)
            return s.pull_time_delay_when_exception
        except RocketMQError as exc:
            if not req.pq.dropped:
                log.warning("pull failed group=%s mq=%s offset=%d err=%s", self._group, req.mq, req.next_offset, exc)
            return s.pull_time_delay_when_exception
        if req.pq.dropped:
            return None
        req.suggest_broker_id = raw.suggest_which_broker_id
        return await self._on_result(req, raw, sub, begin)

    async def _on_result(self, req: PullRequest, raw: PullRaw, sub: SubscriptionData, begin: float) -> float | None:
        """Handle one pull response; ``begin`` is the loop time the request was sent."""
        status = raw.status
        if status is PullStatus.FOUND:
            msgs = process_pull_result(raw, req.mq, sub)
            req.next_offset = raw.next_begin_offset
            topic = req.mq.topic
            self._stats.inc_pull_rt(self._group, topic, (asyncio.get_running_loop().time() - begin) * 1000)
            if msgs:
                self._stats.inc_pull_tps(self._group, topic, len(msgs))
                req.pq.put_messages(msgs)
                self._dispatcher.submit(msgs, req.pq, req.mq)
                return self._s.pull_interval
            if req.pq.is_empty():
                self._store.update_offset(req.mq, req.next_offset, increase_only=True)
            return 0.0
        if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            req.next_offset = raw.next_begin_offset
            if req.pq.is_empty():
                self._store.update_offset(req.mq, req.next_offset, increase_only=True)
            return 0.0
        # OFFSET_ILLEGAL: reset, persist, drop; the next rebalance recreates the queue there.
        log.warning(
            "offset illegal group=%s mq=%s offset=%d next_begin=%d",
            self._group,
            req.mq,
            req.next_offset,
            raw.next_begin_offset,
        )
        req.next_offset = raw.next_begin_offset
        req.pq.dropped = True
        self._store.update_offset(req.mq, raw.next_begin_offset, increase_only=False)
        await self._on_offset_illegal(req)
        return None
