"""Queue allocation strategies (pure; L3, imports only protocol.message).

Each strategy takes the consumer group, this client's id, every queue of a topic and every
client id of the group, and returns the queues this client should consume. Inputs are sorted
here (queues by topic/broker/queue id, client ids as strings), as ``RebalanceImpl`` does
before it calls a strategy.

Mirrors ``AllocateMessageQueueAveragely`` and ``AllocateMessageQueueAveragelyByCircle``.

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

from collections.abc import Callable, Sequence

from ...protocol.message import MessageQueue

AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
"""``(consumer_group, current_cid, mq_all, cid_all) -> allocated queues``."""


def _prepare(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> tuple[list[MessageQueue], list[str]] | None:
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
