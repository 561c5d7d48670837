"""Queue allocation strategies (pure; L3, imports only protocol.message).

Each strategy takes the consumer group, this client's id, every queue of a topic and every
client id of the group, and returns the queues this client should consume. Inputs are sorted
here (queues by topic/broker/queue id, client ids as strings), as ``RebalanceImpl`` does
before it calls a strategy.

Mirrors ``AllocateMessageQueueAveragely``, ``AllocateMessageQueueAveragelyByCircle``,
``AllocateMessageQueueConsistentHash`` (:func:`consistent_hash_strategy`),
``AllocateMessageQueueByConfig`` (:func:`by_config_strategy`) and
``AllocateMessageQueueByMachineRoom`` (:func:`by_machine_room_strategy`); the last three are
factories because the Java classes carry configuration.

>>> from rocketpipe.protocol.message import MessageQueue
>>> qs = [MessageQueue("T", "b", i) for i in range(8)]
>>> [[q.queue_id for q in allocate_averagely("g", c, qs, ["c0", "c1", "c2"])] for c in ("c0", "c1", "c2")]
[[0, 1, 2], [3, 4, 5], [6, 7]]
>>> [[q.queue_id for q in allocate_averagely("g", c, qs[:2], ["c0", "c1", "c2"])] for c in ("c0", "c1", "c2")]
[[0], [1], []]
>>> [[q.queue_id for q in allocate_averagely_by_circle("g", c, qs, ["c0", "c1", "c2"])] for c in ("c0", "c1", "c2")]
[[0, 3, 6], [1, 4, 7], [2, 5]]
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from ...protocol.message import MessageQueue

AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
"""``(consumer_group, current_cid, mq_all, cid_all) -> allocated queues``."""


def _prepare(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> tuple[list[MessageQueue], list[str]] | None:
    if not current_cid or not mq_all or not cid_all:
        return None
    cids = sorted(set(cid_all))
    if current_cid not in cids:
        return None
    return sorted(set(mq_all)), cids


def allocate_averagely(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Give each client one contiguous block of queues (the default strategy).

    Mirrors ``AllocateMessageQueueAveragely.allocate``: with ``n`` queues, ``m`` clients and
    this client at index ``i``, the first ``n % m`` clients get one queue more.

    Args:
        consumer_group: the group (unused; kept for the strategy signature).
        current_cid: this client's id.
        mq_all: all queues of the topic.
        cid_all: all client ids of the group.

    Returns:
        The allocated queues, sorted; empty when this client is not in ``cid_all`` or either
        list is empty.
    """
    prepared = _prepare(current_cid, mq_all, cid_all)
    if prepared is None:
        return []
    mqs, cids = prepared
    n, m = len(mqs), len(cids)
    i = cids.index(current_cid)
    mod = n % m
    if n <= m:
        size = 1
    elif mod > 0 and i < mod:
        size = n // m + 1
    else:
        size = n // m
    start = i * size if (mod > 0 and i < mod) else i * size + mod
    take = min(size, n - start)
    return mqs[start : start + take] if take > 0 else []


def allocate_averagely_by_circle(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Deal queues round-robin: queue ``j`` goes to client ``j % m``.

    Mirrors ``AllocateMessageQueueAveragelyByCircle.allocate``.

    Returns:
        The allocated queues, sorted; empty when this client is not in ``cid_all``.
    """
    prepared = _prepare(current_cid, mq_all, cid_all)
    if prepared is None:
        return []
    mqs, cids = prepared
    i, m = cids.index(current_cid), len(cids)
    return [q for j, q in enumerate(mqs) if j % m == i]


# ---------------------------------------------------------------------------------------------
# Consistent hash, by config, by machine room

#: AllocateMessageQueueConsistentHash default virtual node count per client.
DEFAULT_VIRTUAL_NODE_COUNT: Final = 10


def md5_hash(key: str) -> int:
    """Return Java ``ConsistentHashRouter.MD5Hash.hash``: the first 4 MD5 bytes, big-endian.

    >>> md5_hash("")  # d41d8cd9...
    3558706393
    """
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class ConsistentHashRing:
    """Java ``ConsistentHashRouter`` over client ids: ``vnodes`` virtual nodes per client, keyed
    ``"<cid>-<i>"``; an object key goes to the first virtual node at or after its hash, wrapping
    round to the first one.

    Args:
        cids: physical nodes (client ids).
        vnodes: virtual nodes per client (≥ 0).
        hash_fn: ``str -> int`` (default :func:`md5_hash`).
    """

    def __init__(
        self, cids: Iterable[str], vnodes: int = DEFAULT_VIRTUAL_NODE_COUNT, hash_fn: Callable[[str], int] = md5_hash
    ) -> None:
        if vnodes < 0:
            raise ValueError(f"illegal virtual node count: {vnodes}")
        self._hash = hash_fn
        ring: dict[int, str] = {}
        replicas: dict[str, int] = {}
        for cid in cids:
            base = replicas.get(cid, 0)  # Java: a repeated node gets further replica indexes
            for i in range(vnodes):
                ring[hash_fn(f"{cid}-{base + i}")] = cid  # TreeMap.put: a later equal hash wins
            replicas[cid] = base + vnodes
        self._keys = sorted(ring)
        self._nodes = [ring[k] for k in self._keys]

    def route(self, key: str) -> str | None:
        """Return the client id owning ``key`` (None on an empty ring)."""
        if not self._keys:
            return None
        i = bisect.bisect_left(self._keys, self._hash(key))
        return self._nodes[i if i < len(self._keys) else 0]


def consistent_hash_strategy(
    virtual_node_count: int = DEFAULT_VIRTUAL_NODE_COUNT, hash_fn: Callable[[str], int] = md5_hash
) -> AllocateStrategy:
    """Return ``AllocateMessageQueueConsistentHash(virtual_node_count, hash_fn)``.

    Each queue goes to the ring node of ``str(mq)`` (``MessageQueue [topic=.., brokerName=..,
    queueId=..]``, Java's ``toString``). Adding or removing a client moves only the queues that
    client gains or loses.

    Raises:
        ValueError: negative ``virtual_node_count``.
    """
    if virtual_node_count < 0:
        raise ValueError(f"illegal virtual node count: {virtual_node_count}")

    def allocate(
        consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not current_cid or not mq_all or not cid_all or current_cid not in cid_all:
            return []
        ring = ConsistentHashRing(cid_all, virtual_node_count, hash_fn)
        return [mq for mq in mq_all if ring.route(str(mq)) == current_cid]

    allocate.__name__ = "allocate_consistent_hash"
    return allocate


allocate_consistent_hash: Final = consistent_hash_strategy()
"""``AllocateMessageQueueConsistentHash()``: 10 virtual nodes, MD5 ring."""


def by_config_strategy(message_queues: Iterable[MessageQueue]) -> AllocateStrategy:
    """Return ``AllocateMessageQueueByConfig``: always the configured queues, whatever the
    group's clients (queues of other topics are ignored by the rebalance)."""
    fixed = list(message_queues)

    def allocate(
        consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(fixed)

    allocate.__name__ = "allocate_by_config"
    return allocate


def by_machine_room_strategy(consumer_idcs: Iterable[str]) -> AllocateStrategy:
    """Return ``AllocateMessageQueueByMachineRoom``: keep queues whose broker is named
    ``<room>@<name>`` with ``room`` in ``consumer_idcs``, then split them averagely: each client
    gets ``n // m`` consecutive queues and the first ``n % m`` clients one more from the tail.

    >>> from rocketpipe.protocol.message import MessageQueue
    >>> qs = [MessageQueue("T", f"{r}@b{r}", i) for r in ("r1", "r2") for i in range(3)]
    >>> s = by_machine_room_strategy({"r1"})
    >>> [[q.queue_id for q in s("g", c, qs, ["c0", "c1"])] for c in ("c0", "c1")]
    [[0, 2], [1]]
    """
    idcs = frozenset(consumer_idcs)

    def allocate(
        consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        prepared = _prepare(current_cid, mq_all, cid_all)
        if prepared is None:
            return []
        mqs, cids = prepared
        i, m = cids.index(current_cid), len(cids)
        pre: list[MessageQueue] = []
        for mq in mqs:
            parts = mq.broker_name.split("@")
            if len(parts) == 2 and parts[0] in idcs:
                pre.append(mq)
        mod, rem = divmod(len(pre), m)
        out = pre[i * mod : i * mod + mod]
        if rem > i:
            out.append(pre[i + mod * m])
        return out

    allocate.__name__ = "allocate_by_machine_room"
    return allocate


def machine_room_nearby_strategy(
    strategy: AllocateStrategy,
    broker_room: Callable[[MessageQueue], str],
    consumer_room: Callable[[str], str],
) -> AllocateStrategy:
    """Return ``AllocateMachineRoomNearby(strategy, resolver)``.

    Queues of this client's room are split by ``strategy`` among that room's clients; queues
    of a room with no live client are split by ``strategy`` among every client.

    Args:
        strategy: the inner strategy.
        broker_room: ``MachineRoomResolver.brokerDeployIn`` (room of a queue).
        consumer_room: ``MachineRoomResolver.consumerDeployIn`` (room of a client id).

    The returned strategy raises ValueError when a resolver returns an empty room (Java:
    IllegalArgumentException).

    >>> from rocketpipe.protocol.message import MessageQueue
    >>> qs = [MessageQueue("T", f"{r}-b", i) for r in ("hz", "sh") for i in range(2)]
    >>> s = machine_room_nearby_strategy(allocate_averagely, lambda q: q.broker_name[:2], lambda c: c[:2])
    >>> [(q.broker_name, q.queue_id) for q in s("g", "hz-1", qs, ["hz-1", "hz-2"])]
    [('hz-b', 0), ('sh-b', 0)]
    """

    def allocate(
        consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        prepared = _prepare(current_cid, mq_all, cid_all)
        if prepared is None:
            return []
        mqs, cids = prepared
        room_mqs: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            room = broker_room(mq)
            if not room:
                raise ValueError(f"machine room of {mq} is empty")
            room_mqs.setdefault(room, []).append(mq)
        room_cids: dict[str, list[str]] = {}
        for cid in cids:
            room = consumer_room(cid)
            if not room:
                raise ValueError(f"machine room of client {cid} is empty")
            room_cids.setdefault(room, []).append(cid)
        mine = consumer_room(current_cid)
        out: list[MessageQueue] = []
        local = room_mqs.pop(mine, [])
        if local:
            out.extend(strategy(consumer_group, current_cid, local, room_cids.get(mine, [])))
        for room in sorted(room_mqs):
            if room not in room_cids:
                out.extend(strategy(consumer_group, current_cid, room_mqs[room], cids))
        return out

    allocate.__name__ = "allocate_machine_room_nearby"
    return allocate
