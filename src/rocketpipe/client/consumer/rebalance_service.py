"""The rebalance driver shared by the push and lite pull consumers (L3).

Mirrors ``RebalanceService`` (the periodic / woken round) + ``RebalanceImpl.doRebalance`` /
``rebalanceByTopic`` (the per-topic allocation): every ``interval`` (20 s) and at once when
woken (start, subscription change, NOTIFY_CONSUMER_IDS_CHANGED, OFFSET_ILLEGAL, reset), for
each subscribed topic:

1. a consumer with broker-side assignment (push, ``client_rebalance=False``) first offers the
   topic to its ``assign_by_broker`` hook (QUERY_ASSIGNMENT); True means "handled";
2. otherwise take the readable queues of the topic's route (cached, else fetched);
   BROADCASTING: every queue; CLUSTERING: the group's client ids from one master of the topic
   (chosen at random), both sorted, through the allocation strategy;
3. hand ``(topic, allocated)`` to the consumer (``messageQueueChanged``) — the diff and its
   application (process queues, locks, offsets) are the consumer's
   (:mod:`.rebalance_push`, :class:`~.lite_pull.LitePullConsumer`).

A topic without a route is skipped, or — ``release_without_route`` (lite pull) — handed an
empty allocation so that its queues stop. Errors abort only that topic's round. After the
round, ``drop_unsubscribed`` (``truncateMessageQueueNotMyTopic``) gets the subscribed topics.
A subscription change refreshes the routes and sends a heartbeat before the next round.

Imports sibling client modules, protocol, transport and errors.
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
    from ...protocol.bodies.route import TopicRouteData
    from ..runtime import ClientRuntime

log = logging.getLogger(__name__)

ApplyAllocation = Callable[[str, list[MessageQueue]], Awaitable[None]]
"""``(topic, allocated queues, sorted) -> None``: the consumer's ``messageQueueChanged``."""
AssignByBroker = Callable[[str], Awaitable[bool]]
"""``topic -> handled``: broker-side assignment of the topic (True: skip the client path)."""
DropUnsubscribed = Callable[[list[str]], Awaitable[None]]
"""``subscribed topics -> None``: drop what is held for any other topic."""


class RebalanceService:
    """Allocates the queues of subscribed topics among the group's clients.

    Args:
        runtime: client runtime (routes, pool, client id, heartbeats).
        group: consumer group.
        strategy: returns the allocation strategy to use (read at each topic's allocation).
        topics: the subscribed topics (read at each round).
        apply: called with each topic's allocation.
        interval: seconds between rounds when not woken (see :attr:`interval`).
        clustering: False (BROADCASTING): every queue of the route is allocated.
        release_without_route: a topic without a route gets an empty allocation.
        assign_by_broker: broker-side assignment, tried first for every topic.
        drop_unsubscribed: called at the end of every round.

    Attributes:
        interval: seconds between rounds when not woken; read when :meth:`run` starts.
        rounds: rounds run so far.
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        group: str,
        strategy: Callable[[], AllocateStrategy],
        topics: Callable[[], list[str]],
        apply: ApplyAllocation,
        interval: float,
        *,
        clustering: bool = True,
        release_without_route: bool = False,
        assign_by_broker: AssignByBroker | None = None,
        drop_unsubscribed: DropUnsubscribed | None = None,
    ) -> None:
        self._rt = runtime
        self._group = group
        self._strategy = strategy
        self._topics = topics
        self._apply = apply
        self.interval = interval
        self._clustering = clustering
        self._release_without_route = release_without_route
        self._assign_by_broker = assign_by_broker
        self._drop_unsubscribed = drop_unsubscribed
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._sub_changed = False
        self.rounds = 0

    @property
    def lock(self) -> asyncio.Lock:
        """Held for a whole round; hold it to keep rounds out (e.g. while resetting offsets)."""
        return self._lock

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
            self.interval,
            self.rebalance,
            initial_delay=self.interval,
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
            if self._drop_unsubscribed is not None:
                await self._drop_unsubscribed(self._topics())

    async def _rebalance_topic(self, topic: str) -> None:
        if self._assign_by_broker is not None:
            try:
                if await self._assign_by_broker(topic):
                    return
            except TopicNotExistError:
                log.debug("rebalance: no route topic=%s", topic)
                return
        route = await self._route(topic)
        if route is None:
            if self._release_without_route:
                await self._apply(topic, [])
            return
        mq_all = subscribe_queues(topic, route)
        if not mq_all:
            return
        if not self._clustering:
            await self._apply(topic, sorted(mq_all))  # BROADCASTING: every queue
            return
        cids = await self._client_ids(route)
        if not cids:
            return
        rt = self._rt
        await self._apply(topic, self._strategy()(self._group, rt.client_id, sorted(mq_all), sorted(cids)))

    async def _route(self, topic: str) -> TopicRouteData | None:
        """The cached route, else a fetched one; None when the topic has none."""
        route = self._rt.cached_route(topic)
        if route is not None:
            return route
        try:
            return await self._rt.fetch_route(topic)
        except TopicNotExistError:
            log.debug("rebalance: no route topic=%s", topic)
            return None

    async def _client_ids(self, route: TopicRouteData) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP from one master of the route ([] without a master)."""
        rt = self._rt
        addrs = sorted({a for bd in route.broker_datas for bid, a in bd.broker_addrs.items() if int(bid) == MASTER_ID})
        if not addrs:
            return []
        return await rpc.get_consumer_id_list(rt.pool, random.choice(addrs), self._group, rt.config.request_timeout)


__all__ = ["ApplyAllocation", "AssignByBroker", "DropUnsubscribed", "RebalanceService"]
