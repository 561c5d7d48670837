"""POP consumption headers (5.x, L1, sans-IO): POP_MESSAGE (200050), ACK_MESSAGE (200051),
CHANGE_MESSAGE_INVISIBLETIME (200053) and the BATCH_ACK_MESSAGE (200151) body, plus the
receipt-handle ("extraInfo") and offset-info strings of ``ExtraInfoUtil`` and the pop retry topic
names of ``KeyBuilder``.

All POP codes are above 32767, so their headers only travel in the JSON header form; the classes
here use the ordinary :class:`~.base.CommandHeader` codec.

Wire formats (remoting-protocol.md §3.16):

* extraInfo / ``POP_CK``: ``ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId
  [msgQueueOffset]`` (single spaces); ``retry`` is ``0`` (normal topic), ``1`` (pop retry topic
  v1, ``%RETRY%<group>_<topic>``) or ``2`` (v2, ``%RETRY%<group>+<topic>``);
* ``startOffsetInfo``: ``;``-separated ``<retry> <queueId> <startOffset>``;
* ``msgOffsetInfo``: ``;``-separated ``<retry> <queueId> <off1>,<off2>,…``;
* ``orderCountInfo``: ``;``-separated ``<retry> <queueId> <count>`` or ``<retry> qo<qid>%<off> <count>``.

The parse functions return maps keyed ``"<retry>@<queueId>"`` as Java's do.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import orjson

from ...errors import InvalidArgumentError, ProtocolError
from ..codes import RequestCode
from ..names import RETRY_GROUP_TOPIC_PREFIX
from .base import CommandHeader, TopicRequestHeader, wire

__all__ = [
    "NORMAL_TOPIC",
    "POP_ORDER_REVIVE_QUEUE",
    "RETRY_TOPIC_V1",
    "RETRY_TOPIC_V2",
    "AckMessageRequestHeader",
    "BatchAck",
    "BatchAckMessageRequestBody",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "ConsumeInitMode",
    "ExtraInfo",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "build_msg_offset_info",
    "build_order_count_info",
    "build_start_offset_info",
    "is_pop_retry_topic_v2",
    "parse_msg_offset_info",
    "parse_order_count_info",
    "parse_start_offset_info",
    "pop_retry_topic",
    "pop_retry_topic_v1",
    "pop_retry_topic_v2",
    "real_topic",
    "retry_flag",
]

#: ``retry`` field values (``ExtraInfoUtil.NORMAL_TOPIC`` / ``RETRY_TOPIC`` / ``RETRY_TOPIC_V2``).
NORMAL_TOPIC: Final = "0"
RETRY_TOPIC_V1: Final = "1"
RETRY_TOPIC_V2: Final = "2"
#: ``KeyBuilder.POP_ORDER_REVIVE_QUEUE``: the revive queue id that marks an orderly pop.
POP_ORDER_REVIVE_QUEUE: Final = 999

_RETRY_PREFIX: Final = RETRY_GROUP_TOPIC_PREFIX


class ConsumeInitMode:
    """Where a pop starts when the group has no offset (``ConsumeInitMode``)."""

    MIN: Final = 0
    MAX: Final = 1


# ---------------------------------------------------------------------------------- KeyBuilder


def pop_retry_topic_v1(topic: str, group: str) -> str:
    """``%RETRY%<group>_<topic>`` (``KeyBuilder.buildPopRetryTopicV1``)."""
    return f"{_RETRY_PREFIX}{group}_{topic}"


def pop_retry_topic_v2(topic: str, group: str) -> str:
    """``%RETRY%<group>+<topic>`` (``KeyBuilder.buildPopRetryTopicV2``)."""
    return f"{_RETRY_PREFIX}{group}+{topic}"


def pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """The pop retry topic the broker revives into (v1 unless ``enableRetryTopicV2``)."""
    return pop_retry_topic_v2(topic, group) if v2 else pop_retry_topic_v1(topic, group)


def is_pop_retry_topic_v2(topic: str) -> bool:
    """``KeyBuilder.isPopRetryTopicV2``: a ``%RETRY%`` topic containing ``+``."""
    return topic.startswith(_RETRY_PREFIX) and "+" in topic


def retry_flag(topic: str) -> str:
    """The ``retry`` field for messages read from ``topic`` (``ExtraInfoUtil.getRetry``)."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(_RETRY_PREFIX):
        return RETRY_TOPIC_V1
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, retry: str) -> str:
    """The topic a handle's message lives in (``ExtraInfoUtil.getRealTopic``).

    Args:
        topic: the subscribed (original) topic.
        group: consumer group.
        retry: the handle's retry field.

    Raises:
        InvalidArgumentError: ``retry`` is not 0, 1 or 2.
    """
    if retry == NORMAL_TOPIC:
        return topic
    if retry == RETRY_TOPIC_V1:
        return pop_retry_topic_v1(topic, group)
    if retry == RETRY_TOPIC_V2:
        return pop_retry_topic_v2(topic, group)
    raise InvalidArgumentError(f"bad retry flag {retry!r} in a receipt handle")


# ---------------------------------------------------------------------------------- extraInfo


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """A POP receipt handle (the ``POP_CK`` property / ``extraInfo`` header).

    Attributes:
        ck_queue_offset: start offset of the checkpoint the message belongs to.
        pop_time: broker time of the pop, ms.
        invisible_time: invisibility granted at ``pop_time``, ms (deadline = sum of both).
        revive_qid: revive queue id (999 = orderly pop).
        retry: ``"0"``, ``"1"`` or ``"2"`` (see :func:`retry_flag`).
        broker_name: the broker that popped the message.
        queue_id: queue id in the (real) topic.
        queue_offset: the message's queue offset (None in the legacy 7-field form).
    """

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    def build(self) -> str:
        """The wire string (8 fields, or 7 when ``queue_offset`` is None)."""
        head = f"{self.ck_queue_offset} {self.pop_time} {self.invisible_time} {self.revive_qid} {self.retry} {self.broker_name} {self.queue_id}"
        return head if self.queue_offset is None else f"{head} {self.queue_offset}"

    def __str__(self) -> str:
        return self.build()

    @property
    def deadline_ms(self) -> int:
        """``pop_time + invisible_time``: when the message becomes visible again."""
        return self.pop_time + self.invisible_time

    @property
    def is_order(self) -> bool:
        """True for a handle of an orderly pop (``ExtraInfoUtil.isOrder``)."""
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        """The topic to name in ACK / CHANGE_INVISIBLE requests (see :func:`real_topic`)."""
        return real_topic(topic, group, self.retry)

    @classmethod
    def of(
        cls,
        ck_queue_offset: int,
        pop_time: int,
        invisible_time: int,
        revive_qid: int,
        topic: str,
        broker_name: str,
        queue_id: int,
        queue_offset: int | None = None,
    ) -> ExtraInfo:
        """Build from the topic the message was read from (``ExtraInfoUtil.buildExtraInfo``)."""
        return cls(
            ck_queue_offset,
            pop_time,
            invisible_time,
            revive_qid,
            retry_flag(topic),
            broker_name,
            queue_id,
            queue_offset,
        )

    @classmethod
    def parse(cls, text: str | None) -> ExtraInfo:
        """Parse a handle (7 or more space-separated fields).

        Raises:
            InvalidArgumentError: missing fields or non-numeric numbers (a broker answers
                MESSAGE_ILLEGAL).
        """
        if not text:
            raise InvalidArgumentError("empty receipt handle")
        parts = text.split(" ")
        if len(parts) < 7:
            raise InvalidArgumentError(f"receipt handle has {len(parts)} fields, 7 or 8 expected: {text!r}")
        try:
            return cls(
                int(parts[0]),
                int(parts[1]),
                int(parts[2]),
                int(parts[3]),
                parts[4],
                parts[5],
                int(parts[6]),
                int(parts[7]) if len(parts) > 7 else None,
            )
        except ValueError:
            raise InvalidArgumentError(f"receipt handle has a non-numeric field: {text!r}") from None


# ---------------------------------------------------------------------------------- offset infos


def _append(buf: str, entry: str) -> str:
    return f"{buf};{entry}" if buf else entry


def build_start_offset_info(buf: str, topic: str, queue_id: int, start_offset: int) -> str:
    """Append ``<retry> <queueId> <startOffset>`` to ``buf`` (``buildStartOffsetInfo``)."""
    return _append(buf, f"{retry_flag(topic)} {queue_id} {start_offset}")


def build_msg_offset_info(buf: str, topic: str, queue_id: int, offsets: list[int]) -> str:
    """Append ``<retry> <queueId> <o1>,<o2>,…`` to ``buf`` (``buildMsgOffsetInfo``)."""
    return _append(buf, f"{retry_flag(topic)} {queue_id} {','.join(map(str, offsets))}")


def build_order_count_info(buf: str, topic: str, queue_id: int, count: int, queue_offset: int | None = None) -> str:
    """Append ``<retry> <queueId> <count>`` (or ``<retry> qo<qid>%<off> <count>`` per message)."""
    key = str(queue_id) if queue_offset is None else f"qo{queue_id}%{queue_offset}"
    return _append(buf, f"{retry_flag(topic)} {key} {count}")


def _split_info(text: str | None, what: str) -> list[tuple[str, str]]:
    if not text:
        return []
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for one in text.split(";"):
        parts = one.split(" ")
        if len(parts) != 3:
            raise ProtocolError(f"bad {what} entry {one!r}")
        key = f"{parts[0]}@{parts[1]}"
        if key in seen:
            raise ProtocolError(f"duplicate {what} entry {key!r}")
        seen.add(key)
        out.append((key, parts[2]))
    return out


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    """``"<retry>@<queueId>" -> startOffset`` (``parseStartOffsetInfo``); {} for None/empty.

    Raises:
        ProtocolError: malformed or duplicate entries.
    """
    try:
        return {k: int(v) for k, v in _split_info(text, "startOffsetInfo")}
    except ValueError as exc:
        raise ProtocolError(f"bad startOffsetInfo {text!r}: {exc}") from None


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    """``"<retry>@<queueId>" -> [offsets]`` (``parseMsgOffsetInfo``); {} for None/empty.

    Raises:
        ProtocolError: malformed or duplicate entries.
    """
    try:
        return {k: [int(x) for x in v.split(",")] for k, v in _split_info(text, "msgOffsetInfo")}
    except ValueError as exc:
        raise ProtocolError(f"bad msgOffsetInfo {text!r}: {exc}") from None


def parse_order_count_info(text: str | None) -> dict[str, int]:
    """``"<retry>@<queueId>"`` or ``"<retry>@qo<qid>%<off>"`` -> count; {} for None/empty.

    Raises:
        ProtocolError: malformed or duplicate entries.
    """
    try:
        return {k: int(v) for k, v in _split_info(text, "orderCountInfo")}
    except ValueError as exc:
        raise ProtocolError(f"bad orderCountInfo {text!r}: {exc}") from None


# ---------------------------------------------------------------------------------- headers


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageRequestHeader(TopicRequestHeader):
    """POP_MESSAGE (200050) request (Java ``PopMessageRequestHeader``).

    Attributes:
        consumer_group: group (required).
        topic: topic (required).
        queue_id: queue id, -1 = any queue (required).
        max_msg_nums: at most 32 (required).
        invisible_time: ms a popped message stays invisible (required).
        poll_time: long-poll time, ms (required).
        born_time: client clock at send, ms (required).
        init_mode: :class:`ConsumeInitMode` (required).
        exp_type: ``TAG`` / ``SQL92``.
        exp: filter expression.
        order: orderly pop.
        attempt_id: idempotency id of retried requests.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.POP_MESSAGE

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", -1, required=True)
    max_msg_nums: int | None = wire("maxMsgNums", required=True)
    invisible_time: int | None = wire("invisibleTime", required=True)
    poll_time: int | None = wire("pollTime", 0, required=True)
    born_time: int | None = wire("bornTime", 0, required=True)
    init_mode: int | None = wire("initMode", 0, required=True)
    exp_type: str | None = wire("expType")
    exp: str | None = wire("exp")
    order: bool | None = wire("order", False)
    attempt_id: str | None = wire("attemptId")


@dataclass(frozen=True, slots=True, kw_only=True)
class PopMessageResponseHeader(CommandHeader):
    """POP_MESSAGE response (Java ``PopMessageResponseHeader``).

    Attributes:
        pop_time: broker time of the pop, ms (required).
        invisible_time: ms granted (required).
        revive_qid: revive queue id (required).
        rest_num: messages left in the queues looked at (required).
        start_offset_info, msg_offset_info, order_count_info: see the module doc.
    """

    pop_time: int | None = wire("popTime", 0, required=True)
    invisible_time: int | None = wire("invisibleTime", 0, required=True)
    revive_qid: int | None = wire("reviveQid", 0, required=True)
    rest_num: int | None = wire("restNum", 0, required=True)
    start_offset_info: str | None = wire("startOffsetInfo")
    msg_offset_info: str | None = wire("msgOffsetInfo")
    order_count_info: str | None = wire("orderCountInfo")


@dataclass(frozen=True, slots=True, kw_only=True)
class AckMessageRequestHeader(TopicRequestHeader):
    """ACK_MESSAGE (200051) request (Java ``AckMessageRequestHeader``).

    Attributes:
        consumer_group: group (required).
        topic: the real topic (the pop retry topic for retried messages) (required).
        queue_id: queue id in that topic (required).
        extra_info: the receipt handle (required).
        offset: the message's queue offset (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.ACK_MESSAGE

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    extra_info: str | None = wire("extraInfo", required=True)
    offset: int | None = wire("offset", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeRequestHeader(TopicRequestHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053) request (Java ``ChangeInvisibleTimeRequestHeader``).

    Attributes: as :class:`AckMessageRequestHeader` plus ``invisible_time`` (ms from now).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.CHANGE_MESSAGE_INVISIBLETIME

    consumer_group: str | None = wire("consumerGroup", required=True)
    topic: str | None = wire("topic", required=True)
    queue_id: int | None = wire("queueId", required=True)
    extra_info: str | None = wire("extraInfo", required=True)
    offset: int | None = wire("offset", required=True)
    invisible_time: int | None = wire("invisibleTime", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME response: the new handle's ``popTime``/``invisibleTime``/``reviveQid``."""

    pop_time: int | None = wire("popTime", 0, required=True)
    invisible_time: int | None = wire("invisibleTime", 0, required=True)
    revive_qid: int | None = wire("reviveQid", 0, required=True)


# ---------------------------------------------------------------------------------- batch ack body


def _bitset_to_bytes(bits: frozenset[int]) -> bytes:
    """``java.util.BitSet.toByteArray``: little-endian, trailing zero bytes dropped."""
    if not bits:
        return b""
    out = bytearray(max(bits) // 8 + 1)
    for i in bits:
        out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def _bitset_from_bytes(data: bytes) -> frozenset[int]:
    return frozenset(i * 8 + b for i, byte in enumerate(data) for b in range(8) if byte >> b & 1)


def _field(d: dict[str, Any], short: str, long: str, default: Any = None) -> Any:
    if short in d:
        return d[short]
    return d.get(long, default)


@dataclass(frozen=True, slots=True)
class BatchAck:
    """One element of a batch ack (Java ``BatchAck``; fastjson short names ``c t r so q rq pt it b``).

    Attributes:
        consumer_group, topic: group and the *original* topic.
        retry: the handles' retry flag.
        start_offset: the checkpoint start offset.
        queue_id, revive_queue_id, pop_time, invisible_time: from the handles.
        bits: acked offsets as ``offset - start_offset`` (a ``java.util.BitSet``, base64 of its
            ``toByteArray`` on the wire).
    """

    consumer_group: str
    topic: str
    retry: str
    start_offset: int
    queue_id: int
    revive_queue_id: int
    pop_time: int
    invisible_time: int
    bits: frozenset[int] = field(default_factory=frozenset)

    @property
    def offsets(self) -> list[int]:
        """The acked queue offsets, ascending."""
        return [self.start_offset + i for i in sorted(self.bits)]

    def to_obj(self) -> dict[str, Any]:
        """The fastjson form."""
        return {
            "b": base64.b64encode(_bitset_to_bytes(self.bits)).decode(),
            "c": self.consumer_group,
            "it": self.invisible_time,
            "pt": self.pop_time,
            "q": self.queue_id,
            "r": self.retry,
            "rq": self.revive_queue_id,
            "so": self.start_offset,
            "t": self.topic,
        }

    @classmethod
    def from_obj(cls, d: Any) -> BatchAck:
        """Parse the fastjson form (short or long names).

        Raises:
            ProtocolError: not an object, or a field of the wrong type.
        """
        if not isinstance(d, dict):
            raise ProtocolError("batch ack element is not an object")
        raw = _field(d, "b", "bitSet")
        try:
            if raw is None:
                data = b""
            elif isinstance(raw, str):
                data = base64.b64decode(raw, validate=False)
            elif isinstance(raw, list):
                data = bytes(x & 0xFF for x in raw)
            else:
                raise ProtocolError("bad bitSet")
            return cls(
                consumer_group=str(_field(d, "c", "consumerGroup", "")),
                topic=str(_field(d, "t", "topic", "")),
                retry=str(_field(d, "r", "retry", NORMAL_TOPIC)),
                start_offset=int(_field(d, "so", "startOffset", 0)),
                queue_id=int(_field(d, "q", "queueId", 0)),
                revive_queue_id=int(_field(d, "rq", "reviveQueueId", 0)),
                pop_time=int(_field(d, "pt", "popTime", 0)),
                invisible_time=int(_field(d, "it", "invisibleTime", 0)),
                bits=_bitset_from_bytes(data),
            )
        except (TypeError, ValueError, binascii.Error) as exc:
            raise ProtocolError(f"bad batch ack element: {exc}") from None


@dataclass(frozen=True, slots=True)
class BatchAckMessageRequestBody:
    """BATCH_ACK_MESSAGE (200151) body (Java ``BatchAckMessageRequestBody``): ``{brokerName, acks}``."""

    broker_name: str | None
    acks: list[BatchAck]

    def encode(self) -> bytes:
        """JSON bytes."""
        obj: dict[str, Any] = {"acks": [a.to_obj() for a in self.acks]}
        if self.broker_name is not None:
            obj["brokerName"] = self.broker_name
        return orjson.dumps(obj)

    @classmethod
    def decode(cls, data: bytes | memoryview) -> BatchAckMessageRequestBody:
        """Parse the JSON body.

        Raises:
            ProtocolError: not JSON or a malformed element.
        """
        try:
            obj = orjson.loads(bytes(data))
        except orjson.JSONDecodeError as exc:
            raise ProtocolError(f"batch ack body is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ProtocolError("batch ack body is not an object")
        acks = obj.get("acks") or []
        if not isinstance(acks, list):
            raise ProtocolError("batch ack 'acks' is not a list")
        name = obj.get("brokerName")
        return cls(None if name is None else str(name), [BatchAck.from_obj(a) for a in acks])

    @classmethod
    def from_handles(cls, topic: str, group: str, handles: list[ExtraInfo]) -> BatchAckMessageRequestBody:
        """Merge handles into batch acks as ``MQClientAPIImpl.batchAckMessageAsync`` does
        (key: retry, queue id, ck offset, pop time).

        Raises:
            InvalidArgumentError: a handle without its message offset (legacy 7-field form).
        """
        groups: dict[tuple[str, int, int, int], tuple[ExtraInfo, set[int]]] = {}
        broker = None
        for h in handles:
            if h.queue_offset is None:
                raise InvalidArgumentError("a 7-field receipt handle cannot be batch-acked")
            broker = broker or h.broker_name
            key = (h.retry, h.queue_id, h.ck_queue_offset, h.pop_time)
            groups.setdefault(key, (h, set()))[1].add(h.queue_offset - h.ck_queue_offset)
        acks = [
            BatchAck(
                group,
                topic,
                h.retry,
                h.ck_queue_offset,
                h.queue_id,
                h.revive_qid,
                h.pop_time,
                h.invisible_time,
                frozenset(bits),
            )
            for h, bits in groups.values()
        ]
        return cls(broker, acks)
