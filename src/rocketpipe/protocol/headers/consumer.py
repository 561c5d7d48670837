"""Consumer-management headers (L1, sans-IO): CONSUMER_SEND_MSG_BACK (36),
GET_CONSUMER_LIST_BY_GROUP (38), NOTIFY_CONSUMER_IDS_CHANGED (40), UNREGISTER_CLIENT (35),
HEART_BEAT (34, empty 5.x header), GET_CONSUMER_RUNNING_INFO (307),
RESET_CONSUMER_CLIENT_OFFSET (220) / INVOKE_BROKER_TO_RESET_OFFSET (222),
GET_CONSUMER_STATUS_FROM_CLIENT (221), CONSUME_MESSAGE_DIRECTLY (309).

Mirrors the Java header classes of the same names (remoting/protocol/header). Note the Java
spellings on the wire: ``clientID`` (unregister) vs ``clientId`` (running info), ``isForce``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import REQUEST_HEADERS, RpcRequestHeader, TopicRequestHeader, wire

__all__ = [
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "HeartbeatRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "ResetOffsetRequestHeader",
    "UnregisterClientRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequestHeader(RpcRequestHeader):
    """HEART_BEAT (34) header: only the 5.x base keys (Java ``HeartbeatRequestHeader``); the
    content is the ``HeartbeatData`` JSON body. 4.x sends no header at all."""

    REQUEST_CODE: ClassVar[int] = RequestCode.HEART_BEAT


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    """CONSUMER_SEND_MSG_BACK (36) request (Java ``ConsumerSendMsgBackRequestHeader``).

    Attributes:
        offset: commit-log (physical) offset of the consumed message (required).
        group: consumer group (required).
        delay_level: 0 = broker decides, > 0 explicit level, < 0 straight to DLQ (required).
        origin_msg_id: msg id the client saw (UNIQ_KEY, else offset msg id).
        origin_topic: topic the client saw.
        unit_mode: Java primitive, default False (always sent).
        max_reconsume_times: client's max retries.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.CONSUMER_SEND_MSG_BACK

    offset: int | None = wire("offset", required=True)
    group: str | None = wire("group", required=True)
    delay_level: int | None = wire("delayLevel", 0, required=True)
    origin_msg_id: str | None = wire("originMsgId")
    origin_topic: str | None = wire("originTopic")
    unit_mode: bool | None = wire("unitMode", False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38) request (Java ``GetConsumerListByGroupRequestHeader``).

    Attributes:
        consumer_group: group (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_CONSUMER_LIST_BY_GROUP

    consumer_group: str | None = wire("consumerGroup", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(RpcRequestHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40, broker to client, oneway) request
    (Java ``NotifyConsumerIdsChangedRequestHeader``).

    Attributes:
        consumer_group: group whose membership changed (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED

    consumer_group: str | None = wire("consumerGroup", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(RpcRequestHeader):
    """UNREGISTER_CLIENT (35) request (Java ``UnregisterClientRequestHeader``).

    Attributes:
        client_id: client id, wire key ``clientID`` (required).
        producer_group: producer group to leave.
        consumer_group: consumer group to leave.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.UNREGISTER_CLIENT

    client_id: str | None = wire("clientID", required=True)
    producer_group: str | None = wire("producerGroup")
    consumer_group: str | None = wire("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_RUNNING_INFO (307) request (Java ``GetConsumerRunningInfoRequestHeader``).

    Attributes:
        consumer_group: group (required).
        client_id: client id, wire key ``clientId`` (required).
        jstack_enable: include a thread dump (Java primitive, default False, always sent).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_CONSUMER_RUNNING_INFO

    consumer_group: str | None = wire("consumerGroup", required=True)
    client_id: str | None = wire("clientId", required=True)
    jstack_enable: bool | None = wire("jstackEnable", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader(TopicRequestHeader):
    """RESET_CONSUMER_CLIENT_OFFSET (220) / INVOKE_BROKER_TO_RESET_OFFSET (222) request
    (Java ``ResetOffsetRequestHeader``).

    Attributes:
        group: consumer group (required).
        topic: topic (required).
        queue_id: 5.x: queue to reset, -1 = all (Java primitive, always sent).
        offset: 5.x: explicit offset instead of the timestamp lookup.
        timestamp: reset to the offset stored at this time, ms (required).
        is_force: reset even forwards, wire key ``isForce`` (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.RESET_CONSUMER_CLIENT_OFFSET

    group: str | None = wire("group", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", -1)
    offset: int | None = wire("offset")
    timestamp: int | None = wire("timestamp", required=True)
    is_force: bool | None = wire("isForce", False, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerStatusRequestHeader(TopicRequestHeader):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)
    request (Java ``GetConsumerStatusRequestHeader``).

    Attributes:
        topic: topic (required).
        group: consumer group (required).
        client_addr: only this client.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT

    topic: str | None = wire("topic", required=True)
    group: str | None = wire("group", required=True)
    client_addr: str | None = wire("clientAddr")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(TopicRequestHeader):
    """CONSUME_MESSAGE_DIRECTLY (309) request (Java ``ConsumeMessageDirectlyResultRequestHeader``).

    Attributes:
        consumer_group: group (required).
        client_id: target client id.
        msg_id: offset message id of the message to consume.
        broker_name: broker holding the message.
        topic: topic (5.x).
        topic_sys_flag: 5.x.
        group_sys_flag: 5.x.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.CONSUME_MESSAGE_DIRECTLY

    consumer_group: str | None = wire("consumerGroup", required=True)
    client_id: str | None = wire("clientId")
    msg_id: str | None = wire("msgId")
    broker_name: str | None = wire("brokerName")
    topic: str | None = wire("topic")
    topic_sys_flag: int | None = wire("topicSysFlag")
    group_sys_flag: int | None = wire("groupSysFlag")


REQUEST_HEADERS[int(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET)] = ResetOffsetRequestHeader
REQUEST_HEADERS[int(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS)] = GetConsumerStatusRequestHeader
