"""The push consumer's side of rebalancing (L3): process queues, orderly locks, drops, starts.

Mirrors ``RebalancePushImpl`` + the process-queue half of ``RebalanceImpl``. The shared driver
(:class:`~.rebalance_service.RebalanceService`) hands each topic's allocation to
:meth:`PushRebalance.apply` (``messageQueueChanged``), or first offers the topic to
:meth:`PushRebalance.assign_by_broker` (``tryQueryAssignment`` / ``getRebalanceResultFromBroker``
/ ``updateMessageQueueAssignment``, ``client_rebalance=False``). Rules:

* **Diff.** :func:`~.rebalance.plan_rebalance` (``updateProcessQueueTableInRebalance``): held
  queues no longer allocated, or not pulled for 120 s, are dropped; newly allocated ones added.
* **Orderly locks (CLUSTERING).** New queues are added only once LOCK_BATCH_MQ granted them (a
  refusal retries the round in 0.5 s); :meth:`~PushRebalance.lock_one` /
  :meth:`~PushRebalance.lock_all` renew them (``lockOneMQ`` / ``lockAll``).
* **Drop** (``removeUnnecessaryMessageQueue``): the pull stops, the offset is persisted
  (acknowledged) and forgotten; an orderly CLUSTERING queue waits up to 1 s for its batch in
  flight, then persists and UNLOCK_BATCH_MQs it (in the background if the batch is still
  running).
* **Start offset** (``computePullFromWhere``): ConsumeFromWhere on the broker's stored offset
  (READ_FROM_STORE); −1 skips the queue this round.
* **Changed** (``messageQueueChanged``): the topic's subscription gets a new version and a
  heartbeat goes to every broker; then the new pull loops start.

Imports sibling client modules and protocol.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

from ...protocol.headers.pop import ConsumeInitMode
from ...protocol.message import MessageQueue
from .assignment import QUERY_ASSIGNMENT_TIMEOUT, query_assignment, split_assignments, strategy_name
from .listener import MessageModel
from .offset_ops import persist_quietly
from .offsets import ConsumeFromWhere, ReadOffsetType
from .orderly import UNLOCK_WAIT_CONSUME, OrderlyProcessQueue, QueueLocker
from .pop_push import update_pop_retry_subscription
from .process_queue import ProcessQueue
from .pull import PullLoop, PullRequest
from .rebalance import plan_rebalance

if TYPE_CHECKING:
    from ...clock import Clock
    from ...protocol.bodies.heartbeat import SubscriptionData
    from .._tasks import TaskOwner
    from ..runtime import ClientRuntime
    from .offset_ops import BrokerOffsets, OffsetStore
    from .pop_push import PopConsumption
    from .push_view import PushConsumerView

log = logging.getLogger(__name__)

#: Seconds before a round retries the queues whose lock was refused.
LOCK_REFUSED_RETRY: Final = 0.5


class PushRebalance:
    """Applies rebalance results to a push consumer's queues (``processQueueTable``).

    Args:
        runtime: client runtime (heartbeats, QUERY_ASSIGNMENT, locks).
        consumer: the consumer, for its settings (read at each use).
        subscriptions: the consumer's subscriptions (new versions on change; POP retry topics
            added / removed by broker assignments).
        offset_store: the group's offset store.
        offsets: the broker offset calls (start offsets).
        tasks: the consumer's task owner (pull loops, background drops, retries).
        clock: wall clock (subscription versions).
        closed: True once the consumer is closing.
        wake: run a rebalance round now.

    Attributes:
        queues: queue → pull request of every held queue (``processQueueTable``).
        locker: the orderly queue locks.
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        consumer: PushConsumerView,
        *,
        subscriptions: MutableMapping[str, SubscriptionData],
        offset_store: OffsetStore,
        offsets: BrokerOffsets,
        tasks: TaskOwner,
        clock: Clock,
        closed: Callable[[], bool],
        wake: Callable[[], None],
    ) -> None:
        self._rt = runtime
        self._c = consumer
        self._subscriptions = subscriptions
        self._store = offset_store
        self._offsets = offsets
        self._tasks = tasks
        self._clock = clock
        self._closed = closed
        self._wake = wake
        self._pull_loop: PullLoop | None = None
        self._pop: PopConsumption | None = None
        self.queues: dict[MessageQueue, PullRequest] = {}
        self.locker = QueueLocker(runtime, consumer.group)

    @property
    def _orderly_clustering(self) -> bool:
        return self._c.orderly and self._c.message_model is MessageModel.CLUSTERING

    def bind(self, pull_loop: PullLoop, pop: PopConsumption | None) -> None:
        """At start: the loop that pulls new queues, and the POP side (broker assignment only)."""
        self._pull_loop = pull_loop
        self._pop = pop

    # ------------------------------------------------------------------ client allocation

    async def apply(self, topic: str, allocated: list[MessageQueue]) -> None:
        """``messageQueueChanged`` for a client-side allocation of ``topic``."""
        changed, new = await self._update_pull_queues(topic, allocated)
        await self._finish(topic, changed, new)

    async def _update_pull_queues(self, topic: str, allocated: list[MessageQueue]) -> tuple[bool, list[PullRequest]]:
        """Drop / create the pull queues of ``topic`` (``updateProcessQueueTableInRebalance``).

        Returns:
            (changed, new pull requests — not started yet).
        """
        loop = asyncio.get_running_loop()
        plan = plan_rebalance(topic, {mq: r.pq for mq, r in self.queues.items()}, allocated, loop.time())
        for mq in plan.to_drop:
            await self.drop_queue(mq)
        to_add = plan.to_add
        locked = self._orderly_clustering
        if locked and to_add:
            granted = await self.locker.lock(to_add)
            refused = [mq for mq in to_add if mq not in granted]
            if refused:
                log.info("rebalance: lock refused, retry soon group=%s mqs=%s", self._c.group, refused)
                self._rebalance_later(LOCK_REFUSED_RETRY)
            to_add = [mq for mq in to_add if mq in granted]
        new: list[PullRequest] = []
        for mq in to_add:
            self._store.remove(mq)
            offset = await self.compute_start_offset(mq)
            if offset < 0:
                log.warning("rebalance: no start offset, skipped group=%s mq=%s", self._c.group, mq)
                continue
            log.info("rebalance: add queue group=%s mq=%s offset=%d", self._c.group, mq, offset)
            pq: ProcessQueue
            if self._c.orderly:
                pq = OrderlyProcessQueue(loop.time())
                if locked:
                    pq.mark_locked(loop.time())  # granted just above
            else:
                pq = ProcessQueue(loop.time())
            new.append(PullRequest(mq=mq, pq=pq, next_offset=offset))
        return bool(plan.to_drop or new), new

    async def _finish(self, topic: str, changed: bool, new: list[PullRequest]) -> None:
        """``messageQueueChanged``: new subscription version + heartbeat; then start the pulls."""
        if changed:
            sub = self._subscriptions.get(topic)
            if sub is not None:
                sub.sub_version = self._clock.now_ms()
            await self._rt.send_heartbeat_to_all_brokers()
        if self._closed():
            return
        assert self._pull_loop is not None
        for req in new:
            self.queues[req.mq] = req
            req.task = self._tasks.spawn(
                self._pull_loop.run(req), f"pull-{req.mq.topic}-{req.mq.broker_name}-{req.mq.queue_id}"
            )

    async def compute_start_offset(self, mq: MessageQueue) -> int:
        """``computePullFromWhere`` of one queue (offset read from the store); −1: not now."""
        return await self._offsets.start_offset(
            self._c.consume_from_where, mq, self._store, ReadOffsetType.READ_FROM_STORE, self._c.consume_timestamp
        )

    def _rebalance_later(self, delay: float) -> None:
        async def later() -> None:
            await asyncio.sleep(delay)
            self._wake()

        if not self._closed():
            self._tasks.spawn(later(), "rebalance-later")

    # ------------------------------------------------------------------ broker assignment

    async def assign_by_broker(self, topic: str) -> bool:
        """Let the broker assign ``topic``'s queues when it can (``tryQueryAssignment``).

        Returns:
            True when the topic was rebalanced from the broker's assignment; False when the
            client allocates it (no POP side, or the probe chose the client).

        Raises:
            TopicNotExistError: no route yet (decided again next round).
        """
        if self._pop is None:
            return False
        if not await self._pop.probe.use_broker(topic, lambda timeout: self._query_assignment(topic, timeout)):
            return False
        await self._rebalance_topic_by_broker(topic)
        return True

    async def _query_assignment(self, topic: str, timeout: float) -> Any:
        c = self._c
        return await query_assignment(
            self._rt, topic, c.group, strategy_name(c.allocate_strategy), c.message_model.value, timeout
        )

    async def _rebalance_topic_by_broker(self, topic: str) -> None:
        """``getRebalanceResultFromBroker`` + ``updateMessageQueueAssignment`` for one topic.

        A failed QUERY_ASSIGNMENT raises (logged by the round); a ``null`` answer (no valid
        assignment) keeps the held queues.
        """
        assert self._pop is not None
        assignments = await self._query_assignment(topic, QUERY_ASSIGNMENT_TIMEOUT)
        if assignments is None:
            log.info("rebalance: broker has no assignment group=%s topic=%s", self._c.group, topic)
            return
        pull_set, pop_set = split_assignments(assignments)
        sub_changed = update_pop_retry_subscription(
            topic, self._c.group, bool(pull_set), bool(pop_set), self._subscriptions, self._clock.now_ms()
        )
        changed, new = await self._update_pull_queues(topic, sorted(pull_set))
        init_mode = (
            ConsumeInitMode.MIN
            if self._c.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            else ConsumeInitMode.MAX
        )
        pop_changed, new_pop = self._pop.update_queues(topic, pop_set, asyncio.get_running_loop().time(), init_mode)
        await self._finish(topic, changed or pop_changed or sub_changed, new)
        if not self._closed():
            self._pop.start(new_pop)

    # ------------------------------------------------------------------ locks

    async def lock_one(self, mq: MessageQueue) -> bool:
        """``lockOneMQ`` for a queue the consume service found unlocked."""
        ok = mq in await self.locker.lock([mq])
        req = self.queues.get(mq)
        if ok and req is not None and isinstance(req.pq, OrderlyProcessQueue):
            req.pq.mark_locked(asyncio.get_running_loop().time())
        return ok

    async def lock_all(self) -> None:
        """Renew every held lock (``lockAll``, every ``lock_renew_interval``)."""
        held = {mq: r.pq for mq, r in self.queues.items() if isinstance(r.pq, OrderlyProcessQueue)}
        if held:
            await self.locker.lock_all(held, asyncio.get_running_loop().time)

    # ------------------------------------------------------------------ drops

    async def drop_queue(self, mq: MessageQueue) -> None:
        """Stop consuming a held queue (``removeUnnecessaryMessageQueue``)."""
        req = self.queues.pop(mq, None)
        if req is None:
            return
        req.pq.dropped = True
        if req.task is not None and req.task is not asyncio.current_task():
            req.task.cancel()
        if self._orderly_clustering and isinstance(req.pq, OrderlyProcessQueue) and not self._closed():
            # removeUnnecessaryMessageQueue: wait (up to 1 s) for the batch in flight; if it is
            # still running, finish in the background once it completes.
            fin = self._tasks.spawn(self._finish_orderly_drop(mq, req.pq), "orderly-drop")
            done, _ = await asyncio.wait({fin}, timeout=UNLOCK_WAIT_CONSUME)
            if not done:
                req.pq.try_unlock_times += 1
                log.warning("rebalance: batch still consuming, unlock postponed group=%s mq=%s", self._c.group, mq)
            return
        await persist_quietly(self._store, mq, self._c.group, "offset of dropped queue")
        self._store.remove(mq)
        log.info("rebalance: drop queue group=%s mq=%s", self._c.group, mq)

    async def _finish_orderly_drop(self, mq: MessageQueue, pq: OrderlyProcessQueue) -> None:
        """After the batch in flight: persist the offset, forget it, then UNLOCK_BATCH_MQ."""
        async with pq.consume_lock:
            await persist_quietly(self._store, mq, self._c.group, "offset of dropped queue")
            if mq not in self.queues:
                self._store.remove(mq)
            await self.locker.unlock([mq])
        log.info("rebalance: drop orderly queue (unlocked) group=%s mq=%s", self._c.group, mq)

    async def after_offset_illegal(self, req: PullRequest) -> None:
        """After a pull loop repaired OFFSET_ILLEGAL: persist, forget the queue, rebalance now."""
        await persist_quietly(self._store, req.mq, self._c.group, "corrected offset")
        if self.queues.get(req.mq) is req:
            del self.queues[req.mq]
        self._store.remove(req.mq)
        self._wake()

    async def drop_unsubscribed(self, topics: list[str]) -> None:
        """Drop the queues of topics not in ``topics`` (``truncateMessageQueueNotMyTopic``)."""
        keep = set(topics)
        for mq in [mq for mq in self.queues if mq.topic not in keep]:
            await self.drop_queue(mq)
        if self._pop is not None:
            self._pop.drop_not_subscribed(keep)

    # ------------------------------------------------------------------ shutdown

    def stop_pulling(self) -> None:
        """Cancel every pull loop (the queues stay held)."""
        for req in list(self.queues.values()):
            if req.task is not None:
                req.task.cancel()

    async def shutdown(self) -> None:
        """Persist every held offset (acknowledged), drop every queue, release the locks."""
        held = list(self.queues)
        for mq in held:
            await persist_quietly(self._store, mq, self._c.group, "offset at shutdown")
        for req in self.queues.values():
            req.pq.dropped = True
        if self._orderly_clustering and (held or self.locker.maybe_held):
            await self.locker.unlock(set(held) | self.locker.maybe_held)
        self.queues.clear()


__all__ = ["LOCK_REFUSED_RETRY", "PushRebalance"]
