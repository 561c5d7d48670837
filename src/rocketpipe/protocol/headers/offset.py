"""Offset headers: QUERY/UPDATE_CONSUMER_OFFSET (14/15), GET_MAX/MIN_OFFSET (30/31),
SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32) (L1, sans-IO).

Mirrors the Java header classes of the same names (remoting/protocol/header). Offsets are
consume-queue (logical) offsets; timestamps are ms since the epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import CommandHeader, TopicRequestHeader, wire

__all__ = [
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(TopicRequestHeader):
    """QUERY_CONSUMER_OFFSET (14) request (Java ``QueryConsumerOffsetRequestHeader``).

    Attributes:
        consumer_group: group (required).
        topic: topic (required).
        queue_id: queue id (required).
        set_zero_if_not_found: 5.x: False makes the broker answer QUERY_NOT_FOUND instead of 0.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.QUERY_CONSUMER_OFFSET

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    set_zero_if_not_found: bool | None = wire("setZeroIfNotFound")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET response (Java ``QueryConsumerOffsetResponseHeader``).

    Attributes:
        offset: committed offset, "next offset to consume" (required).
    """

    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(TopicRequestHeader):
    """UPDATE_CONSUMER_OFFSET (15) request (Java ``UpdateConsumerOffsetRequestHeader``).

    Attributes:
        consumer_group: group (required).
        topic: topic (required).
        queue_id: queue id (required).
        commit_offset: offset to store, "next offset to consume" (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.UPDATE_CONSUMER_OFFSET

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    commit_offset: int | None = wire("commitOffset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(TopicRequestHeader):
    """GET_MAX_OFFSET (30) request (Java ``GetMaxOffsetRequestHeader``).

    Attributes:
        topic: topic (required).
        queue_id: queue id (required).
        committed: 5.x: only committed entries (Java primitive, default True, always sent).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_MAX_OFFSET

    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    committed: bool | None = wire("committed", True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    """GET_MAX_OFFSET response (Java ``GetMaxOffsetResponseHeader``).

    Attributes:
        offset: next offset to be written (exclusive max) (required).
    """

    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader(TopicRequestHeader):
    """GET_MIN_OFFSET (31) request (Java ``GetMinOffsetRequestHeader``).

    Attributes:
        topic: topic (required).
        queue_id: queue id (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_MIN_OFFSET

    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    """GET_MIN_OFFSET response (Java ``GetMinOffsetResponseHeader``).

    Attributes:
        offset: smallest available offset (required).
    """

    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader(TopicRequestHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29) request (Java ``SearchOffsetRequestHeader``).

    Attributes:
        topic: topic (required).
        queue_id: queue id (required).
        timestamp: store time to look for, ms (required).
        boundary_type: 5.x ``LOWER`` (default) or ``UPPER`` (Java ``BoundaryType`` name).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP

    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    timestamp: int | None = wire("timestamp", required=True)
    boundary_type: str | None = wire("boundaryType")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP response (Java ``SearchOffsetResponseHeader``).

    Attributes:
        offset: the offset found (required).
    """

    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(TopicRequestHeader):
    """GET_EARLIEST_MSG_STORETIME (32) request (Java ``GetEarliestMsgStoretimeRequestHeader``).

    Attributes:
        topic: topic (required).
        queue_id: queue id (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_EARLIEST_MSG_STORETIME

    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME response (Java ``GetEarliestMsgStoretimeResponseHeader``).

    Attributes:
        timestamp: store time of the earliest message, ms (required).
    """

    timestamp: int | None = wire("timestamp", required=True)
