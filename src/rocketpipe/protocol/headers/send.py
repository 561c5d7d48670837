"""Send headers: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) (L1, sans-IO).

Mirrors ``SendMessageRequestHeader``, ``SendMessageRequestHeaderV2`` and
``SendMessageResponseHeader`` (remoting/protocol/header). V1 uses the Java field names as keys,
V2 the single letters ``a``..``n``; both carry the same attributes here, so code can switch
with :meth:`SendMessageRequestHeaderV2.to_v1` / :meth:`SendMessageRequestHeaderV2.from_v1`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import REQUEST_HEADERS, CommandHeader, TopicRequestHeader, wire

__all__ = [
    "RecallMessageRequestHeader",
    "RecallMessageResponseHeader",
    "ReplyMessageRequestHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader(TopicRequestHeader):
    """V1 send header (Java ``SendMessageRequestHeader``), codes 10 and 324.

    Attributes:
        producer_group: producer group (``producerGroup``, required).
        topic: target topic (required).
        default_topic: template topic for auto-creation, normally ``TBW102`` (required).
        default_topic_queue_nums: queue count of an auto-created topic (required).
        queue_id: target queue; negative lets the broker pick (required).
        sys_flag: message sysFlag bits (required).
        born_timestamp: producer clock, ms since the epoch (required).
        flag: user flag, stored verbatim (required).
        properties: the message property string (0x01/0x02 separated).
        reconsume_times: current retry count (``%RETRY%`` topics).
        unit_mode: unit mode.
        batch: True when the body is a batch of encoded messages.
        max_reconsume_times: max retries (``%RETRY%`` topics).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.SEND_MESSAGE

    producer_group: str | None = wire("producerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    default_topic: str | None = wire("defaultTopic", "TBW102", required=True)
    default_topic_queue_nums: int | None = wire("defaultTopicQueueNums", 4, required=True)
    queue_id: int | None = wire("queueId", required=True)
    sys_flag: int | None = wire("sysFlag", 0, required=True)
    born_timestamp: int | None = wire("bornTimestamp", required=True)
    flag: int | None = wire("flag", 0, required=True)
    properties: str | None = wire("properties")
    reconsume_times: int | None = wire("reconsumeTimes")
    unit_mode: bool | None = wire("unitMode")
    batch: bool | None = wire("batch")
    max_reconsume_times: int | None = wire("maxReconsumeTimes")


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """V2 send header with single-letter keys (Java ``SendMessageRequestHeaderV2``), codes 310, 320, 325.

    Same attributes as :class:`SendMessageRequestHeader`; ``bname`` travels as ``n``. Java's
    fast encoder writes only ``a``..``n``, so the other 5.x base keys are not modelled here.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.SEND_MESSAGE_V2

    producer_group: str | None = wire("a", required=True)
    topic: str | None = wire("b", required=True)
    default_topic: str | None = wire("c", "TBW102", required=True)
    default_topic_queue_nums: int | None = wire("d", 4, required=True)
    queue_id: int | None = wire("e", required=True)
    sys_flag: int | None = wire("f", 0, required=True)
    born_timestamp: int | None = wire("g", required=True)
    flag: int | None = wire("h", 0, required=True)
    properties: str | None = wire("i")
    reconsume_times: int | None = wire("j")
    unit_mode: bool | None = wire("k")
    max_reconsume_times: int | None = wire("l")
    batch: bool | None = wire("m")
    bname: str | None = wire("n")

    def to_v1(self) -> SendMessageRequestHeader:
        """Return the same header as V1 (Java ``createSendMessageRequestHeaderV1``)."""
        return SendMessageRequestHeader(
            producer_group=self.producer_group,
            topic=self.topic,
            default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=self.queue_id,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            flag=self.flag,
            properties=self.properties,
            reconsume_times=self.reconsume_times,
            unit_mode=self.unit_mode,
            batch=self.batch,
            max_reconsume_times=self.max_reconsume_times,
            bname=self.bname,
        )

    @classmethod
    def from_v1(cls, h: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        """Build a V2 header from a V1 one (Java ``createSendMessageRequestHeaderV2``)."""
        return cls(
            producer_group=h.producer_group,
            topic=h.topic,
            default_topic=h.default_topic,
            default_topic_queue_nums=h.default_topic_queue_nums,
            queue_id=h.queue_id,
            sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp,
            flag=h.flag,
            properties=h.properties,
            reconsume_times=h.reconsume_times,
            unit_mode=h.unit_mode,
            max_reconsume_times=h.max_reconsume_times,
            batch=h.batch,
            bname=h.bname,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader(CommandHeader):
    """Send response header (Java ``SendMessageResponseHeader``).

    The broker also mixes ``MSG_REGION`` and ``TRACE_ON`` into the response's extFields; they
    are not part of this class (read them from ``cmd.ext_fields``).

    Attributes:
        msg_id: offset message id; for batches a comma-separated list (required).
        queue_id: queue used (required).
        queue_offset: consume-queue offset of the (first) message (required).
        transaction_id: the message's ``UNIQ_KEY``.
        batch_uniq_id: 5.x inner/auto batch id.
        recall_handle: 5.3.2+ handle for recalling a delayed message.
    """

    msg_id: str | None = wire("msgId", required=True)
    queue_id: int | None = wire("queueId", required=True)
    queue_offset: int | None = wire("queueOffset", required=True)
    transaction_id: str | None = wire("transactionId")
    batch_uniq_id: str | None = wire("batchUniqId")
    recall_handle: str | None = wire("recallHandle")


REQUEST_HEADERS[int(RequestCode.SEND_BATCH_MESSAGE)] = SendMessageRequestHeaderV2
REQUEST_HEADERS[int(RequestCode.SEND_REPLY_MESSAGE)] = SendMessageRequestHeader
REQUEST_HEADERS[int(RequestCode.SEND_REPLY_MESSAGE_V2)] = SendMessageRequestHeaderV2


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyMessageRequestHeader(TopicRequestHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326, broker to the requesting client) header
    (Java ``ReplyMessageRequestHeader``): the reply's send header plus where and when it was stored.

    Attributes:
        producer_group, topic, default_topic, default_topic_queue_nums, queue_id, sys_flag,
        born_timestamp, flag, properties, reconsume_times, unit_mode: copied from the
            replier's SEND_REPLY_MESSAGE (``properties`` with ``PUSH_REPLY_TIME`` added).
        born_host: the replier's ``"ip:port"`` (required).
        store_host: the broker's ``"ip:port"`` (required).
        store_timestamp: broker time of the push, ms (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT

    producer_group: str | None = wire("producerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    default_topic: str | None = wire("defaultTopic", required=True)
    default_topic_queue_nums: int | None = wire("defaultTopicQueueNums", required=True)
    queue_id: int | None = wire("queueId", required=True)
    sys_flag: int | None = wire("sysFlag", required=True)
    born_timestamp: int | None = wire("bornTimestamp", required=True)
    flag: int | None = wire("flag", required=True)
    properties: str | None = wire("properties")
    reconsume_times: int | None = wire("reconsumeTimes")
    unit_mode: bool | None = wire("unitMode", False)
    born_host: str | None = wire("bornHost", required=True)
    store_host: str | None = wire("storeHost", required=True)
    store_timestamp: int | None = wire("storeTimestamp", required=True)


REQUEST_HEADERS[int(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)] = ReplyMessageRequestHeader


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallMessageRequestHeader(TopicRequestHeader):
    """RECALL_MESSAGE (370, 5.3.2+) request (Java ``RecallMessageRequestHeader``).

    Attributes:
        producer_group: the recalling producer's group (optional).
        topic: the delayed message's topic (required).
        recall_handle: the handle of the send result (required;
            :func:`~rocketpipe.protocol.recall.decode_recall_handle`).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.RECALL_MESSAGE

    producer_group: str | None = wire("producerGroup")
    topic: str | None = wire("topic", required=True)
    recall_handle: str | None = wire("recallHandle", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallMessageResponseHeader(CommandHeader):
    """RECALL_MESSAGE response (Java ``RecallMessageResponseHeader``).

    Attributes:
        msg_id: the recalled message's ``UNIQ_KEY`` (required).
    """

    msg_id: str | None = wire("msgId", required=True)
