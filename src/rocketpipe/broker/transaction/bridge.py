"""Transactional messages, the pure part (L3): how half, committed, op and discarded messages
are built from one another. No I/O; :mod:`.service` stores what these functions return.

Mirrors ``TransactionalMessageBridge`` (``parseHalfMessageInner``, ``renewHalfMessageInner``,
``renewImmunityHalfMessageInner``, ``makeOpMessageInner``), ``TransactionalMessageUtil`` and
the message building of ``EndTransactionProcessor.endMessageTransaction`` and
``DefaultTransactionalMessageCheckListener.toMessageExtBrokerInner`` (Apache RocketMQ 5.3.3).

Storage model (Java's): a half message is stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with
its real topic and queue in ``REAL_TOPIC`` / ``REAL_QID`` and the transaction type of its
sysflag reset to NOT_TYPE, so it is an ordinary consume-queue entry of the half topic and
invisible to consumers of the real topic. Ending a transaction appends an *op* message to
``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id as the half) with tag ``d`` and, as body, the
half's queue offset followed by ``,``; commit also appends the real message. The check service
learns which halves are finished from the op queue, and its progress through both queues is
the committed offset of the system group ``CID_SYS_RMQ_TRANS``. Everything is in the commit
log and the offset table, so the state survives a restart.
"""

from __future__ import annotations

from typing import Final

from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...store import MessageInner
from ..topics import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC

__all__ = [
    "CID_SYS_RMQ_TRANS",
    "OFFSET_SEPARATOR",
    "REMOVE_TAG",
    "TRANSACTION_ID",
    "committed_message",
    "discarded_message",
    "end_immunity_time_ms",
    "half_message",
    "immunity_time_ms",
    "op_message",
    "op_offsets",
    "renewed_half",
]

#: MixAll.CID_SYS_RMQ_TRANS: the group whose offsets are the check service's progress.
CID_SYS_RMQ_TRANS: Final = "CID_SYS_RMQ_TRANS"
#: TransactionalMessageUtil.REMOVE_TAG: the tag of op messages.
REMOVE_TAG: Final = "d"
#: TransactionalMessageUtil.OFFSET_SEPARATOR: between half offsets in an op body.
OFFSET_SEPARATOR: Final = ","
#: TransactionalMessageUtil.TRANSACTION_ID: 5.x copies UNIQ_KEY here when storing a half.
TRANSACTION_ID: Final = "__transactionId__"

PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"


def _with_type(sys_flag: int, tran_type: int) -> int:
    """``MessageSysFlag.resetTransactionValue``."""
    return (sys_flag & ~sf.TRANSACTION_TYPE_MASK) | tran_type


def half_message(inner: MessageInner) -> MessageInner:
    """The half message stored for a prepared one (``parseHalfMessageInner``, 5.x).

    Adds ``__transactionId__`` (= ``UNIQ_KEY``), ``REAL_TOPIC`` and ``REAL_QID``; moves it to
    ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with transaction type NOT_TYPE. ``inner.properties``
    must be a dict; it is copied.
    """
    props = dict(inner.properties)  # type: ignore[arg-type]
    uniq = props.get(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uniq:
        props[TRANSACTION_ID] = uniq
    props[pm.PROPERTY_REAL_TOPIC] = inner.topic
    props[pm.PROPERTY_REAL_QUEUE_ID] = str(inner.queue_id)
    return MessageInner(
        topic=TRANS_HALF_TOPIC,
        queue_id=0,
        body=inner.body,
        flag=inner.flag,
        properties=props,
        sys_flag=_with_type(inner.sys_flag, sf.TRANSACTION_NOT_TYPE),
        born_timestamp=inner.born_timestamp,
        born_host=inner.born_host,
        store_host=inner.store_host,
        reconsume_times=inner.reconsume_times,
    )


def committed_message(half: pm.MessageExt) -> MessageInner:
    """The real message a COMMIT stores (``endMessageTransaction`` + ``processRequest``).

    Topic and queue from ``REAL_TOPIC`` / ``REAL_QID``; transaction type COMMIT; the prepared
    transaction offset is the half's commit-log offset. The stored properties are the half's
    as they are: Java builds the properties string before it clears ``REAL_TOPIC``,
    ``REAL_QID`` and ``TRAN_MSG`` from the property map, and the store writes the string, so a
    committed message read from an Apache broker still carries all three.

    Raises:
        ValueError: the half has no usable ``REAL_TOPIC`` / ``REAL_QID``.
    """
    props = half.properties
    topic = props.get(pm.PROPERTY_REAL_TOPIC)
    if not topic:
        raise ValueError("the half message has no REAL_TOPIC")
    return MessageInner(
        topic=topic,
        queue_id=int(props[pm.PROPERTY_REAL_QUEUE_ID]),
        body=half.body,
        flag=half.flag,
        properties=dict(props),
        sys_flag=_with_type(half.sys_flag, sf.TRANSACTION_COMMIT_TYPE),
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.commit_log_offset,
    )


def renewed_half(half: pm.MessageExt, props: dict[str, str]) -> MessageInner:
    """A copy of ``half`` with ``props``, appended again to the half queue (``renewHalfMessageInner``)."""
    return MessageInner(
        topic=half.topic,
        queue_id=half.queue_id,
        body=half.body,
        flag=0,  # Java's renewHalfMessageInner does not copy the flag
        properties=props,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
    )


def op_message(half_queue_id: int, body: str, store_host: str, now_ms: int, uniq: str) -> MessageInner:
    """An op message (``getOpMessage`` + ``makeOpMessageInner``): tag ``d``, ``body`` = half
    queue offsets each followed by ``,``; born now at this broker."""
    return MessageInner(
        topic=TRANS_OP_HALF_TOPIC,
        queue_id=half_queue_id,
        body=body.encode(),
        properties={
            pm.PROPERTY_TAGS: REMOVE_TAG,
            pm.PROPERTY_WAIT_STORE_MSG_OK: "true",
            pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq,
        },
        born_timestamp=now_ms,
        born_host=store_host,
        store_host=store_host,
    )


def op_offsets(body: bytes) -> list[int]:
    """The half queue offsets of an op body (``,``-separated; a bad number reads as -1, as Java's ``getLong``)."""
    out: list[int] = []
    for part in body.decode("utf-8", "replace").split(OFFSET_SEPARATOR):
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            out.append(-1)
    return out


def discarded_message(half: pm.MessageExt) -> MessageInner:
    """The copy of a half checked too often, for ``TRANS_CHECK_MAX_TIME_TOPIC`` queue 0
    (``toMessageExtBrokerInner``)."""
    return MessageInner(
        topic=TRANS_CHECK_MAX_TIME_TOPIC,
        queue_id=0,
        body=half.body,
        flag=half.flag,
        properties=dict(half.properties),
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
    )


def immunity_time_ms(value: str | None, transaction_timeout_ms: int) -> int:
    """How long the check service leaves a half alone before its first check, ms
    (``TransactionalMessageServiceImpl.getImmunityTime``).

    ``CHECK_IMMUNITY_TIME_IN_SECONDS`` × 1000; ``transaction_timeout_ms`` when absent, not a
    number, or -1.
    """
    if value is None:
        return transaction_timeout_ms
    try:
        seconds = int(value)
    except ValueError:
        return transaction_timeout_ms
    return transaction_timeout_ms if seconds == -1 else seconds * 1000


def end_immunity_time_ms(value: str, transaction_timeout_ms: int) -> int:
    """The window in which a producer's own END_TRANSACTION is accepted, ms
    (``TransactionalMessageUtil.getImmunityTime``): ``CHECK_IMMUNITY_TIME_IN_SECONDS`` × 1000,
    at least ``transaction_timeout_ms`` (a bad number counts as 0)."""
    try:
        ms = int(value) * 1000
    except ValueError:
        ms = 0
    return max(ms, transaction_timeout_ms)
