"""Pure conversions of the gRPC endpoint (no I/O): a ``apache.rocketmq.v2.Message`` into
rocketpipe's :class:`~rocketpipe.protocol.message.Message`, results and errors into
``apache.rocketmq.v2.Status``, and Java's hashing for FIFO queue selection.

Mirrors Java 5.3.3's proxy ``SendMessageActivity.buildMessage`` / ``buildMessageProperty`` /
``convertToSendMessageResponse`` and ``ResponseBuilder``.
"""

from __future__ import annotations

import gzip
import hashlib
from typing import Any, Final

from google.protobuf import timestamp_pb2
from rocketmq.grpc_protocol import definition_pb2 as pb

from ..errors import (
    BrokerError,
    InvalidArgumentError,
    NoPermissionError,
    RequestTimeoutError,
    TopicNotExistError,
)
from ..protocol import message as pm
from ..protocol.message import Message, MessageExt
from .auth import CALLER

#: ``MessageConst`` names the proxy sets (not all are in :mod:`rocketpipe.protocol.message`).
PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
PROPERTY_BORN_HOST: Final = "__BORNHOST"
PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_POP_CK: Final = "POP_CK"
PROPERTY_DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
PROPERTY_DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"

#: Java 5.3.3's ``MessageConst.STRING_HASH_SET``: the properties a received message does not show
#: as user properties (``GrpcConverter.buildMessage``). Unlike ``pm.SYSTEM_PROPERTY_NAMES`` it
#: hides the born host / time and the timer's properties, and shows ``__SHARDINGKEY`` and
#: ``__transactionId__``, as Apache's proxy does (tests/interop/test_interop_grpc.py).
STRING_HASH_SET_5_3_3: Final = (
    pm.SYSTEM_PROPERTY_NAMES
    - {"__transactionId__", "CHECK_IMMUNITY_TIME_IN_SECONDS", "TRANSACTION_CHECK_TIMES"}
    - {"INNER_NUM", "INNER_BASE", "INNER_MULTI_DISPATCH"}
) | {
    *("__BORNHOST", "BORN_TIMESTAMP", "__CRC32", "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID"),
    *("TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY"),
    "TIMER_DELAY_LEVEL",
}

#: ProxyConfig ``maxTransactionRecoverySecond`` (5.3.3: one hour): the longest
#: ``orphaned_transaction_recovery_duration`` a transactional message may ask for.
MAX_TRANSACTION_RECOVERY_SECOND: Final = 3600


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
    if isinstance(exc, NoPermissionError):  # a broker's NO_PERMISSION
        # refused for the SDK's own user (its credentials signed the request, see .auth):
        # Java's proxy answers its AuthorizationException UNAUTHORIZED
        code = pb.Code.UNAUTHORIZED if CALLER.get() is not None else pb.Code.FORBIDDEN
        return status(code, str(exc))
    if isinstance(exc, BrokerError):  # SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED … by response code
        code = _REMOTING_TO_GRPC.get(exc.response_code, pb.Code.INTERNAL_SERVER_ERROR)
        return status(code, str(exc))
    if isinstance(exc, InvalidArgumentError):
        return status(pb.Code.BAD_REQUEST, str(exc))
    return status(pb.Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


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


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def _timestamp_ms(ts: Any) -> int:
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def to_remoting_message(
    proto: pb.Message, producer_group: str, peer_host: str, max_body_size: int
) -> tuple[Message, bool]:
    """The remoting message the proxy stores for one gRPC message, and whether it is a
    transactional half message.

    Properties as ``buildMessageProperty``: user properties (not system names, no control
    characters), ``TAGS``, ``KEYS`` (space-joined), ``UNIQ_KEY`` = the SDK's message id,
    ``TRAN_MSG`` for TRANSACTION (and ``CHECK_IMMUNITY_TIME_IN_SECONDS``, whole seconds of its
    ``orphaned_transaction_recovery_duration`` when given), ``TIMER_DELIVER_MS`` from the delivery timestamp,
    ``RECONSUME_TIME`` = delivery attempt, ``PGROUP``, ``__SHARDINGKEY`` = message group,
    ``BORN_HOST`` (the SDK's, else the peer), ``BORN_TIMESTAMP``. A GZIP body is inflated (the
    remoting compressed flag means zlib).

    Raises:
        GrpcError: MESSAGE_BODY_TOO_LARGE, ILLEGAL_MESSAGE_PROPERTY_KEY, ILLEGAL_MESSAGE_KEY,
            ILLEGAL_MESSAGE_ID, ILLEGAL_MESSAGE_GROUP, BAD_REQUEST (bad GZIP body, or a recovery
            duration above ``MAX_TRANSACTION_RECOVERY_SECOND``).
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
            recovery_s = int(sp.orphaned_transaction_recovery_duration.seconds)
            if recovery_s > MAX_TRANSACTION_RECOVERY_SECOND:  # validateTransactionRecoverySecond
                raise GrpcError(
                    pb.Code.BAD_REQUEST,
                    f"the max transaction recovery time of message is too large, max is {MAX_TRANSACTION_RECOVERY_SECOND}",
                )
            props[PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(recovery_s)
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


_DELAY_PROPERTIES: Final = (pm.PROPERTY_DELAY_TIME_LEVEL, pm.PROPERTY_TIMER_DELIVER_MS, pm.PROPERTY_TIMER_DELAY_SEC)


def message_type_of(props: dict[str, str]) -> int:
    """``GrpcConverter.buildSystemProperties``' message type: TRANSACTION (``TRAN_MSG``), DELAY
    (``DELAY`` / ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC``), FIFO (``__SHARDINGKEY``), else NORMAL."""
    if props.get(pm.PROPERTY_TRANSACTION_PREPARED) == "true":
        return int(pb.MessageType.TRANSACTION)
    if any(k in props for k in _DELAY_PROPERTIES):
        return int(pb.MessageType.DELAY)
    if PROPERTY_SHARDING_KEY in props:
        return int(pb.MessageType.FIFO)
    return int(pb.MessageType.NORMAL)


def to_grpc_message(msg: MessageExt, now_ms: int) -> pb.Message:
    """A stored message as the SDKs receive it (``GrpcConverter.buildMessage``).

    User properties are those not in :data:`STRING_HASH_SET_5_3_3`; the body is sent inflated
    (IDENTITY) with its MD5 (upper-case hex, as Java's ``BinaryUtil.generateMd5``); ``message_id``
    is ``UNIQ_KEY`` (the offset msg id when absent); ``receipt_handle`` the ``POP_CK`` property;
    ``delivery_attempt`` = reconsume times + 1; ``now_ms`` (ms) turns ``TIMER_DELAY_SEC`` into a
    delivery time.
    """
    props = msg.properties
    sp = pb.SystemProperties()
    tags = props.get(pm.PROPERTY_TAGS)
    if tags is not None:
        sp.tag = tags
    keys = props.get(pm.PROPERTY_KEYS)
    if keys is not None:
        sp.keys.extend(keys.split(" "))
    sp.message_id = props.get(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.offset_msg_id
    sp.body_digest.type = pb.DigestType.MD5
    sp.body_digest.checksum = hashlib.md5(msg.body).hexdigest().upper()
    sp.body_encoding = pb.Encoding.IDENTITY
    sp.message_type = message_type_of(props)
    sp.born_timestamp.CopyFrom(_timestamp(msg.born_timestamp))
    born_host = props.get(PROPERTY_BORN_HOST) or msg.born_host
    if born_host:
        sp.born_host = born_host
    sp.store_timestamp.CopyFrom(_timestamp(msg.store_timestamp))
    if msg.store_host:
        sp.store_host = msg.store_host
    delay_sec = props.get(pm.PROPERTY_TIMER_DELAY_SEC)
    deliver_ms = props.get(pm.PROPERTY_TIMER_DELIVER_MS)
    if delay_sec is not None and delay_sec.isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(now_ms + int(delay_sec) * 1000))
    elif deliver_ms is not None and deliver_ms.lstrip("-").isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(int(deliver_ms)))
    group = props.get(PROPERTY_SHARDING_KEY)
    if group is not None:
        sp.message_group = group
    handle = props.get(PROPERTY_POP_CK)
    if handle is not None:
        sp.receipt_handle = handle
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    sp.delivery_attempt = msg.reconsume_times + 1
    trace = props.get(PROPERTY_TRACE_CONTEXT)
    if trace is not None:
        sp.trace_context = trace
    dlq_topic, dlq_id = props.get(PROPERTY_DLQ_ORIGIN_TOPIC), props.get(PROPERTY_DLQ_ORIGIN_MESSAGE_ID)
    if dlq_topic is not None and dlq_id is not None:
        sp.dead_letter_queue.topic = dlq_topic
        sp.dead_letter_queue.message_id = dlq_id
    user = {k: v for k, v in props.items() if k not in STRING_HASH_SET_5_3_3}
    return pb.Message(topic=pb.Resource(name=msg.topic), user_properties=user, system_properties=sp, body=msg.body)
