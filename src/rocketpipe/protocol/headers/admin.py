"""Admin and lookup headers (L1, sans-IO): UPDATE_AND_CREATE_TOPIC (17), GET_TOPIC_STATS_INFO
(202), GET_CONSUME_STATS (208), GET_CONSUMER_CONNECTION_LIST (203), VIEW_MESSAGE_BY_ID (33),
QUERY_MESSAGE (12), DELETE_TOPIC_IN_BROKER (215), DELETE_SUBSCRIPTIONGROUP (207),
QUERY_TOPIC_CONSUME_BY_WHO (300), GET_TOPIC_CONFIG (351), VIEW_BROKER_STATS_DATA (315).

UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) has no header: its body is a
``SubscriptionGroupConfig`` (see :mod:`rocketpipe.protocol.bodies.admin`).
Mirrors the Java header classes of the same names (remoting/protocol/header).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import CommandHeader, RpcRequestHeader, TopicRequestHeader, wire

__all__ = [
    "CreateTopicRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetTopicConfigRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicRequestHeader(TopicRequestHeader):
    """UPDATE_AND_CREATE_TOPIC (17) request (Java ``CreateTopicRequestHeader``).

    Attributes:
        topic: topic (required).
        default_topic: template name, Java admin sends ``TBW102`` (required).
        read_queue_nums: read queues (required).
        write_queue_nums: write queues (required).
        perm: PermName bits (required).
        topic_filter_type: ``SINGLE_TAG`` or ``MULTI_TAG`` (required).
        topic_sys_flag: TopicSysFlag bits.
        order: order topic (required, default False).
        attributes: 5.x ``+key=value,-key`` attribute changes.
        force: 5.x.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.UPDATE_AND_CREATE_TOPIC

    topic: str | None = wire("topic", required=True)
    default_topic: str | None = wire("defaultTopic", "TBW102", required=True)
    read_queue_nums: int | None = wire("readQueueNums", 8, required=True)
    write_queue_nums: int | None = wire("writeQueueNums", 8, required=True)
    perm: int | None = wire("perm", 6, required=True)
    topic_filter_type: str | None = wire("topicFilterType", "SINGLE_TAG", required=True)
    topic_sys_flag: int | None = wire("topicSysFlag")
    order: bool | None = wire("order", False, required=True)
    attributes: str | None = wire("attributes")
    force: bool | None = wire("force", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(TopicRequestHeader):
    """GET_TOPIC_STATS_INFO (202) request (Java ``GetTopicStatsInfoRequestHeader``).

    Attributes:
        topic: topic (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_TOPIC_STATS_INFO

    topic: str | None = wire("topic", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(TopicRequestHeader):
    """GET_CONSUME_STATS (208) request (Java ``GetConsumeStatsRequestHeader``).

    Attributes:
        consumer_group: group (required).
        topic: only this topic.
        topic_list: 5.x: comma-separated topics.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_CONSUME_STATS

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic")
    topic_list: str | None = wire("topicList")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_CONNECTION_LIST (203) request (Java ``GetConsumerConnectionListRequestHeader``).

    Attributes:
        consumer_group: group (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_CONSUMER_CONNECTION_LIST

    consumer_group: str | None = wire("consumerGroup", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33) request (Java ``ViewMessageRequestHeader``).

    Attributes:
        topic: 5.x topic hint.
        offset: commit-log offset decoded from an offset msg id (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.VIEW_MESSAGE_BY_ID

    topic: str | None = wire("topic")
    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader(TopicRequestHeader):
    """QUERY_MESSAGE (12) request (Java ``QueryMessageRequestHeader``).

    The extra ext key ``_UNIQUE_KEY_QUERY`` (``"true"`` = ``key`` is a UNIQ_KEY) is not a Java
    field; it is modelled as :attr:`unique_key_query`.

    Attributes:
        topic: topic (required).
        key: message key or unique key (required).
        max_num: max messages (required).
        begin_timestamp: ms (required).
        end_timestamp: ms (required).
        unique_key_query: ext key ``_UNIQUE_KEY_QUERY``.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.QUERY_MESSAGE

    topic: str | None = wire("topic", required=True)
    key: str | None = wire("key", required=True)
    max_num: int | None = wire("maxNum", 32, required=True)
    begin_timestamp: int | None = wire("beginTimestamp", 0, required=True)
    end_timestamp: int | None = wire("endTimestamp", required=True)
    unique_key_query: bool | None = wire("_UNIQUE_KEY_QUERY")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    """QUERY_MESSAGE response (Java ``QueryMessageResponseHeader``).

    Attributes:
        index_last_update_timestamp: ms (required).
        index_last_update_phyoffset: commit-log offset (required).
    """

    index_last_update_timestamp: int | None = wire("indexLastUpdateTimestamp", 0, required=True)
    index_last_update_phyoffset: int | None = wire("indexLastUpdatePhyoffset", 0, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_BROKER (215) request (Java ``DeleteTopicRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.DELETE_TOPIC_IN_BROKER

    topic: str | None = wire("topic", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(RpcRequestHeader):
    """DELETE_SUBSCRIPTIONGROUP (207) request (Java ``DeleteSubscriptionGroupRequestHeader``).

    Attributes:
        group_name: group (required).
        clean_offset: 5.x: also delete the group's offsets (Java primitive, always sent).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.DELETE_SUBSCRIPTIONGROUP

    group_name: str | None = wire("groupName", required=True)
    clean_offset: bool | None = wire("cleanOffset", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(TopicRequestHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300) request (Java ``QueryTopicConsumeByWhoRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.QUERY_TOPIC_CONSUME_BY_WHO

    topic: str | None = wire("topic", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicConfigRequestHeader(TopicRequestHeader):
    """GET_TOPIC_CONFIG (351) request (Java 5.x ``GetTopicConfigRequestHeader``).

    Attributes:
        topic: topic (required).
        lo: inherited; ``True`` asks for the static-topic mapping too.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_TOPIC_CONFIG

    topic: str | None = wire("topic", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315) request (Java ``ViewBrokerStatsDataRequestHeader``).

    Attributes:
        stats_name: a ``BrokerStatsManager`` item set, e.g. ``TOPIC_PUT_NUMS`` (required).
        stats_key: the item's key: a topic, ``topic@group``, or the cluster name for the
            ``BROKER_*`` sets (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.VIEW_BROKER_STATS_DATA

    stats_name: str | None = wire("statsName", required=True)
    stats_key: str | None = wire("statsKey", required=True)
