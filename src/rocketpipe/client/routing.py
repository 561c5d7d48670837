"""Route data → queues and broker addresses (pure; L3).

Mirrors ``MQClientInstance.topicRouteData2TopicPublishInfo`` / ``topicRouteData2TopicSubscribeInfo``,
``findBrokerAddressInPublish`` and ``TopicPublishInfo.selectOneMessageQueue``. Works on
:class:`rocketpipe.protocol.bodies.route.TopicRouteData` (any object with ``queue_datas``,
``broker_datas`` and ``order_topic_conf`` of that shape). Imports protocol only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ..protocol.message import MessageQueue
from ..protocol.names import AUTO_CREATE_TOPIC_KEY_TOPIC as AUTO_CREATE_TOPIC_KEY_TOPIC
from ..protocol.names import MASTER_ID as MASTER_ID
from ..protocol.sysflag import is_readable, is_writeable


def broker_addr_table(route: Any) -> dict[str, dict[int, str]]:
    """Return ``broker_name -> {broker_id -> "host:port"}`` of a route."""
    table: dict[str, dict[int, str]] = {}
    for bd in route.broker_datas or ():
        table.setdefault(bd.broker_name, {}).update({int(k): v for k, v in (bd.broker_addrs or {}).items()})
    return table


def publish_queues(topic: str, route: Any) -> list[MessageQueue]:
    """Return the queues a producer may send ``topic`` to, in selection order.

    ``order_topic_conf`` (``broker:count;...``) wins when present; otherwise every writable
    QueueData whose broker has a master contributes queues ``0..write_queue_nums-1``, brokers
    sorted by name.
    """
    conf = getattr(route, "order_topic_conf", None)
    if conf:
        out: list[MessageQueue] = []
        for item in conf.split(";"):
            name, _, count = item.partition(":")
            if name and count.strip().isdigit():
                out.extend(MessageQueue(topic, name, i) for i in range(int(count)))
        return out
    masters = {name for name, addrs in broker_addr_table(route).items() if MASTER_ID in addrs}
    out = []
    for qd in sorted(route.queue_datas or (), key=lambda q: q.broker_name):
        if is_writeable(qd.perm) and qd.broker_name in masters:
            out.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return out


def subscribe_queues(topic: str, route: Any) -> list[MessageQueue]:
    """Return every readable queue of ``topic`` (sorted), as rebalancing and admins see them."""
    out = [
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas or ()
        if is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    ]
    return sorted(set(out))


def default_topic_publish_queues(topic: str, default_route: Any, default_topic_queue_nums: int) -> list[MessageQueue]:
    """Return publish queues for a topic the name server does not know yet (auto-create).

    Java producers take the ``TBW102`` route, cap each broker's queue counts at
    ``defaultTopicQueueNums`` and send to those queue ids of the new topic with
    ``defaultTopic=TBW102`` (``updateTopicRouteInfoFromNameServer(topic, true, producer)``).
    """
    masters = {name for name, addrs in broker_addr_table(default_route).items() if MASTER_ID in addrs}
    out: list[MessageQueue] = []
    for qd in sorted(default_route.queue_datas or (), key=lambda q: q.broker_name):
        if is_writeable(qd.perm) and qd.broker_name in masters:
            n = min(default_topic_queue_nums, qd.write_queue_nums)
            out.extend(MessageQueue(topic, qd.broker_name, i) for i in range(n))
    return out


class RoundRobinSelector:
    """Pick send queues round-robin, avoiding the broker of the previous failed attempt.

    Mirrors ``TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`` with a counter that
    starts at a random value (``ThreadLocalIndex``).

    >>> s = RoundRobinSelector(start=0)
    >>> qs = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(2)]
    >>> [s.select(qs).queue_id for _ in range(3)]
    [1, 0, 1]
    >>> s.select(qs, last_broker_name="b").broker_name
    'a'
    """

    def __init__(self, start: int | None = None) -> None:
        self._index = random.randrange(1 << 16) if start is None else start

    def select(self, queues: Sequence[MessageQueue], last_broker_name: str | None = None) -> MessageQueue:
        """Return the next queue; skip ``last_broker_name``'s queues if another broker exists.

        Raises:
            IndexError: ``queues`` is empty.
        """
        if not queues:
            raise IndexError("no queue to select")
        if last_broker_name is not None:
            for _ in range(len(queues)):
                self._index += 1
                mq = queues[self._index % len(queues)]
                if mq.broker_name != last_broker_name:
                    return mq
        self._index += 1
        return queues[self._index % len(queues)]

    def select_where(
        self, queues: Sequence[MessageQueue], accept: Callable[[MessageQueue], bool]
    ) -> MessageQueue | None:
        """The next queue, in round-robin order, that ``accept`` takes; None after one full turn.

        Mirrors ``TopicPublishInfo.selectOneMessageQueue(QueueFilter...)``: each candidate
        advances the counter.
        """
        for _ in range(len(queues)):
            self._index += 1
            mq = queues[self._index % len(queues)]
            if accept(mq):
                return mq
        return None

    def reset(self) -> None:
        """Restart the counter at a random value (``ThreadLocalIndex.reset``)."""
        self._index = random.randrange(1 << 31)
