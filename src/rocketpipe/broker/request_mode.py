"""Message request modes and server-side queue assignment (L3, pure).

* :class:`RequestModeTable` — topic → consumer group → :class:`SetMessageRequestModeRequestBody`,
  persisted as ``<store_dir>/config/messageRequestMode.json`` in Java's form
  ``{"messageRequestModeMap": {topic: {group: {"consumerGroup", "mode", "popShareQueueNum",
  "topic"}}}}``. Mirrors ``MessageRequestModeManager``.
* :func:`do_load_balance` — the queues one client gets, given every queue of the topic and every
  client id of the group. Mirrors ``QueryAssignmentProcessor.doLoadBalance`` /
  ``allocate4Pop`` with the two strategies the Java broker registers, ``AVG``
  (``AllocateMessageQueueAveragely``) and ``AVG_BY_CIRCLE``
  (``AllocateMessageQueueAveragelyByCircle``).
* :class:`AssignmentConfig` — the ``BrokerConfig`` keys involved, with Java's defaults.

POP sharing (``allocate4Pop``), with ``n`` = popShareQueueNum and ``m`` client ids:

=================================  ===========================================================
condition                          queues of client ``c``
=================================  ===========================================================
``n <= 0`` or ``n >= m - 1``       one queue id **-1** per broker ("pop any queue there"),
                                   whether or not ``c`` is in the group
``m <= queues``                    ``c``'s own strategy share + the shares of the ``n`` clients
                                   following it in the sorted id list (wrapping round)
``m > queues``                     the single queue ``queues[index(c) % len(queues)]``
=================================  ===========================================================

Everything here is synchronous and does no I/O; the processor
(:mod:`rocketpipe.broker.processors.assignment`) gathers the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from ..errors import InvalidArgumentError, ProtocolError
from ..protocol.bodies.assignment import MessageModel, MessageRequestMode, SetMessageRequestModeRequestBody
from ..protocol.message import MessageQueue

__all__ = [
    "LMQ_PREFIX",
    "LMQ_QUEUE_ID",
    "REQUEST_MODE_FILE",
    "RETRY_PREFIX",
    "STRATEGIES",
    "AssignmentConfig",
    "RequestModeTable",
    "allocate4pop",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "do_load_balance",
    "effective_mode",
]

#: File under ``<store_dir>/config`` (``BrokerPathConfigHelper.getMessageRequestModePath``).
REQUEST_MODE_FILE: Final = "messageRequestMode.json"
#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``: retry topics are always PULL.
RETRY_PREFIX: Final = "%RETRY%"
#: ``MixAll.LMQ_PREFIX`` / ``MixAll.LMQ_QUEUE_ID``: a light message queue has one queue, id 0.
LMQ_PREFIX: Final = "%LMQ%"
LMQ_QUEUE_ID: Final = 0


@dataclass(frozen=True, kw_only=True)
class AssignmentConfig:
    """Server-side assignment settings (Java ``BrokerConfig`` names).

    Attributes:
        server_load_balancer_enable: False answers every queue of the topic to every client
            (``serverLoadBalancerEnable``, true).
        default_message_request_mode: mode of a (topic, group) with no SET_MESSAGE_REQUEST_MODE
            (``defaultMessageRequestMode``, PULL).
        default_pop_share_queue_num: popShareQueueNum used with a POP default mode
            (``defaultPopShareQueueNum``, -1).
        load_balance_poll_name_server_interval: seconds a topic's queue set fetched from the
            name server is reused (``loadBalancePollNameServerInterval``, 30 000 ms).
    """

    server_load_balancer_enable: bool = True
    default_message_request_mode: MessageRequestMode = MessageRequestMode.PULL
    default_pop_share_queue_num: int = -1
    load_balance_poll_name_server_interval: float = 30.0

    def __post_init__(self) -> None:
        if self.load_balance_poll_name_server_interval < 0:
            raise InvalidArgumentError("load_balance_poll_name_server_interval must be >= 0")


class RequestModeTable:
    """The broker's request-mode table (``MessageRequestModeManager``), owned by the loop thread.

    Attributes:
        dirty: True after a change not yet persisted.
    """

    #: required top-level keys of ``messageRequestMode.json`` (a file without them counts as bad)
    JSON_SHAPE: ClassVar[dict[str, type]] = {"messageRequestModeMap": dict}

    def __init__(self) -> None:
        self._map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}
        self.dirty = False

    def set(self, topic: str, group: str, body: SetMessageRequestModeRequestBody) -> None:
        """Record ``body`` as the mode of (``topic``, ``group``), replacing any earlier one."""
        self._map.setdefault(topic, {})[group] = body
        self.dirty = True

    def get(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        """The mode set for (``topic``, ``group``), or None."""
        return self._map.get(topic, {}).get(group)

    def as_map(self) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
        """A copy of the table: topic → group → body."""
        return {t: dict(g) for t, g in self._map.items()}

    def to_json(self) -> dict[str, Any]:
        """The persisted / GET_ALL_MESSAGE_REQUEST_MODE form (Java's bean names)."""
        return {"messageRequestModeMap": {t: {g: b.to_obj() for g, b in gs.items()} for t, gs in self._map.items()}}

    def load_json(self, obj: Any) -> None:
        """Replace the table with a persisted one; malformed entries are skipped."""
        self._map = {}
        table = obj.get("messageRequestModeMap") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        for topic, groups in table.items():
            if not isinstance(topic, str) or not isinstance(groups, dict):
                continue
            for group, body in groups.items():
                try:
                    parsed = SetMessageRequestModeRequestBody.from_obj(body)
                except ProtocolError:
                    continue
                if isinstance(group, str):
                    self._map.setdefault(topic, {})[group] = parsed


def effective_mode(
    table: RequestModeTable, topic: str, group: str, config: AssignmentConfig
) -> SetMessageRequestModeRequestBody:
    """The mode QUERY_ASSIGNMENT applies to (``topic``, ``group``).

    The one set by SET_MESSAGE_REQUEST_MODE, else PULL for a retry topic, else the configured
    default (with ``default_pop_share_queue_num`` when that default is POP). Mirrors the start
    of ``QueryAssignmentProcessor.queryAssignment``.
    """
    body = table.get(topic, group)
    if body is not None:
        return body
    mode = MessageRequestMode.PULL if topic.startswith(RETRY_PREFIX) else config.default_message_request_mode
    share = config.default_pop_share_queue_num if mode is MessageRequestMode.POP else 0
    return SetMessageRequestModeRequestBody(topic=topic, consumer_group=group, mode=mode, pop_share_queue_num=share)


# ---------------------------------------------------------------------------------------------
# Strategies (the broker cannot import the client's; these are the two Java's broker registers)

Strategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``.

    Raises:
        ValueError: blank client id, no queues or no client ids (Java: IllegalArgumentException).
    """
    if not current_cid or not current_cid.strip():
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    return current_cid in cid_all


def allocate_averagely(
    group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """One contiguous block per client; the first ``queues % clients`` clients get one more.

    Mirrors ``AllocateMessageQueueAveragely.allocate`` (inputs already sorted by the caller).

    Raises:
        ValueError: see :func:`_check`.

    >>> qs = [MessageQueue("T", "b", i) for i in range(5)]
    >>> [[q.queue_id for q in allocate_averagely("g", c, qs, ["a", "b"])] for c in "ab"]
    [[0, 1, 2], [3, 4]]
    """
    if not _check(current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    n, m = len(mq_all), len(cid_all)
    mod = n % m
    if n <= m:
        size = 1
    elif mod > 0 and index < mod:
        size = n // m + 1
    else:
        size = n // m
    start = index * size if (mod > 0 and index < mod) else index * size + mod
    return [mq_all[(start + i) % n] for i in range(min(size, n - start))]


def allocate_averagely_by_circle(
    group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Queue ``j`` goes to client ``j % clients``. Mirrors ``AllocateMessageQueueAveragelyByCircle``.

    Raises:
        ValueError: see :func:`_check`.

    >>> qs = [MessageQueue("T", "b", i) for i in range(5)]
    >>> [[q.queue_id for q in allocate_averagely_by_circle("g", c, qs, ["a", "b"])] for c in "ab"]
    [[0, 2, 4], [1, 3]]
    """
    if not _check(current_cid, mq_all, cid_all):
        return []
    index, m = cid_all.index(current_cid), len(cid_all)
    return [mq_all[i] for i in range(index, len(mq_all)) if i % m == index]


#: Strategies by ``AllocateMessageQueueStrategy.getName()``, as registered by ``QueryAssignmentProcessor``.
STRATEGIES: Final[dict[str, Strategy]] = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_averagely_by_circle}


def allocate4pop(
    strategy: Strategy,
    group: str,
    client_id: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    pop_share_queue_num: int,
) -> list[MessageQueue]:
    """POP-mode allocation (see the module table). Mirrors ``QueryAssignmentProcessor.allocate4Pop``.

    Raises:
        ValueError: the strategy's argument check failed, or (one queue per client) a blank id.
    """
    if pop_share_queue_num <= 0 or pop_share_queue_num >= len(cid_all) - 1:
        return [MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all]
    if len(cid_all) <= len(mq_all):
        result = strategy(group, client_id, mq_all, cid_all)
        if client_id in cid_all:
            index = cid_all.index(client_id)
            for _ in range(pop_share_queue_num):
                index = (index + 1) % len(cid_all)
                result.extend(strategy(group, cid_all[index], mq_all, cid_all))
        return result
    if not client_id or not client_id.strip():
        raise ValueError("currentCID is empty")
    if client_id not in cid_all:
        return []
    return [mq_all[cid_all.index(client_id) % len(mq_all)]]


def do_load_balance(
    *,
    topic: str,
    group: str,
    client_id: str,
    message_model: MessageModel,
    strategy_name: str,
    mode: SetMessageRequestModeRequestBody,
    mq_set: set[MessageQueue] | None,
    cid_all: Sequence[str] | None,
    broker_name: str,
    server_load_balancer_enable: bool = True,
) -> set[MessageQueue] | None:
    """The queues assigned to ``client_id``; None = no valid result (the client keeps its queues).

    Args:
        topic, group, client_id, message_model, strategy_name: from the request body.
        mode: the effective request mode (:func:`effective_mode`).
        mq_set: every readable queue of the topic (all brokers), None when the topic is unknown.
        cid_all: client ids of the group's live consumers, None when the group has none.
        broker_name: this broker's name (for a light message queue).
        server_load_balancer_enable: False → every queue of the topic.

    Mirrors ``QueryAssignmentProcessor.doLoadBalance``: BROADCASTING gets ``mq_set``; CLUSTERING
    gets None for an unknown topic, group or strategy name, or when the strategy raises, else
    the strategy's result (POP mode: :func:`allocate4pop`) as a set.
    """
    if message_model is MessageModel.BROADCASTING:
        return None if mq_set is None else set(mq_set)
    if topic.startswith(LMQ_PREFIX):
        mq_set = {MessageQueue(topic, broker_name, LMQ_QUEUE_ID)}
    if mq_set is None:
        return None
    if not server_load_balancer_enable:
        return set(mq_set)
    if cid_all is None:
        return None
    strategy = STRATEGIES.get(strategy_name)
    if strategy is None:
        return None
    mq_all = sorted(mq_set)
    cids = sorted(cid_all)
    try:
        if mode.mode is MessageRequestMode.POP:
            result = allocate4pop(strategy, group, client_id, mq_all, cids, mode.pop_share_queue_num)
        else:
            result = strategy(group, client_id, mq_all, cids)
    except ValueError:
        return None
    return set(result)
