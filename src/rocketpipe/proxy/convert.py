"""Pure conversions of the gRPC endpoint (no I/O): a ``apache.rocketmq.v2.Message`` into
rocketpipe's :class:`~rocketpipe.protocol.message.Message`, results and errors into
``apache.rocketmq.v2.Status``, and Java's hashing for FIFO queue selection.

Mirrors Java 5.3.3's proxy ``SendMessageActivity.buildMessage`` / ``buildMessageProperty`` /
``convertToSendMessageResponse`` and ``ResponseBuilder``.
"""

from __future__ import annotations

import gzip
from typing import Any, Final

from rocketmq.grpc_protocol import definition_pb2 as pb

from ..errors import (
    BrokerError,
    InvalidArgumentError,
    NoPermissionError,
    RequestTimeoutError,
    TopicNotExistError,
)
from ..protocol import message as pm
from ..protocol.message import Message

#: ``MessageConst`` names the proxy sets (not all are in :mod:`rocketpipe.protocol.message`).
PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
PROPERTY_BORN_HOST: Final = "__BORNHOST"
PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"


class GrpcError(Exception):
    """A request the endpoint refuses: carries the ``apache.rocketmq.v2.Code`` and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: int, message: str | None = None) -> pb.Status:
    """``ResponseBuilder.buildStatus(code, message)``; the message defaults to the code's name."""
    return pb.Status(code=code, message=message if message is not None else pb.Code.Name(code))


OK: Final = pb.Code.OK

#: ``ResponseBuilder.RESPONSE_CODE_MAPPING``: remoting response code → gRPC code.
_REMOTING_TO_GRPC: Final[dict[int, int]] = {
    0: pb.Code.OK,
    2: pb.Code.TOO_MANY_REQUESTS,
    3: pb.Code.NOT_IMPLEMENTED,
    26: pb.Code.CONSUMER_GROUP_NOT_FOUND,
}


def error_status(exc: BaseException) -> pb.Status:
    """``ResponseBuilder.buildStatus(Throwable)``: the status a failed call answers."""
    if isinstance(exc, GrpcError):
        return status(exc.code, exc.message)
    if isinstance(exc, TopicNotExistError):
        return status(pb.Code.TOPIC_NOT_FOUND, str(exc))
    if isinstance(exc, RequestTimeoutError):
        return status(pb.Code.PROXY_TIMEOUT, str(exc))
    if isinstance(exc, NoPermissionError):
        return status(pb.Code.FORBIDDEN, str(exc))
    if isinstance(exc, BrokerError):  # SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED … by response code
        code = _REMOTING_TO_GRPC.get(exc.response_code, pb.Code.INTERNAL_SERVER_ERROR)
        return status(code, str(exc))
    if isinstance(exc, InvalidArgumentError):
        return status(pb.Code.BAD_REQUEST, str(exc))
    return status(pb.Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


def java_string_hash(s: str) -> int:
    """``String.hashCode()`` (UTF-16 code units, 32-bit signed)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)``: a bucket in ``[0, buckets)``.

    Raises:
        InvalidArgumentError: ``buckets`` < 1.
    """
    if buckets < 1:
        raise InvalidArgumentError(f"buckets must be positive, got {buckets}")
    state = value & 0xFFFFFFFFFFFFFFFF
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        top = state >> 33
        top = top - (1 << 31) if top & 0x80000000 else top  # (int) cast of the unsigned shift
        nxt = int((candidate + 1) / ((top + 1) / 2147483648.0))
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def _has_control_character(s: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in s)


def _timestamp_ms(ts: Any) -> int:
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def to_remoting_message(
    proto: pb.Message, producer_group: str, peer_host: str, max_body_size: int
) -> tuple[Message, bool]:
    """The remoting message the proxy stores for one gRPC message, and whether it is a
    transactional half message.

    Properties as ``buildMessageProperty``: user properties (not system names, no control
    characters), ``TAGS``, ``KEYS`` (space-joined), ``UNIQ_KEY`` = the SDK's message id,
    ``TRAN_MSG`` for TRANSACTION, ``TIMER_DELIVER_MS`` from the delivery timestamp,
    ``RECONSUME_TIME`` = delivery attempt, ``PGROUP``, ``__SHARDINGKEY`` = message group,
    ``BORN_HOST`` (the SDK's, else the peer), ``BORN_TIMESTAMP``. A GZIP body is inflated (the
    remoting compressed flag means zlib).

    Raises:
        GrpcError: MESSAGE_BODY_TOO_LARGE, ILLEGAL_MESSAGE_PROPERTY_KEY, ILLEGAL_MESSAGE_KEY,
            ILLEGAL_MESSAGE_ID, ILLEGAL_MESSAGE_GROUP, BAD_REQUEST (bad GZIP body).
    """
    sp = proto.system_properties
    body = bytes(proto.body)
    if sp.body_encoding == pb.Encoding.GZIP:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as exc:
            raise GrpcError(pb.Code.BAD_REQUEST, f"message body is not valid GZIP: {exc}") from None
    if max_body_size > 0 and len(body) > max_body_size:
        raise GrpcError(pb.Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_body_size}")
    props: dict[str, str] = {}
    for key, value in proto.user_properties.items():
        if key in pm.SYSTEM_PROPERTY_NAMES:
            raise GrpcError(pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if _has_control_character(key) or _has_control_character(value):
            raise GrpcError(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key or value of property cannot contain control character"
            )
        props[key] = value
    if sp.tag:
        props[pm.PROPERTY_TAGS] = sp.tag
    keys = list(sp.keys)
    for key in keys:
        if key and not key.strip():
            raise GrpcError(pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
        if _has_control_character(key):
            raise GrpcError(pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
    if keys:
        props[pm.PROPERTY_KEYS] = " ".join(keys)
    if not sp.message_id.strip():
        raise GrpcError(pb.Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    half = sp.message_type == pb.MessageType.TRANSACTION
    if half:
        props[pm.PROPERTY_TRANSACTION_PREPARED] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            props[PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(int(sp.orphaned_transaction_recovery_duration.seconds))
    if sp.HasField("delivery_timestamp"):
        props[pm.PROPERTY_TIMER_DELIVER_MS] = str(_timestamp_ms(sp.delivery_timestamp))
    props[pm.PROPERTY_RECONSUME_TIME] = str(int(sp.delivery_attempt))
    props[pm.PROPERTY_PRODUCER_GROUP] = producer_group
    if sp.message_group:
        group = sp.message_group
        if not group.strip() or _has_control_character(group):
            raise GrpcError(pb.Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be blank or contain control character")
        props[PROPERTY_SHARDING_KEY] = group
    if sp.trace_context:
        props[PROPERTY_TRACE_CONTEXT] = sp.trace_context
    born_host = sp.born_host.strip() or peer_host
    if born_host:
        props[PROPERTY_BORN_HOST] = born_host
    if sp.HasField("born_timestamp"):
        props[PROPERTY_BORN_TIMESTAMP] = str(_timestamp_ms(sp.born_timestamp))
    msg = Message(topic=proto.topic.name, body=body, properties=props)
    return msg, half
