"""POP remoting calls shared by the simple consumer and the push consumer's POP mode (L3).

Mirrors ``MQClientAPIImpl.popMessageAsync`` / ``processPopResponse`` (POP_MESSAGE 200050 and the
receipt handles it attaches), ``ackMessageAsync`` (ACK_MESSAGE 200051) and
``changeInvisibleTimeAsync`` (CHANGE_MESSAGE_INVISIBLETIME 200053). Durations are seconds here
and milliseconds on the wire; the conversion happens in this module only.

* :func:`pop_message` → :class:`PopResult` (``FOUND`` with messages carrying a ``POP_CK`` receipt
  handle, ``POLLING_FULL``, ``POLLING_NOT_FOUND``; any other response code raises);
* :func:`ack_message` / :func:`change_invisible_time` → the broker of the handle (``bname`` of
  the extraInfo), with the real topic (the pop retry topic for retried messages).

Imports protocol, errors and the client runtime (type only).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ...errors import error_for_response
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    parse_msg_offset_info,
    parse_start_offset_info,
    retry_flag,
)
from ...protocol.message import MessageExt, decode_records

if TYPE_CHECKING:
    from ...protocol.bodies.heartbeat import SubscriptionData
    from ..runtime import ClientRuntime

__all__ = [
    "POP_EXTRA_TIMEOUT",
    "PROPERTY_FIRST_POP_TIME",
    "PROPERTY_POP_CK",
    "PopResult",
    "PopStatus",
    "ReceivedMessage",
    "ack_message",
    "attach_receipt_handles",
    "change_invisible_time",
    "pop_message",
    "receipt_handle",
]

#: MessageConst.PROPERTY_POP_CK
PROPERTY_POP_CK: Final = "POP_CK"
#: MessageConst.PROPERTY_FIRST_POP_TIME
PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
#: PullAPIWrapper.popAsync: extra RPC time on top of the long-poll time (10 s).
POP_EXTRA_TIMEOUT: Final = 10.0

_MESSAGE_FIELDS: Final = tuple(f.name for f in dataclasses.fields(MessageExt))


@dataclass(slots=True)
class ReceivedMessage(MessageExt):
    """A popped message (a :class:`MessageExt` with a receipt handle)."""

    @property
    def receipt_handle(self) -> str:
        """The handle to ack / change the invisibility with (the ``POP_CK`` property)."""
        return self.properties.get(PROPERTY_POP_CK, "")

    @property
    def first_pop_time(self) -> int | None:
        """``1ST_POP_TIME``: broker time of the first delivery, ms (None if unknown)."""
        v = self.properties.get(PROPERTY_FIRST_POP_TIME)
        return int(v) if v and v.isdigit() else None

    @classmethod
    def of(cls, msg: MessageExt) -> ReceivedMessage:
        """Wrap a decoded message (fields copied)."""
        return cls(*(getattr(msg, name) for name in _MESSAGE_FIELDS))


def receipt_handle(msg: MessageExt) -> ExtraInfo:
    """The parsed receipt handle of a received message.

    Raises:
        InvalidArgumentError: the message has no (valid) ``POP_CK`` property.
    """
    return ExtraInfo.parse(msg.properties.get(PROPERTY_POP_CK))


def attach_receipt_handles(
    msgs: list[MessageExt], *, topic: str, broker_name: str, header: PopMessageResponseHeader
) -> list[ReceivedMessage]:
    """Give every popped message its ``POP_CK`` handle (``MQClientAPIImpl.processPopResponse``).

    Uses ``startOffsetInfo`` / ``msgOffsetInfo`` when the broker sent them (the message's
    offset is looked up by its rank among the messages of its (retry flag, queue)); otherwise
    the legacy form (checkpoint offset = first message of the queue). A handle the broker put
    on the message (retry topic messages) is kept. Sets ``1ST_POP_TIME`` when absent, the
    broker name, and the subscribed topic.

    Raises:
        ProtocolError: malformed offset infos.
    """
    pop_time = header.pop_time or 0
    invisible = header.invisible_time or 0
    revive_qid = header.revive_qid or 0
    start_info = parse_start_offset_info(header.start_offset_info)
    msg_info = parse_msg_offset_info(header.msg_offset_info)
    ranks: dict[str, list[int]] = {}
    for m in msgs:
        ck = m.properties.get(PROPERTY_POP_CK)
        flag = ExtraInfo.parse(ck).retry if ck else retry_flag(m.topic)
        ranks.setdefault(f"{flag}@{m.queue_id}", []).append(m.queue_offset)
    legacy: dict[str, int] = {}
    out: list[ReceivedMessage] = []
    for m in msgs:
        if PROPERTY_POP_CK not in m.properties:
            key = f"{retry_flag(m.topic)}@{m.queue_id}"
            if start_info and key in start_info and key in msg_info:
                rank = ranks[key].index(m.queue_offset)
                offsets = msg_info[key]
                offset = offsets[rank] if rank < len(offsets) else m.queue_offset
                ei = ExtraInfo.of(
                    start_info[key], pop_time, invisible, revive_qid, m.topic, broker_name, m.queue_id, offset
                )
            else:
                ck_offset = legacy.setdefault(m.topic + str(m.queue_id), m.queue_offset)
                ei = ExtraInfo.of(
                    ck_offset, pop_time, invisible, revive_qid, m.topic, broker_name, m.queue_id, m.queue_offset
                )
            m.properties[PROPERTY_POP_CK] = ei.build()
        m.properties.setdefault(PROPERTY_FIRST_POP_TIME, str(pop_time))
        m.broker_name = broker_name
        m.topic = topic
        out.append(ReceivedMessage.of(m))
    return out


class PopStatus(enum.Enum):
    """Outcome of a POP_MESSAGE (Java ``PopStatus``)."""

    #: SUCCESS: messages in :attr:`PopResult.msg_found_list`.
    FOUND = "FOUND"
    #: Not produced by the remoting response mapping; kept for Java parity.
    NO_NEW_MSG = "NO_NEW_MSG"
    #: POLLING_FULL (209): the broker holds too many parked pops.
    POLLING_FULL = "POLLING_FULL"
    #: POLLING_TIMEOUT (210) or PULL_NOT_FOUND (19): nothing arrived within the poll time.
    POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


@dataclass(slots=True)
class PopResult:
    """Result of :func:`pop_message` (Java ``PopResult``).

    Attributes:
        status: :class:`PopStatus`.
        msg_found_list: the popped messages (FOUND only), each with its receipt handle.
        pop_time: broker time of the pop, ms (FOUND only, else 0).
        invisible_time: invisibility granted, ms (FOUND only, else 0).
        rest_num: messages left in the queues the broker looked at (FOUND only, else 0).
    """

    status: PopStatus
    msg_found_list: list[ReceivedMessage] = field(default_factory=list)
    pop_time: int = 0
    invisible_time: int = 0
    rest_num: int = 0


async def pop_message(
    runtime: ClientRuntime,
    addr: str,
    *,
    group: str,
    topic: str,
    broker_name: str,
    queue_id: int,
    max_msg_nums: int,
    invisible_time: float,
    poll_time: float,
    born_time_ms: int,
    init_mode: int,
    subscription: SubscriptionData,
    order: bool = False,
) -> PopResult:
    """POP_MESSAGE (200050) to ``addr``; the RPC timeout is ``poll_time + 10 s``.

    Mirrors ``PullAPIWrapper.popAsync`` + ``MQClientAPIImpl.processPopResponse``.

    Args:
        runtime: the client runtime (connection pool).
        addr: the master broker's address.
        group: consumer group.
        topic: the subscribed topic (messages of its pop retry topic are reported under it).
        broker_name: the broker's name (``bname``; written into each receipt handle).
        queue_id: a queue id, or −1 for any queue of the topic on that broker.
        max_msg_nums: at most this many messages (the broker accepts at most 32).
        invisible_time: seconds the popped messages stay invisible to the group.
        poll_time: seconds the broker may hold the request when nothing is available.
        born_time_ms: client wall clock, ms (the broker answers POLLING_TIMEOUT at once when
            ``now − born_time − poll_time > 500 ms``).
        init_mode: :class:`~rocketpipe.protocol.headers.pop.ConsumeInitMode` for a group
            without an offset.
        subscription: the expression (type and string) to filter with on the broker.
        order: orderly pop.

    Returns:
        The :class:`PopResult`; no client-side tag re-filtering is done here.

    Raises:
        BrokerError: any other response code (e.g. TOPIC_NOT_EXIST, SUBSCRIPTION_GROUP_NOT_EXIST,
            INVALID_PARAMETER, FLOW_CONTROL); TransportError; ProtocolError (malformed body).
    """
    header = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        max_msg_nums=max_msg_nums,
        invisible_time=round(invisible_time * 1000),
        poll_time=round(poll_time * 1000),
        born_time=born_time_ms,
        init_mode=init_mode,
        exp_type=subscription.expression_type or "TAG",
        exp=subscription.sub_string,
        order=order,
        bname=broker_name,
    )
    cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())
    resp = await runtime.pool.request(addr, cmd, poll_time + POP_EXTRA_TIMEOUT)
    if resp.code == ResponseCode.POLLING_FULL:
        return PopResult(PopStatus.POLLING_FULL)
    if resp.code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
        return PopResult(PopStatus.POLLING_NOT_FOUND)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    rh = PopMessageResponseHeader.from_ext_fields(resp.ext_fields or {})
    msgs = attach_receipt_handles(
        decode_records(bytes(resp.body or b"")), topic=topic, broker_name=broker_name, header=rh
    )
    return PopResult(PopStatus.FOUND, msgs, rh.pop_time or 0, rh.invisible_time or 0, rh.rest_num or 0)


async def ack_message(runtime: ClientRuntime, group: str, msg: MessageExt, timeout: float) -> None:
    """ACK_MESSAGE (200051) for one popped message: it is not delivered again.

    Sent to the master of the handle's broker, with the real topic (the pop retry topic for a
    retried message). Mirrors ``DefaultMQPushConsumerImpl.ackAsync`` / ``SimpleConsumer.ack``.

    Args:
        runtime: the client runtime.
        group: consumer group.
        msg: a popped message whose ``topic`` is the subscribed topic.
        timeout: RPC timeout, seconds.

    Raises:
        InvalidArgumentError: no receipt handle; BrokerError (e.g. NO_MESSAGE, 208, when the
            handle expired); TransportError; RocketMQError (broker not in any route).
    """
    ei = receipt_handle(msg)
    header = AckMessageRequestHeader(
        consumer_group=group,
        topic=ei.real_topic(msg.topic, group),
        queue_id=ei.queue_id,
        extra_info=ei.build(),
        offset=ei.queue_offset if ei.queue_offset is not None else msg.queue_offset,
        bname=ei.broker_name,
    )
    addr = await runtime.find_master_addr(ei.broker_name, msg.topic)
    resp = await runtime.pool.request(
        addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext_fields()), timeout
    )
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)


async def change_invisible_time(
    runtime: ClientRuntime, group: str, msg: MessageExt, invisible_time: float, timeout: float
) -> str:
    """CHANGE_MESSAGE_INVISIBLETIME (200053): make ``msg`` invisible for ``invisible_time`` s from now.

    The message's ``POP_CK`` is replaced by the new handle (the old one is no longer valid).
    Mirrors ``MQClientAPIImpl.changeInvisibleTimeAsync`` (new checkpoint = this message alone).

    Args:
        runtime: the client runtime.
        group: consumer group.
        msg: a popped message whose ``topic`` is the subscribed topic.
        invisible_time: seconds (≥ 0).
        timeout: RPC timeout, seconds.

    Returns:
        The new receipt handle.

    Raises:
        InvalidArgumentError: no receipt handle; BrokerError (e.g. NO_MESSAGE when the handle
            expired); TransportError; RocketMQError (broker not in any route).
    """
    ei = receipt_handle(msg)
    offset = ei.queue_offset if ei.queue_offset is not None else msg.queue_offset
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group,
        topic=ei.real_topic(msg.topic, group),
        queue_id=ei.queue_id,
        extra_info=ei.build(),
        offset=offset,
        invisible_time=round(invisible_time * 1000),
        bname=ei.broker_name,
    )
    addr = await runtime.find_master_addr(ei.broker_name, msg.topic)
    cmd = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
    resp = await runtime.pool.request(addr, cmd, timeout)
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    rh = ChangeInvisibleTimeResponseHeader.from_ext_fields(resp.ext_fields or {})
    new = ExtraInfo(
        offset,
        rh.pop_time or 0,
        rh.invisible_time or 0,
        rh.revive_qid or 0,
        ei.retry,
        ei.broker_name,
        ei.queue_id,
        offset,
    ).build()
    msg.properties[PROPERTY_POP_CK] = new
    return new
