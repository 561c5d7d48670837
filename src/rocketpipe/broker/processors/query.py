"""Message lookup by key: QUERY_MESSAGE (12).

Mirrors ``QueryMessageProcessor.queryMessage``: the ext key ``_UNIQUE_KEY_QUERY == "true"``
replaces ``maxNum`` with the store's ``default_query_max_num`` (32); the store caps it at
``max_msgs_num_batch`` (64). SUCCESS carries the matching stored records concatenated in
commit-log order; QUERY_NOT_FOUND (remark "can not find message, maybe time range not correct")
when nothing matches. Both carry ``indexLastUpdateTimestamp``/``indexLastUpdatePhyoffset``.
Unlike Java, a unique-key query only returns records whose UNIQ_KEY is the key (Java returns
every hash-slot hit and lets the client filter). VIEW_MESSAGE_BY_ID (33) stays in
:mod:`.admin`.
"""

from __future__ import annotations

from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.admin import QueryMessageRequestHeader, QueryMessageResponseHeader
from ...transport import Connection, Router
from ..context import BrokerContext
from .common import decode_header, require

NOT_FOUND_REMARK = "can not find message, maybe time range not correct"


class QueryProcessor:
    """Handler of QUERY_MESSAGE."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handler on ``router``."""
        router.register(RequestCode.QUERY_MESSAGE, self.query_message)

    async def query_message(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Records indexed under ``topic#key`` within the time range."""
        h = decode_header(QueryMessageRequestHeader, cmd)
        require(h.topic, "topic")
        require(h.key, "key")
        require(h.max_num, "maxNum")
        require(h.begin_timestamp, "beginTimestamp")
        require(h.end_timestamp, "endTimestamp")
        store = self.broker.store
        unique = (cmd.ext_fields or {}).get("_UNIQUE_KEY_QUERY") == "true"
        max_num = store.config.default_query_max_num if unique else h.max_num
        result = store.query_message(
            h.topic,  # type: ignore[arg-type]
            h.key,  # type: ignore[arg-type]
            max_num,  # type: ignore[arg-type]
            h.begin_timestamp,  # type: ignore[arg-type]
            h.end_timestamp,  # type: ignore[arg-type]
            unique=unique,
        )
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext_fields()
        if not result.buffers:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK, ext)
        return cmd.response(ResponseCode.SUCCESS, None, ext, b"".join(result.buffers))
