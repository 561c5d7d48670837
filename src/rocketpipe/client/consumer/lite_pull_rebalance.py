"""Rebalance driver of the lite pull consumer's subscribe mode (L3).

Mirrors ``RebalanceService`` + ``RebalanceImpl.rebalanceByTopic`` for CLUSTERING: every
``interval`` (20 s) and at once when woken (start, subscription change,
NOTIFY_CONSUMER_IDS_CHANGED), for each subscribed topic take the readable queues of its route
and the group's client ids from one master of the topic, sort both, run the allocation
strategy and hand the result to the consumer (``messageQueueChanged``). A topic without a
route is handed an empty allocation, so its queues stop (lite pull behaviour). Errors abort
only that topic's round. The diff itself (what to stop, what to start) is the consumer's.

Imports sibling client modules, protocol and errors.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...errors import RocketMQError, TopicNotExistError
from ...protocol.message import MessageQueue
from ...transport.periodic import periodic
from .. import rpc
from ..routing import MASTER_ID, subscribe_queues
from .allocate import AllocateStrategy
from .common import refresh_routes

if TYPE_CHECKING:
    from ..runtime import ClientRuntime

log = logging.getLogger(__name__)

ApplyAllocation = Callable[[str, list[MessageQueue]], Awaitable[None]]
"""``(topic, allocated queues) -> None``: the consumer's ``messageQueueChanged``."""


class TopicRebalancer:
    """Allocates the queues of subscribed topics among the group's clients.

    Args:
        runtime: client runtime (routes, pool, client id, heartbeats).
        group: consumer group.
        strategy: allocation strategy.
        topics: the subscribed topics (read at each round).
        apply: called with each topic's allocation.
        interval: seconds between rounds when not woken.
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        strategy: AllocateStrategy,
        topics: Callable[[], list[str]],
        apply: ApplyAllocation,
        interval: float,
    ) -> None:
        self._rt = runtime
        self._group = group
        self._strategy = strategy
        self._topics = topics
        self._apply = apply
        self._interval = interval
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._sub_changed = False
        self.rounds = 0

    def wake(self) -> None:
        """Run a round now."""
        self._wake.set()

    def subscription_changed(self) -> None:
        """Refresh routes and heartbeat before the next round, and run it now."""
        self._sub_changed = True
        self._wake.set()

    async def run(self) -> None:
        """Rebalance every ``interval`` or when woken, until cancelled."""
        await periodic(
            f"rebalance group={self._group}",
            self._interval,
            self.rebalance,
            initial_delay=self._interval,
            wake=self._wake,
            logger=log,
        )

    async def refresh_routes(self) -> None:
        """Fetch the route of every subscribed topic (errors are logged)."""
        await refresh_routes(self._rt, self._topics(), log)

    async def rebalance(self) -> None:
        """Run one round over every subscribed topic (serialised with other rounds)."""
        async with self._lock:
            self.rounds += 1
            if self._sub_changed:
                self._sub_changed = False
                await self.refresh_routes()
                await self._rt.send_heartbeat_to_all_brokers()
            for topic in self._topics():
                try:
                    await self._rebalance_topic(topic)
                except RocketMQError as exc:
                    log.warning("rebalance failed group=%s topic=%s err=%s", self._group, topic, exc)

    async def _rebalance_topic(self, topic: str) -> None:
        rt = self._rt
        route = rt.cached_route(topic)
        if route is None:
            try:
                route = await rt.fetch_route(topic)
            except TopicNotExistError:
                log.debug("rebalance: no route topic=%s", topic)
                await self._apply(topic, [])
                return
        mq_all = subscribe_queues(topic, route)
        addrs = sorted({a for bd in route.broker_datas for bid, a in bd.broker_addrs.items() if int(bid) == MASTER_ID})
        if not mq_all or not addrs:
            return
        cids = await rpc.get_consumer_id_list(rt.pool, random.choice(addrs), self._group, rt.config.request_timeout)
        if not cids:
            return
        await self._apply(topic, self._strategy(self._group, rt.client_id, sorted(mq_all), sorted(cids)))


__all__ = ["ApplyAllocation", "TopicRebalancer"]
