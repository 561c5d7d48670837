"""Background pulls of the lite pull consumer and its consume-request cache (L3).

Mirrors ``DefaultLitePullConsumerImpl.PullTaskImpl`` / ``pullSyncImpl`` and the
``consumeRequestCache`` that ``poll()`` reads:

* one task per assigned queue: paused → wait for :meth:`LitePullFetcher.resumed` or 1 s;
  dropped → end; caches full → retry in 50 ms; next offset = pending seek, else the pull
  offset, else the start offset from ConsumeFromWhere (failure → retry in 3 s);
* each pull is a long poll (sysflag SUSPEND | SUBSCRIPTION | LITE_PULL, no commit bit,
  ``subVersion`` 0 for TAG expressions, hold ``broker_suspend_max_time``, RPC timeout
  ``consumer_timeout_when_suspend``) sent as PULL_MESSAGE (11), which 4.x and 5.x brokers
  accept (5.x Java clients send LITE_PULL_MESSAGE (361), unknown to 4.x brokers);
* FOUND: the messages go into the queue's ProcessQueue and one :class:`ConsumeRequest` is
  cached, unless a seek is pending; every status moves the pull offset to ``nextBeginOffset``
  (OFFSET_ILLEGAL is only logged, as in Java); broker FLOW_CONTROL → 20 ms, other errors →
  ``pull_time_delay_when_exception``.

Imports sibling client modules, protocol and errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from ...errors import BrokerError, RocketMQError
from ...protocol.bodies.heartbeat import EXPRESSION_TYPE_TAG, SubscriptionData
from ...protocol.message import MessageQueue
from ...protocol.sysflag import build_pull_sys_flag
from .. import rpc
from ..routing import MASTER_ID
from ..rpc import PullRaw, PullStatus
from .lite_pull_queues import (
    PULL_DELAY_ON_START_OFFSET_ERROR,
    PULL_DELAY_WHEN_BROKER_FLOW_CONTROL,
    PULL_DELAY_WHEN_PAUSE,
    AssignedQueues,
    ConsumeRequest,
    LitePullSettings,
    QueueState,
    lite_flow_control_delay,
)
from .pull import process_pull_result

if TYPE_CHECKING:
    from .._tasks import TaskOwner
    from ..runtime import ClientRuntime
    from .process_queue import ProcessQueue

log = logging.getLogger(__name__)

#: ResponseCode.FLOW_CONTROL
_FLOW_CONTROL: Final = 215
#: Java logs flow control once per this many occurrences.
_FLOW_CONTROL_LOG_EVERY: Final = 1000


class LitePullFetcher:
    """Pull tasks of the assigned queues, feeding a cache of ConsumeRequests.

    Args:
        runtime: client runtime (addresses, pool).
        group: consumer group.
        settings: pull knobs.
        assigned: the consumer's queue table (read and updated here).
        tasks: owner of the pull tasks.
        subscription_of: topic → subscription to pull with (None: stop the queue).
        start_offset: ConsumeFromWhere start offset of a queue (< 0 when unknown now).
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        settings: LitePullSettings,
        assigned: AssignedQueues,
        tasks: TaskOwner,
        subscription_of: Callable[[str], SubscriptionData | None],
        start_offset: Callable[[MessageQueue], Awaitable[int]],
    ) -> None:
        self._rt = runtime
        self._group = group
        self._s = settings
        self._assigned = assigned
        self._tasks = tasks
        self._sub_of = subscription_of
        self._start_offset = start_offset
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._suggest_broker: dict[MessageQueue, int] = {}
        self._cache: deque[ConsumeRequest] = deque()
        self._cache_event = asyncio.Event()
        self._resume_event = asyncio.Event()
        self._flow_control_times = 0
        self._closed = False

    @property
    def cached_requests(self) -> int:
        """ConsumeRequests waiting for ``poll()``."""
        return len(self._cache)

    def running_queues(self) -> list[MessageQueue]:
        """Queues with a pull task, sorted."""
        return sorted(self._pull_tasks)

    # ------------------------------------------------------------------ control

    def start_queue(self, mq: MessageQueue) -> None:
        """Start the pull task of ``mq`` (no-op if it runs or the fetcher is closed)."""
        if mq in self._pull_tasks or self._closed:
            return
        name = f"pull-{mq.topic}-{mq.broker_name}-{mq.queue_id}"
        self._pull_tasks[mq] = self._tasks.spawn(self._pull_loop(mq), name)

    def stop_queue(self, mq: MessageQueue) -> None:
        """Cancel the pull task of ``mq`` and drop its cached ConsumeRequests."""
        task = self._pull_tasks.pop(mq, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._suggest_broker.pop(mq, None)
        if any(r.mq == mq for r in self._cache):
            self._cache = deque(r for r in self._cache if r.mq != mq)

    def resumed(self) -> None:
        """Wake paused pull tasks now (they re-check their pause flag)."""
        self._resume_event.set()
        self._resume_event = asyncio.Event()

    def close(self) -> None:
        """Cancel every pull task, drop the cache and release waiting :meth:`take` calls."""
        self._closed = True
        for task in self._pull_tasks.values():
            task.cancel()
        self._pull_tasks.clear()
        self._cache.clear()
        self._cache_event.set()
        self._resume_event.set()

    async def take(self, timeout: float) -> ConsumeRequest | None:
        """Return the oldest cached ConsumeRequest of a live queue, waiting up to ``timeout`` s.

        Returns:
            The request, or None on timeout or when the fetcher is closed.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            while self._cache:
                req = self._cache.popleft()
                if not req.pq.dropped:
                    return req
            if self._closed:
                return None
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            self._cache_event.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._cache_event.wait()
            except TimeoutError:
                return None

    # ------------------------------------------------------------------ pull task

    async def _pull_loop(self, mq: MessageQueue) -> None:
        """Pull ``mq`` until it is revoked, re-seeked or the consumer closes."""
        while True:
            try:
                delay = await self._pull_once(mq)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pull task error group=%s mq=%s", self._group, mq)
                delay = self._s.pull_time_delay_when_exception
            if delay is None:
                return
            if delay == PULL_DELAY_WHEN_PAUSE and self._assigned.is_paused(mq):
                try:
                    async with asyncio.timeout(delay):
                        await self._resume_event.wait()
                except TimeoutError:
                    pass
            elif delay > 0:
                await asyncio.sleep(delay)

    async def _pull_once(self, mq: MessageQueue) -> float | None:
        """One iteration; returns the delay before the next one, or None to stop."""
        st = self._assigned.get(mq)
        if st is None or st.pq.dropped or self._closed:
            return None
        if st.paused:
            return PULL_DELAY_WHEN_PAUSE
        pq = st.pq
        pq.last_pull_time = asyncio.get_running_loop().time()
        fc = self._flow_control(mq, pq)
        if fc is not None:
            return fc
        offset = self._assigned.take_next_pull_offset(mq)
        if offset < 0:
            offset = await self._start_offset(mq)
            if offset < 0:
                return PULL_DELAY_ON_START_OFFSET_ERROR
            if pq.dropped:
                return None
        sub = self._sub_of(mq.topic)
        if sub is None:
            return None
        raw = await self._pull_or_delay(mq, pq, sub, offset)
        if not isinstance(raw, PullRaw):
            return raw
        if pq.dropped or self._closed:
            return None
        self._on_result(st, sub, offset, raw)
        return 0.0

    def _flow_control(self, mq: MessageQueue, pq: ProcessQueue) -> float | None:
        """:func:`lite_flow_control_delay`, logged once per :data:`_FLOW_CONTROL_LOG_EVERY` waits."""
        fc = lite_flow_control_delay(len(self._cache), pq, self._s)
        if fc is not None:
            self._flow_control_times += 1
            if self._flow_control_times % _FLOW_CONTROL_LOG_EVERY == 1:
                log.warning(
                    "flow control group=%s mq=%s cached_requests=%d count=%d size=%d span=%d",
                    self._group,
                    mq,
                    len(self._cache),
                    pq.msg_count,
                    pq.msg_size,
                    pq.max_span(),
                )
        return fc

    async def _pull_or_delay(
        self, mq: MessageQueue, pq: ProcessQueue, sub: SubscriptionData, offset: int
    ) -> PullRaw | float:
        """:meth:`_pull`, or the back-off after its error (broker FLOW_CONTROL: 20 ms)."""
        try:
            return await self._pull(mq, sub, offset)
        except BrokerError as exc:
            if exc.response_code == _FLOW_CONTROL:
                return PULL_DELAY_WHEN_BROKER_FLOW_CONTROL
            log.warning("pull failed group=%s mq=%s offset=%d err=%s", self._group, mq, offset, exc)
        except RocketMQError as exc:
            if not pq.dropped:
                log.warning("pull failed group=%s mq=%s offset=%d err=%s", self._group, mq, offset, exc)
        return self._s.pull_time_delay_when_exception

    def _on_result(self, st: QueueState, sub: SubscriptionData, offset: int, raw: PullRaw) -> None:
        """Handle one pull response: cache a FOUND batch (unless a seek is pending), log
        OFFSET_ILLEGAL, and move the pull offset to ``nextBeginOffset`` whatever the status."""
        mq, pq = st.mq, st.pq
        self._suggest_broker[mq] = raw.suggest_which_broker_id
        if raw.status is PullStatus.FOUND:
            msgs = process_pull_result(raw, mq, sub)
            if msgs and st.seek_offset == -1:
                pq.put_messages(msgs)
                self._cache.append(ConsumeRequest(msgs, mq, pq))
                self._cache_event.set()
        elif raw.status is PullStatus.OFFSET_ILLEGAL:
            log.warning(
                "pull offset illegal group=%s mq=%s offset=%d next_begin=%d",
                self._group,
                mq,
                offset,
                raw.next_begin_offset,
            )
        self._assigned.update_pull_offset(mq, raw.next_begin_offset, pq)

    async def _pull(self, mq: MessageQueue, sub: SubscriptionData, offset: int) -> PullRaw:
        """One long-poll pull with the lite-pull flags (``pullSyncImpl`` with block=true)."""
        rt = self._rt
        s = self._s
        addr = rt.find_broker_addr(mq.broker_name, self._suggest_broker.get(mq, MASTER_ID))
        if addr is None:
            self._suggest_broker.pop(mq, None)
            addr = await rt.find_master_addr(mq.broker_name, mq.topic)
        return await rpc.pull_message(
            rt.pool,
            addr,
            consumer_group=self._group,
            mq=mq,
            queue_offset=offset,
            max_msg_nums=s.pull_batch_size,
            sys_flag=build_pull_sys_flag(commit_offset=False, suspend=True, subscription=True, lite_pull=True),
            commit_offset=0,
            suspend_timeout=s.broker_suspend_max_time,
            subscription=sub.sub_string,
            sub_version=0 if sub.expression_type == EXPRESSION_TYPE_TAG else sub.sub_version,
            expression_type=sub.expression_type,
            timeout=s.consumer_timeout_when_suspend,
        )


__all__ = ["LitePullFetcher"]
