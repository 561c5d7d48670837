"""Consumer send-back decisions (L3, pure): retry topic, reconsume count, DLQ after max.

Mirrors ``AbstractSendMessageProcessor.consumerSendMsgBack`` (CONSUMER_SEND_MSG_BACK) and the
``%RETRY%`` branch of ``SendMessageProcessor`` (``handleRetryAndDLQ``), reduced to plain
functions of their inputs; the processors carry the decisions out. Imports nothing from I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX as DLQ_GROUP_TOPIC_PREFIX
from ..protocol.names import RETRY_GROUP_TOPIC_PREFIX as RETRY_GROUP_TOPIC_PREFIX
from ..protocol.names import dlq_topic as dlq_topic
from ..protocol.names import group_of_retry_topic as group_of_retry_topic
from ..protocol.names import is_retry_topic as is_retry_topic
from ..protocol.names import retry_topic as retry_topic

#: MixAll.DLQ_NUMS_PER_GROUP
DLQ_NUMS_PER_GROUP: Final = 1
#: SubscriptionGroupConfig.retryMaxTimes default
DEFAULT_RETRY_MAX_TIMES: Final = 16
#: MQVersion.V3_4_9: requests at least this new have their ``maxReconsumeTimes`` honoured.
VERSION_HONOUR_MAX_RECONSUME: Final = 121


def max_reconsume_times(header_value: int | None, group_retry_max_times: int, request_version: int) -> int:
    """Return the max reconsume times in force for a request.

    Args:
        header_value: ``maxReconsumeTimes`` from the request header, or None.
        group_retry_max_times: the subscription group's ``retryMaxTimes``.
        request_version: the request's MQVersion ordinal (the header value counts from V3_4_9).
    """
    if header_value is not None and request_version >= VERSION_HONOUR_MAX_RECONSUME:
        return header_value
    return group_retry_max_times


@dataclass(frozen=True, slots=True)
class SendBackDecision:
    """Where a failed message goes.

    Attributes:
        topic: ``%RETRY%<group>`` or ``%DLQ%<group>``.
        queue_id: queue in that topic.
        delay_level: level to schedule the copy with (0 for the DLQ: stored at once).
        reconsume_times: the copy's reconsume count (previous + 1).
        is_dlq: True when the message is dead-lettered.
    """

    topic: str
    queue_id: int
    delay_level: int
    reconsume_times: int
    is_dlq: bool


def decide_send_back(
    *,
    group: str,
    reconsume_times: int,
    delay_level: int,
    max_times: int,
    retry_queue_nums: int,
    random_int: int,
) -> SendBackDecision | None:
    """Decide the fate of a message reported by CONSUMER_SEND_MSG_BACK.

    Rules (Java 4.9/5.x alike): ``retry_queue_nums <= 0`` drops the message (None; the
    broker still answers SUCCESS); ``reconsume_times >= max_times`` or ``delay_level < 0`` sends
    it to ``%DLQ%<group>`` queue 0; otherwise to ``%RETRY%<group>`` queue
    ``random_int % retry_queue_nums`` with ``delay_level`` or, when 0, ``3 + reconsume_times``.

    Args:
        group: consumer group.
        reconsume_times: the stored message's reconsume count.
        delay_level: header ``delayLevel`` (0 = broker decides, < 0 = straight to DLQ).
        max_times: result of :func:`max_reconsume_times`.
        retry_queue_nums: the group's ``retryQueueNums``.
        random_int: a non-negative random number used to pick the retry queue.

    Returns:
        The decision, or None when the group disables retries.
    """
    if retry_queue_nums <= 0:
        return None
    if reconsume_times >= max_times or delay_level < 0:
        return SendBackDecision(dlq_topic(group), random_int % DLQ_NUMS_PER_GROUP, 0, reconsume_times + 1, True)
    level = delay_level if delay_level > 0 else 3 + reconsume_times
    return SendBackDecision(retry_topic(group), random_int % retry_queue_nums, level, reconsume_times + 1, False)


def retry_send_goes_to_dlq(reconsume_times: int, max_times: int) -> bool:
    """True when a message a client sends into ``%RETRY%<group>`` must go to the DLQ.

    Follows 5.x (``reconsumeTimes > max``); 4.9.x used ``>=``.
    """
    return reconsume_times > max_times
