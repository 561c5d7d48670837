"""Rebalance decisions (pure; L3).

Mirrors ``RebalanceImpl.rebalanceByTopic`` + ``updateProcessQueueTableInRebalance``: which held
queues of a topic to drop (no longer allocated, or — push consumers — idle for more than
120 s) and which newly allocated queues to add. The round that computes the allocation is
:mod:`rocketpipe.client.consumer.rebalance_service`; the push consumer applies this diff in
:mod:`rocketpipe.client.consumer.rebalance_push`.

>>> from rocketpipe.protocol.message import MessageQueue
>>> q = [MessageQueue("T", "b", i) for i in range(3)]
>>> plan = plan_rebalance("T", {q[0]: ProcessQueue(0.0), q[1]: ProcessQueue(0.0)}, {q[1], q[2]}, now=1.0)
>>> [m.queue_id for m in plan.to_drop], [m.queue_id for m in plan.to_add]
([0], [2])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...protocol.message import MessageQueue
from .process_queue import ProcessQueue


@dataclass(frozen=True, slots=True)
class RebalancePlan:
    """Queues to drop and to add for one topic (both sorted)."""

    to_drop: list[MessageQueue]
    to_add: list[MessageQueue]

    @property
    def changed(self) -> bool:
        """True when anything is dropped or added."""
        return bool(self.to_drop or self.to_add)


def plan_rebalance(
    topic: str, held: Mapping[MessageQueue, ProcessQueue], allocated: Iterable[MessageQueue], now: float
) -> RebalancePlan:
    """Diff the held queues of ``topic`` against the allocation.

    Args:
        topic: the topic being rebalanced (held queues of other topics are ignored).
        held: queue → ProcessQueue currently consumed.
        allocated: the strategy's result for this client.
        now: loop time, seconds (for the pull-idle expiry).

    Returns:
        The plan; a held queue whose ProcessQueue is pull-expired is dropped (and, if still
        allocated, re-added by the next round).
    """
    alloc = set(allocated)
    to_drop = sorted(
        mq for mq, pq in held.items() if mq.topic == topic and (mq not in alloc or pq.is_pull_expired(now))
    )
    to_add = sorted(mq for mq in alloc if mq.topic == topic and mq not in held)
    return RebalancePlan(to_drop, to_add)
