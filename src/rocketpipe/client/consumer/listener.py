"""Listener types of the push consumer (L3): statuses, context, listener protocol, enums.

Mirrors ``ConsumeConcurrentlyStatus``, ``ConsumeConcurrentlyContext``,
``MessageListenerConcurrently`` and ``MessageModel``. A listener is either an ``async def`` or a
plain function (run in the consumer's bounded thread pool); both receive
``(list[MessageExt], ConsumeConcurrentlyContext)`` and return a status. An exception or a None
return counts as ``RECONSUME_LATER``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Union

from ...protocol.message import MessageExt, MessageQueue

#: Integer.MAX_VALUE: the initial ack index (every message acknowledged on success).
ACK_ALL: Final = 2**31 - 1


class ConsumeConcurrentlyStatus(enum.Enum):
    """Result of a concurrent listener call (``ConsumeConcurrentlyStatus``)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class MessageModel(enum.Enum):
    """Consumption model (``MessageModel``); only CLUSTERING is implemented by PushConsumer."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Per-call context handed to a concurrent listener (``ConsumeConcurrentlyContext``).

    Attributes:
        message_queue: the queue the messages were pulled from (retry queue for retries).
        delay_level_when_next_consume: delay level of the send-back of failed messages; 0 lets
            the broker choose ``3 + reconsume_times``; < 0 sends them to the DLQ.
        ack_index: with CONSUME_SUCCESS, messages after this index are treated as failed.
    """

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = ACK_ALL


ListenerResult = Union[ConsumeConcurrentlyStatus, None]
MessageListenerConcurrently = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext],
    Union[ListenerResult, Awaitable[ListenerResult]],
]
"""A concurrent listener: ``(msgs, context) -> status`` (sync or async)."""
