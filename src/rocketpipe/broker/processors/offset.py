"""Consumer offsets and queue metadata: codes 14, 15, 29, 30, 31, 32.

Mirrors ``ConsumerManageProcessor`` (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET) and the
offset handlers of ``AdminBrokerProcessor`` (GET_MAX_OFFSET, GET_MIN_OFFSET,
SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME).
"""

from __future__ import annotations

from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from ...transport import Connection, Router
from ..context import BrokerContext
from .common import decode_header, error, require


class OffsetProcessor:
    """Handlers of consumer-offset and queue-offset requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset)
        router.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset)
        router.register(RequestCode.GET_MAX_OFFSET, self.get_max_offset)
        router.register(RequestCode.GET_MIN_OFFSET, self.get_min_offset)
        router.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset)
        router.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.get_earliest_msg_storetime)

    async def query_consumer_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Committed offset, 0 for a new group on a never-trimmed non-empty queue, else QUERY_NOT_FOUND."""
        b = self.broker
        h = decode_header(QueryConsumerOffsetRequestHeader, cmd)
        for name in ("consumer_group", "topic", "queue_id"):
            require(getattr(h, name), name)
        offset = b.offsets.query(h.consumer_group, h.topic, h.queue_id)  # type: ignore[arg-type]
        if offset >= 0:
            return cmd.response(
                ResponseCode.SUCCESS, None, QueryConsumerOffsetResponseHeader(offset=offset).to_ext_fields()
            )
        if h.set_zero_if_not_found is False:
            return error(
                cmd, ResponseCode.QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first"
            )
        min_offset = b.store.get_min_offset(h.topic, h.queue_id)  # type: ignore[arg-type]
        max_offset = b.store.get_max_offset(h.topic, h.queue_id)  # type: ignore[arg-type]
        # Java: min <= 0 and message 0 still in memory. Everything of this store counts as hot.
        if min_offset <= 0 and max_offset > 0:
            return cmd.response(ResponseCode.SUCCESS, None, QueryConsumerOffsetResponseHeader(offset=0).to_ext_fields())
        return error(
            cmd, ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    async def update_consumer_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Store a committed offset (usually sent oneway)."""
        b = self.broker
        h = decode_header(UpdateConsumerOffsetRequestHeader, cmd)
        for name in ("consumer_group", "topic"):
            require(getattr(h, name), name)
        if h.queue_id is None or h.commit_offset is None:
            return error(cmd, ResponseCode.INVALID_PARAMETER, "queueId or commitOffset is null")
        if b.groups_config.find(h.consumer_group) is None:  # type: ignore[arg-type]
            return error(
                cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.consumer_group}"
            )
        if b.topics.get(h.topic) is None:  # type: ignore[arg-type]
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        b.offsets.commit_from_client(h.consumer_group, h.topic, h.queue_id, h.commit_offset)  # type: ignore[arg-type]
        return cmd.response(ResponseCode.SUCCESS)

    async def get_max_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Exclusive max offset of a queue (0 for an unknown queue)."""
        h = decode_header(GetMaxOffsetRequestHeader, cmd)
        require(h.topic, "topic")
        require(h.queue_id, "queueId")
        offset = self.broker.store.get_max_offset(h.topic, h.queue_id)  # type: ignore[arg-type]
        return cmd.response(ResponseCode.SUCCESS, None, GetMaxOffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_min_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Smallest available offset of a queue."""
        h = decode_header(GetMinOffsetRequestHeader, cmd)
        require(h.topic, "topic")
        require(h.queue_id, "queueId")
        offset = self.broker.store.get_min_offset(h.topic, h.queue_id)  # type: ignore[arg-type]
        return cmd.response(ResponseCode.SUCCESS, None, GetMinOffsetResponseHeader(offset=offset).to_ext_fields())

    async def search_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """First offset whose store time is >= timestamp (LOWER boundary)."""
        h = decode_header(SearchOffsetRequestHeader, cmd)
        for name in ("topic", "queue_id", "timestamp"):
            require(getattr(h, name), name)
        offset = self.broker.store.get_offset_by_timestamp(h.topic, h.queue_id, h.timestamp)  # type: ignore[arg-type]
        return cmd.response(ResponseCode.SUCCESS, None, SearchOffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_earliest_msg_storetime(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Store time (ms) of the earliest message of a queue."""
        h = decode_header(GetEarliestMsgStoretimeRequestHeader, cmd)
        require(h.topic, "topic")
        require(h.queue_id, "queueId")
        ts = self.broker.store.get_earliest_message_time(h.topic, h.queue_id)  # type: ignore[arg-type]
        return cmd.response(
            ResponseCode.SUCCESS, None, GetEarliestMsgStoretimeResponseHeader(timestamp=ts).to_ext_fields()
        )
