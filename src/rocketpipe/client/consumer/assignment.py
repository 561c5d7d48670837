"""Broker-side queue assignment, client side (5.x, L3): QUERY_ASSIGNMENT (400),
SET_MESSAGE_REQUEST_MODE (401), and the "does this topic rebalance on the broker?" probe of the
push consumer.

Mirrors ``MQClientAPIImpl.queryAssignment`` / ``setMessageRequestMode``,
``MQClientInstance.queryAssignment`` and ``RebalanceImpl.tryQueryAssignment`` of the Java client
5.0.0–5.3.1. The bodies are :mod:`rocketpipe.protocol.bodies.assignment` (re-exported here).

Imports protocol, errors and the client runtime (type only).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ...errors import RequestTimeoutError, RocketMQError, TopicNotExistError, error_for_response
from ...protocol.bodies.assignment import (
    MessageModel,
    MessageQueueAssignment,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.message import MessageQueue
from ..routing import MASTER_ID

if TYPE_CHECKING:
    from ..runtime import ClientRuntime

__all__ = [
    "QUERY_ASSIGNMENT_TIMEOUT",
    "TIMEOUT_CHECK_TIMES",
    "AssignmentProbe",
    "MessageModel",
    "MessageQueueAssignment",
    "MessageRequestMode",
    "QueryAssignmentRequestBody",
    "QueryAssignmentResponseBody",
    "SetMessageRequestModeRequestBody",
    "query_assignment",
    "set_message_request_mode",
    "split_assignments",
    "strategy_name",
]

#: RebalanceImpl.QUERY_ASSIGNMENT_TIMEOUT (3 000 ms), seconds.
QUERY_ASSIGNMENT_TIMEOUT: Final = 3.0
#: RebalanceImpl.TIMEOUT_CHECK_TIMES (5.0.0–5.3.1): timed-out probes before client rebalance.
TIMEOUT_CHECK_TIMES: Final = 3

#: Java ``AllocateMessageQueueStrategy.getName()`` of the rocketpipe strategies, by function name.
_STRATEGY_NAMES: Final = {
    "allocate_averagely": "AVG",
    "allocate_averagely_by_circle": "AVG_BY_CIRCLE",
    "allocate_consistent_hash": "CONSISTENT_HASH",
    "allocate_by_config": "CONFIG",
    "allocate_by_machine_room": "MACHINE_ROOM",
    "allocate_machine_room_nearby": "MACHINE_ROOM_NEARBY",
}


def strategy_name(strategy: Any) -> str:
    """The Java strategy name sent in QUERY_ASSIGNMENT (``AVG``, ``AVG_BY_CIRCLE``, …).

    A strategy object with a ``name`` attribute (or ``get_name()``) gives its own; unknown
    functions give their ``__name__`` (the broker then answers an empty assignment: Apache 5.x
    only knows ``AVG`` and ``AVG_BY_CIRCLE``).

    >>> from rocketpipe.client.consumer.allocate import allocate_averagely
    >>> strategy_name(allocate_averagely)
    'AVG'
    """
    for attr in ("name", "get_name"):
        v = getattr(strategy, attr, None)
        if callable(v) and attr == "get_name":
            v = v()
        if isinstance(v, str) and v:
            return v
    fn = getattr(strategy, "__name__", type(strategy).__name__)
    return _STRATEGY_NAMES.get(fn, fn)


def split_assignments(
    assignments: Iterable[MessageQueueAssignment],
) -> tuple[set[MessageQueue], set[MessageQueue]]:
    """Split assignments into (PULL queues, POP queues) (``updateMessageQueueAssignment``).

    >>> a = MessageQueueAssignment(MessageQueue("T", "b", 0))
    >>> b = MessageQueueAssignment(MessageQueue("T", "b", -1), MessageRequestMode.POP)
    >>> split_assignments([a, b])
    ({MessageQueue(topic='T', broker_name='b', queue_id=0)}, {MessageQueue(topic='T', broker_name='b', queue_id=-1)})
    """
    pull: set[MessageQueue] = set()
    pop: set[MessageQueue] = set()
    for a in assignments:
        (pop if a.mode is MessageRequestMode.POP else pull).add(a.message_queue)
    return pull, pop


async def query_assignment(
    runtime: ClientRuntime,
    topic: str,
    group: str,
    strategy: str,
    message_model: str,
    timeout: float = QUERY_ASSIGNMENT_TIMEOUT,
) -> list[MessageQueueAssignment] | None:
    """QUERY_ASSIGNMENT (400) to a master broker of the topic's route.

    Mirrors ``MQClientInstance.queryAssignment`` (a random broker of the route; the route is
    fetched when not cached) + ``MQClientAPIImpl.queryAssignment``.

    Args:
        runtime: the client runtime (this client's id is sent).
        topic: topic (or retry topic).
        group: consumer group.
        strategy: Java strategy name.
        message_model: ``CLUSTERING`` / ``BROADCASTING``.
        timeout: RPC timeout, seconds.

    Returns:
        The assignments, or None when the broker had no valid result.

    Raises:
        TopicNotExistError: no route / no master broker for the topic.
        RequestCodeNotSupportedError: a broker without QUERY_ASSIGNMENT (4.x);
        BrokerError; RequestTimeoutError / TransportError.
    """
    route = runtime.cached_route(topic) or await runtime.fetch_route(topic)
    addrs = sorted(
        {a for bd in route.broker_datas or () for bid, a in bd.broker_addrs.items() if int(bid) == MASTER_ID}
    )
    if not addrs:
        raise TopicNotExistError(f"no master broker for topic {topic!r}")
    body = QueryAssignmentRequestBody(topic, group, runtime.client_id, strategy, MessageModel(message_model))
    cmd = RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, None, body.encode())
    resp = await runtime.pool.request(random.choice(addrs), cmd, timeout)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    if not resp.body:
        return None
    return QueryAssignmentResponseBody.decode(bytes(resp.body)).message_queue_assignments


async def set_message_request_mode(
    runtime: ClientRuntime, addr: str, body: SetMessageRequestModeRequestBody, timeout: float
) -> None:
    """SET_MESSAGE_REQUEST_MODE (401) to one broker (``MQClientAPIImpl.setMessageRequestMode``).

    Raises:
        RequestCodeNotSupportedError: a 4.x broker; NoPermissionError: a retry topic;
        TopicNotExistError; SubscriptionError (group missing and not auto-created);
        BrokerError; TransportError.
    """
    cmd = RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, None, body.encode())
    resp = await runtime.pool.request(addr, cmd, timeout)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)


@dataclass(slots=True)
class AssignmentProbe:
    """Per-topic "broker or client rebalance?" memory (``RebalanceImpl.tryQueryAssignment``).

    Java 5.0.0–5.3.1: a topic whose first QUERY_ASSIGNMENT answered (any SUCCESS) rebalances
    on the broker from then on; one that failed with anything but a timeout (e.g. a 4.x
    broker's REQUEST_CODE_NOT_SUPPORTED) — or timed out :data:`TIMEOUT_CHECK_TIMES` times in a
    row, with timeouts of 1, 2 and 3 s — rebalances on the client. Topics that are no longer
    subscribed are forgotten. (5.3.2 removed the probe: a failed query then leaves the topic
    unassigned; rocketpipe keeps the fallback so that a POP-mode consumer still consumes, by
    PULL, from a broker without QUERY_ASSIGNMENT.)

    Attributes:
        broker_topics: topics rebalanced by the broker.
        client_topics: topics rebalanced by the client.
    """

    broker_topics: set[str] = field(default_factory=set)
    client_topics: set[str] = field(default_factory=set)

    async def use_broker(self, topic: str, query: Any) -> bool:
        """Decide (once per topic) whether ``topic`` is rebalanced by the broker.

        Args:
            topic: the topic.
            query: ``async (timeout_seconds) -> assignments`` (a QUERY_ASSIGNMENT).

        Raises:
            TopicNotExistError: no route yet (nothing decided; asked again next round).
        """
        if topic in self.client_topics:
            return False
        if topic in self.broker_topics:
            return True
        for attempt in range(1, TIMEOUT_CHECK_TIMES + 1):
            try:
                await query(QUERY_ASSIGNMENT_TIMEOUT / TIMEOUT_CHECK_TIMES * attempt)
            except TopicNotExistError:
                raise
            except RequestTimeoutError:
                continue
            except RocketMQError:
                self.client_topics.add(topic)
                return False
            self.broker_topics.add(topic)
            return True
        self.client_topics.add(topic)
        return False

    def retain(self, topics: Iterable[str]) -> None:
        """Forget every topic not in ``topics`` (``truncateMessageQueueNotMyTopic``)."""
        keep = set(topics)
        self.broker_topics &= keep
        self.client_topics &= keep
