"""Pull headers: PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361) (L1, sans-IO).

Mirrors ``PullMessageRequestHeader`` and ``PullMessageResponseHeader`` (remoting/protocol/header).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import REQUEST_HEADERS, CommandHeader, TopicRequestHeader, wire

__all__ = ["PullMessageRequestHeader", "PullMessageResponseHeader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(TopicRequestHeader):
    """Pull request header (Java ``PullMessageRequestHeader``), codes 11 and 361.

    Attributes:
        consumer_group: consumer group (required).
        topic: topic (required).
        queue_id: queue id (required).
        queue_offset: first logical offset wanted (required).
        max_msg_nums: max messages to return (required).
        sys_flag: PullSysFlag bits (commit 0x1, suspend 0x2, subscription 0x4, lite 0x10) (required).
        commit_offset: offset to commit, used with the commit bit (required).
        suspend_timeout_millis: longest broker hold for long polling, ms (required).
        subscription: filter expression (with the subscription bit).
        sub_version: subscription version, ms timestamp (required).
        expression_type: ``TAG`` or ``SQL92``.
        max_msg_bytes: 5.x byte cap on the returned records.
        request_source: 5.x proxy marker (-1/None = SDK).
        proxy_froward_client_id: 5.x proxy client id (Java spelling).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.PULL_MESSAGE

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    queue_offset: int | None = wire("queueOffset", required=True)
    max_msg_nums: int | None = wire("maxMsgNums", required=True)
    sys_flag: int | None = wire("sysFlag", 0, required=True)
    commit_offset: int | None = wire("commitOffset", 0, required=True)
    suspend_timeout_millis: int | None = wire("suspendTimeoutMillis", 0, required=True)
    subscription: str | None = wire("subscription")
    sub_version: int | None = wire("subVersion", 0, required=True)
    expression_type: str | None = wire("expressionType")
    max_msg_bytes: int | None = wire("maxMsgBytes")
    request_source: int | None = wire("requestSource")
    proxy_froward_client_id: str | None = wire("proxyFrowardClientId")


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    """Pull response header (Java ``PullMessageResponseHeader``).

    Attributes:
        suggest_which_broker_id: broker id for the next pull of this queue (required).
        next_begin_offset: offset to request next (required).
        min_offset: queue min offset (required).
        max_offset: queue max offset, exclusive (required).
        offset_delta: 5.x static topics: add to each message's queue offset.
        topic_sys_flag: 5.x topic sys flag.
        group_sys_flag: 5.x group sys flag.
        forbidden_type: 5.x reason of a NO_PERMISSION answer.
    """

    suggest_which_broker_id: int | None = wire("suggestWhichBrokerId", 0, required=True)
    next_begin_offset: int | None = wire("nextBeginOffset", required=True)
    min_offset: int | None = wire("minOffset", required=True)
    max_offset: int | None = wire("maxOffset", required=True)
    offset_delta: int | None = wire("offsetDelta")
    topic_sys_flag: int | None = wire("topicSysFlag")
    group_sys_flag: int | None = wire("groupSysFlag")
    forbidden_type: int | None = wire("forbiddenType")


REQUEST_HEADERS[int(RequestCode.LITE_PULL_MESSAGE)] = PullMessageRequestHeader
