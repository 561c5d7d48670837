"""Message-trace records (L3, pure): trace types, message types, contexts, beans and views.

Mirrors ``org.apache.rocketmq.client.trace`` of Java 5.3.3: ``TraceType``, ``TraceContext``,
``TraceBean``, ``TraceView``, ``TraceConstants``, and the enums the trace format stores by
ordinal (``common.message.MessageType``, ``ConsumeReturnType``). Plain dataclasses: no I/O, no
asyncio. Imports nothing from rocketpipe.

Java writes a ``null`` string field as the four characters ``null`` (``StringBuilder.append``):
fields typed ``str | None`` here are encoded the same way, and decoded back as the string
``"null"``, as Java's decoder does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "CONSUME_RETURN_TYPES",
    "CONTENT_SPLITOR",
    "DEFAULT_TRACE_REGION_ID",
    "FIELD_SPLITOR",
    "GROUP_NAME_PREFIX",
    "RMQ_SYS_TRACE_TOPIC",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceType",
    "TraceView",
]

#: TraceConstants.CONTENT_SPLITOR: separates the fields of one record.
CONTENT_SPLITOR: Final = "\x01"
#: TraceConstants.FIELD_SPLITOR: ends each record (several records make one trace message).
FIELD_SPLITOR: Final = "\x02"
#: TraceConstants.GROUP_NAME_PREFIX: the trace producer's group is
#: ``_INNER_TRACE_PRODUCER-<host group>-<PRODUCE|CONSUME>-<n>``.
GROUP_NAME_PREFIX: Final = "_INNER_TRACE_PRODUCER"
#: TopicValidator.RMQ_SYS_TRACE_TOPIC: the default trace topic.
RMQ_SYS_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
#: MixAll.DEFAULT_TRACE_REGION_ID
DEFAULT_TRACE_REGION_ID: Final = "DefaultRegion"
#: ConsumeReturnType names in ordinal order; a SubAfter record stores the ordinal as contextCode.
CONSUME_RETURN_TYPES: Final = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")


class TraceType(enum.Enum):
    """Kind of a trace record (``TraceType``); the value is the name written on the wire."""

    Pub = "Pub"
    Recall = "Recall"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """``common.message.MessageType``; Pub and EndTransaction records store the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3
    Order_Msg = 4


@dataclass(slots=True)
class TraceBean:
    """One message of a trace record (``TraceBean``).

    Attributes:
        topic: the message's topic.
        msg_id: the client msg id (``UNIQ_KEY``), or the offset msg id when it has none.
        offset_msg_id: the broker's offset msg id (Pub only).
        tags / keys: the ``TAGS`` / ``KEYS`` properties (None is written ``null``).
        store_host: ``ip:port`` of the broker the message was sent to (Pub, EndTransaction).
        client_host: not encoded (Java keeps it in memory only); set from a decoded Pub of an
            old client that wrote it.
        store_time: ms; not encoded.
        retry_times: the message's reconsume times (SubBefore).
        body_length: bytes: the body as sent (compressed when the producer compressed it) for
            Pub; the stored record's size for consume records (not encoded there).
        msg_type: Pub and EndTransaction.
        transaction_state: ``LocalTransactionState`` name (EndTransaction).
        transaction_id: the transaction id (EndTransaction).
        from_transaction_check: EndTransaction answering a broker's check-back.
    """

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType = MessageType.Normal_Msg
    transaction_state: str | None = None
    transaction_id: str | None = None
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """One trace record (``TraceContext``).

    Attributes:
        trace_type: what happened.
        time_stamp: wall ms: Pub — before the send; SubBefore — before the listener;
            SubAfter — after it; EndTransaction — when the outcome was sent.
        region_id: the broker's ``MSG_REGION`` (None: the context is not sent, as Java).
        group_name: producer or consumer group.
        cost_time: ms: Pub — the send's round trip; SubAfter — the listener call divided by
            the number of messages in the batch.
        is_success: Pub — SEND_OK; SubAfter — the listener's success; Recall — recalled.
        request_id: a unique id shared by a SubBefore and its SubAfter.
        context_code: SubAfter: ``ConsumeReturnType`` ordinal (see
            :data:`CONSUME_RETURN_TYPES`).
        trace_beans: the messages (one for Pub / EndTransaction / Recall; the batch for
            SubBefore / SubAfter).
    """

    trace_type: TraceType
    time_stamp: int = 0
    region_id: str | None = ""
    group_name: str = ""
    cost_time: int = 0
    is_success: bool = True
    request_id: str = ""
    context_code: int = 0
    trace_beans: list[TraceBean] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TraceView:
    """One trace record of one message, as ``mqadmin queryMsgTraceById`` shows it (``TraceView``).

    Attributes:
        msg_id: the message's msg id.
        trace_type: Java's ``TraceView.msgType`` (the trace type's name: ``Pub``, ``SubBefore``,
            ``SubAfter``, ``EndTransaction``, ``Recall``).
        group_name: producer or consumer group.
        status: ``"success"`` or ``"failed"``.
        cost_time: ms (see :attr:`TraceContext.cost_time`).
        time_stamp: wall ms (see :attr:`TraceContext.time_stamp`; 0 for a SubAfter of a
            client that did not write it).
        topic / tags / keys / offset_msg_id / store_host: of the record's message ("" where
            the record type does not carry the field).
        client_host: ``ip:port`` the trace message was born at (the tracing client).
        context: the whole decoded record (region, request id, retry times, context code,
            transaction fields, ...).
    """

    msg_id: str
    trace_type: TraceType
    group_name: str
    status: str
    cost_time: int
    time_stamp: int
    topic: str
    tags: str | None
    keys: str | None
    offset_msg_id: str
    store_host: str | None
    client_host: str
    context: TraceContext
