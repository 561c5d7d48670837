"""Retry and dead-letter naming and arithmetic (pure; L3, imports only protocol.message and protocol.names).

Mirrors ``MixAll.getRetryTopic`` / ``getDLQTopic`` and the concurrent consumer's retry rules:
a failed message goes back with delay level 0, which the broker turns into
``3 + reconsume_times``; messages read from ``%RETRY%<group>`` carry their first topic in the
``RETRY_TOPIC`` property and get it back before a listener sees them.
"""

from __future__ import annotations

from typing import Final

from ...protocol.message import PROPERTY_RETRY_TOPIC, MessageExt
from ...protocol.names import DLQ_GROUP_TOPIC_PREFIX as DLQ_GROUP_TOPIC_PREFIX
from ...protocol.names import RETRY_GROUP_TOPIC_PREFIX as RETRY_GROUP_TOPIC_PREFIX
from ...protocol.names import dlq_topic as dlq_topic
from ...protocol.names import is_retry_topic as is_retry_topic
from ...protocol.names import retry_topic as retry_topic

#: DefaultMQPushConsumer.maxReconsumeTimes default for concurrent consumers (-1 means 16).
DEFAULT_MAX_RECONSUME_TIMES: Final = 16


def default_delay_level(reconsume_times: int) -> int:
    """Return the delay level the broker picks for send-back level 0: ``3 + reconsume_times``.

    >>> default_delay_level(0), default_delay_level(2)
    (3, 5)
    """
    return 3 + reconsume_times


def effective_max_reconsume_times(max_reconsume_times: int) -> int:
    """Map the consumer setting to the sent value: -1 means 16 (concurrent mode).

    >>> effective_max_reconsume_times(-1), effective_max_reconsume_times(3)
    (16, 3)
    """
    return DEFAULT_MAX_RECONSUME_TIMES if max_reconsume_times == -1 else max_reconsume_times


def restore_retry_topic(msg: MessageExt, group: str) -> None:
    """Put the original topic back on a message read from ``%RETRY%<group>`` (in place).

    Mirrors ``ConsumeMessageConcurrentlyService.resetRetryAndNamespace``.
    """
    original = msg.properties.get(PROPERTY_RETRY_TOPIC)
    if original and msg.topic == retry_topic(group):
        msg.topic = original


def listener_topic(msg: MessageExt, retry: str) -> str:
    """The topic a listener will see on ``msg`` (not changed): the ``RETRY_TOPIC`` property of a
    message read from the retry topic ``retry``, else its topic (what
    :func:`restore_retry_topic` would leave)."""
    if msg.topic == retry:
        return msg.properties.get(PROPERTY_RETRY_TOPIC) or msg.topic
    return msg.topic
