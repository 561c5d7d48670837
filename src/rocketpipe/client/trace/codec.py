"""Java's message-trace format, both ways (L3, pure functions: no I/O, no asyncio).

Mirrors ``TraceDataEncoder`` (``encoderFromContextBean`` / ``decoderFromTraceDataString``),
``TraceView.decodeFromTraceTransData`` and the packing half of
``AsyncTraceDispatcher.AsyncDataSendTask`` (``sendTraceData`` / ``flushData``) of Java 5.3.3.

A trace message's body is UTF-8 text: records one after the other, each ended by
``FIELD_SPLITOR`` (``\\x02``), fields separated by ``CONTENT_SPLITOR`` (``\\x01``). Field order:

* Pub: ``Pub, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, bodyLength,
  costTime, msgType ordinal, offsetMsgId, success``;
* SubBefore (one record per message of the batch): ``SubBefore, timeStamp, regionId,
  groupName, requestId, msgId, retryTimes, keys``;
* SubAfter (one per message): ``SubAfter, requestId, msgId, costTime, success, keys,
  contextCode, timeStamp, groupName`` (a 5.x ``CLOUD`` client stops after ``contextCode``);
* EndTransaction: ``EndTransaction, timeStamp, regionId, groupName, topic, msgId, tags, keys,
  storeHost, msgType ordinal, transactionId, transactionState, fromTransactionCheck``;
* Recall (5.3): ``Recall, timeStamp, regionId, groupName, topic, msgId, success``.

Booleans are ``true`` / ``false``; a null string is ``null``. The trace message's ``KEYS`` are
the msg id and the user keys of every record in it, so a query by key = msg id finds it.

Unlike Java's decoder, which throws on a record with missing trailing fields or a bad number
(and so loses the whole message), :func:`decode_trace_data` skips such a record and goes on.
Imports :mod:`.model` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .model import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    TraceView,
)

__all__ = [
    "TraceMessage",
    "TraceTransferBean",
    "decode_trace_data",
    "encode_context",
    "pack_trace_messages",
    "trace_views",
]

#: MessageConst.KEY_SEPARATOR
_KEY_SEPARATOR = " "


@dataclass(frozen=True, slots=True)
class TraceTransferBean:
    """One encoded context (``TraceTransferBean``): its records and the keys to index them by.

    Attributes:
        data: the records, each ended by ``FIELD_SPLITOR``.
        keys: msg ids and user keys, first-seen order, no duplicates.
    """

    data: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TraceMessage:
    """A trace message to send: ``body`` (UTF-8 of ``data``) to ``topic`` with ``keys``.

    Attributes:
        topic: the trace topic.
        data: the concatenated records.
        keys: the message's ``KEYS`` words (Java ``Message.setKeys(Collection)``).
    """

    topic: str
    data: str
    keys: tuple[str, ...]

    @property
    def body(self) -> bytes:
        """The message body: ``data`` in UTF-8."""
        return self.data.encode()


def _s(value: object) -> str:
    """A field as Java's ``StringBuilder.append`` writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_s(f) for f in fields) + FIELD_SPLITOR


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split(sep)`` for a one-character ``sep``: trailing empty strings dropped."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _split_keys(keys: str | None) -> list[str]:
    if not keys:
        return []
    return _java_split(keys, _KEY_SEPARATOR)


def encode_context(ctx: TraceContext) -> TraceTransferBean:
    """Encode one context (``TraceDataEncoder.encoderFromContextBean``).

    Pub, EndTransaction and Recall encode their first bean; SubBefore and SubAfter one record
    per bean. Keys: each bean's msg id, then its user keys split on spaces.

    Raises:
        ValueError: a Pub, EndTransaction or Recall context without a bean (Java throws too).
    """
    t = ctx.trace_type
    beans = ctx.trace_beans
    if t in (TraceType.Pub, TraceType.EndTransaction, TraceType.Recall) and not beans:
        raise ValueError(f"a {t.value} trace context needs a trace bean")
    if t is TraceType.Pub:
        b = beans[0]
        data = _record(
            t.value,
            ctx.time_stamp,
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            b.tags,
            b.keys,
            b.store_host,
            b.body_length,
            ctx.cost_time,
            int(b.msg_type),
            b.offset_msg_id,
            ctx.is_success,
        )
    elif t is TraceType.SubBefore:
        data = "".join(
            _record(
                t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, ctx.request_id, b.msg_id, b.retry_times, b.keys
            )
            for b in beans
        )
    elif t is TraceType.SubAfter:
        data = "".join(
            _record(
                t.value,
                ctx.request_id,
                b.msg_id,
                ctx.cost_time,
                ctx.is_success,
                b.keys,
                ctx.context_code,
                ctx.time_stamp,
                ctx.group_name,
            )
            for b in beans
        )
    elif t is TraceType.EndTransaction:
        b = beans[0]
        data = _record(
            t.value,
            ctx.time_stamp,
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            b.tags,
            b.keys,
            b.store_host,
            int(b.msg_type),
            b.transaction_id,
            b.transaction_state,
            b.from_transaction_check,
        )
    else:
        b = beans[0]
        data = _record(t.value, ctx.time_stamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id, ctx.is_success)
    keys: dict[str, None] = {}
    for b in beans:
        keys[b.msg_id] = None
        for k in _split_keys(b.keys):
            keys[k] = None
    return TraceTransferBean(data, tuple(keys))


def _bool(text: str) -> bool:
    """``Boolean.parseBoolean``."""
    return text.lower() == "true"


def _decode_record(line: list[str]) -> TraceContext | None:
    kind = line[0]
    if kind == TraceType.Pub.value:
        bean = TraceBean(
            topic=line[4],
            msg_id=line[5],
            tags=line[6],
            keys=line[7],
            store_host=line[8],
            body_length=int(line[9]),
            msg_type=MessageType(int(line[11])),
        )
        ctx = TraceContext(TraceType.Pub, int(line[1]), line[2], line[3], cost_time=int(line[10]), trace_beans=[bean])
        if len(line) == 13:
            ctx.is_success = _bool(line[12])
        elif len(line) >= 14:
            bean.offset_msg_id = line[12]
            ctx.is_success = _bool(line[13])
            if len(line) >= 15:
                bean.client_host = line[14]
        return ctx
    if kind == TraceType.SubBefore.value:
        bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=line[7] if len(line) > 7 else "")
        return TraceContext(TraceType.SubBefore, int(line[1]), line[2], line[3], request_id=line[4], trace_beans=[bean])
    if kind == TraceType.SubAfter.value:
        bean = TraceBean(msg_id=line[2], keys=line[5] if len(line) > 5 else "")
        ctx = TraceContext(
            TraceType.SubAfter,
            request_id=line[1],
            cost_time=int(line[3]),
            is_success=_bool(line[4]),
            trace_beans=[bean],
        )
        if len(line) >= 7:
            ctx.context_code = int(line[6])
        if len(line) >= 9:
            ctx.time_stamp = int(line[7])
            ctx.group_name = line[8]
        return ctx
    if kind == TraceType.EndTransaction.value:
        bean = TraceBean(
            topic=line[4],
            msg_id=line[5],
            tags=line[6],
            keys=line[7],
            store_host=line[8],
            msg_type=MessageType(int(line[9])),
            transaction_id=line[10],
            transaction_state=line[11],
            from_transaction_check=_bool(line[12]),
        )
        return TraceContext(TraceType.EndTransaction, int(line[1]), line[2], line[3], trace_beans=[bean])
    if kind == TraceType.Recall.value:
        bean = TraceBean(topic=line[4], msg_id=line[5])
        return TraceContext(
            TraceType.Recall, int(line[1]), line[2], line[3], is_success=_bool(line[6]), trace_beans=[bean]
        )
    return None


def decode_trace_data(data: str) -> list[TraceContext]:
    """Decode the records of one trace message (``TraceDataEncoder.decoderFromTraceDataString``).

    Every decoded context has exactly one bean (a SubBefore / SubAfter record per message).
    Records of unknown types, and records too short or with a bad number (where Java throws),
    are skipped.
    """
    out: list[TraceContext] = []
    if not data:
        return out
    for record in _java_split(data, FIELD_SPLITOR):
        line = _java_split(record, CONTENT_SPLITOR)
        try:
            ctx = _decode_record(line)
        except (IndexError, ValueError):
            continue
        if ctx is not None:
            out.append(ctx)
    return out


def trace_views(msg_id: str, body: bytes, born_host: str) -> list[TraceView]:
    """The records of one trace message that concern ``msg_id`` (``TraceView.decodeFromTraceTransData``).

    Args:
        msg_id: the message looked for (a record's first bean must have this msg id).
        body: the trace message's body.
        born_host: the trace message's born host (``ip:port``): the view's ``client_host``.
    """
    views: list[TraceView] = []
    for ctx in decode_trace_data(body.decode("utf-8", errors="replace")):
        b = ctx.trace_beans[0]
        if b.msg_id != msg_id:
            continue
        views.append(
            TraceView(
                msg_id=b.msg_id,
                trace_type=ctx.trace_type,
                group_name=ctx.group_name,
                status="success" if ctx.is_success else "failed",
                cost_time=ctx.cost_time,
                time_stamp=ctx.time_stamp,
                topic=b.topic,
                tags=b.tags,
                keys=b.keys,
                offset_msg_id=b.offset_msg_id,
                store_host=b.store_host,
                client_host=born_host,
                context=ctx,
            )
        )
    return views


def pack_trace_messages(contexts: Iterable[TraceContext], trace_topic: str, max_msg_size: int) -> list[TraceMessage]:
    """The trace messages of a batch of contexts (``AsyncDataSendTask.sendTraceData`` / ``flushData``).

    Contexts without a region id or without beans are left out. The rest are grouped by the
    topic of their first bean (first-seen order; Java iterates a ``HashMap``); within a group
    the encoded records are concatenated, and a message is cut as soon as its text reaches
    ``max_msg_size`` characters (so a message may exceed it by one context, as in Java). Keys:
    the union of the contexts' keys.

    Args:
        contexts: the batch (Java takes up to ``traceMsgBatchNum`` at a time).
        trace_topic: where the messages go.
        max_msg_size: characters (Java compares the ``StringBuilder`` length with the trace
            producer's ``maxMessageSize``, 128 000).
    """
    groups: dict[str, list[TraceTransferBean]] = {}
    for ctx in contexts:
        if ctx.region_id is None or not ctx.trace_beans:
            continue
        groups.setdefault(ctx.trace_beans[0].topic, []).append(encode_context(ctx))
    out: list[TraceMessage] = []
    for beans in groups.values():
        parts: list[str] = []
        size = 0
        keys: dict[str, None] = {}
        for bean in beans:
            parts.append(bean.data)
            size += len(bean.data)
            keys.update(dict.fromkeys(bean.keys))
            if size >= max_msg_size:
                out.append(TraceMessage(trace_topic, "".join(parts), tuple(keys)))
                parts, size, keys = [], 0, {}
        if parts:
            out.append(TraceMessage(trace_topic, "".join(parts), tuple(keys)))
    return out
