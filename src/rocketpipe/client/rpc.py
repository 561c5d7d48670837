"""Stateless typed RPCs of the client, one per request code (L3).

Each function builds a typed header, sends it through a :class:`Requester` (a
:class:`rocketpipe.transport.ConnectionPool` in practice), and returns a typed result or raises
the exception of :func:`rocketpipe.errors.error_for_response`. Seconds in, milliseconds on the
wire: this module is the only place in ``client/`` that converts them.

Mirrors ``MQClientAPIImpl``. Imports transport (types only), protocol and errors.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from ..errors import error_for_response
from ..protocol.bodies.heartbeat import SubscriptionData
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.admin import CreateTopicRequestHeader
from ..protocol.headers.consumer import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from ..protocol.headers.offset import (
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
from ..protocol.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from ..protocol.headers.route import GetRouteInfoRequestHeader
from ..protocol.headers.send import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from ..protocol.headers.transaction import EndTransactionRequestHeader
from ..protocol.message import PROPERTY_MESSAGE_TYPE, REPLY_MESSAGE_FLAG, MessageQueue

if TYPE_CHECKING:
    from ..protocol.bodies.route import ClusterInfo, TopicRouteData


class Requester(Protocol):
    """What the RPCs need from the transport (``ConnectionPool`` satisfies it)."""

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float | None) -> RemotingCommand: ...

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None: ...


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _check(resp: RemotingCommand) -> RemotingCommand:
    if resp.code != ResponseCode.SUCCESS:
        raise error_for_response(resp.code, resp.remark)
    return resp


# --------------------------------------------------------------------------------------------
# Name server


async def get_route_info(req: Requester, addr: str, topic: str, timeout: float) -> TopicRouteData:
    """GET_ROUTEINFO_BY_TOPIC (105) to a name server.

    Raises:
        TopicNotExistError: the name server has no route (retriable, refresh_route).
        TransportError: network failure (retriable).
    """
    from ..protocol.bodies.route import TopicRouteData

    cmd = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
    )
    resp = _check(await req.request(addr, cmd, timeout))
    return TopicRouteData.decode(bytes(resp.body))


async def get_broker_cluster_info(req: Requester, addr: str, timeout: float) -> ClusterInfo:
    """GET_BROKER_CLUSTER_INFO (106) to a name server.

    Raises:
        BrokerError: the name server refused; TransportError: network failure.
    """
    from ..protocol.bodies.route import ClusterInfo

    cmd = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
    resp = _check(await req.request(addr, cmd, timeout))
    return ClusterInfo.decode(bytes(resp.body))


# --------------------------------------------------------------------------------------------
# Send


class SendStatus(enum.Enum):
    """Outcome of a stored send (``SendStatus``)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


_SEND_STATUS_BY_CODE: Final = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class SendResult:
    """Result of a send (``SendResult``).

    Attributes:
        send_status: SEND_OK, or a stored-but-degraded status.
        msg_id: the client unique key (``UNIQ_KEY``); for batches the keys joined by commas.
        offset_msg_id: the broker's offset message id(s) (comma-joined for batches).
        message_queue: the queue the message went to.
        queue_offset: consume-queue offset of the (first) message.
        transaction_id: the broker's ``transactionId`` field, if any.
        region_id: ``MSG_REGION`` of the broker.
        trace_on: ``TRACE_ON`` of the broker.
        recall_handle: 5.3.2+ brokers, for a timer message: the handle that
            :meth:`~rocketpipe.client.Producer.recall_message` takes back (else None).
    """

    send_status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str | None = None
    trace_on: bool = True
    recall_handle: str | None = None


async def send_message(
    req: Requester,
    addr: str,
    broker_name: str,
    header: SendMessageRequestHeaderV2,
    body: bytes,
    msg_id: str,
    timeout: float,
) -> SendResult:
    """SEND_MESSAGE_V2 (310), or SEND_BATCH_MESSAGE (320) when ``header.batch`` is true.

    Args:
        req: the transport.
        addr: master address of ``broker_name``.
        broker_name: the broker (for the result's queue).
        header: the V2 send header.
        body: message body (compressed if the sysflag says so) or the encoded batch.
        msg_id: the unique key(s) to report as ``SendResult.msg_id``.
        timeout: seconds.

    Raises:
        BrokerError: the broker refused (``retriable`` per code); TransportError: network.
    """
    code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
    mq = MessageQueue(header.topic or "", broker_name, header.queue_id if header.queue_id is not None else -1)
    return await send_message_ext(req, addr, mq, code, header.to_ext_fields(), body, msg_id, timeout)


async def send_message_ext(
    req: Requester,
    addr: str,
    mq: MessageQueue,
    code: int,
    ext_fields: dict[str, str],
    body: bytes,
    msg_id: str,
    timeout: float,
) -> SendResult:
    """Hot path of :func:`send_message`: the V2 header already as its extFields map.

    Uses the pooled connection directly when it is open (no connect machinery per send).

    Args:
        req: the transport.
        addr: master address of ``mq.broker_name``.
        mq: the queue sent to (reused as the result's queue when the broker keeps its id).
        code: SEND_MESSAGE_V2, SEND_BATCH_MESSAGE or SEND_REPLY_MESSAGE_V2 (:func:`send_code`).
        ext_fields: ``SendMessageRequestHeaderV2.to_ext_fields()`` of the request.
        body: message body or encoded batch.
        msg_id: the unique key(s) to report as ``SendResult.msg_id``.
        timeout: seconds.

    Raises:
        BrokerError: the broker refused (``retriable`` per code); TransportError: network.
    """
    cmd = RemotingCommand.request(code, ext_fields, body)
    open_connection = getattr(req, "open_connection", None)
    conn = open_connection(addr) if open_connection is not None else None
    if conn is not None:
        resp = await conn.request(cmd, timeout)
    else:
        resp = await req.request(addr, cmd, timeout)
    return send_result(resp, mq, msg_id)


def send_result(resp: RemotingCommand, mq: MessageQueue, msg_id: str) -> SendResult:
    """Map a send response to a :class:`SendResult` (``MQClientAPIImpl.processSendResponse``).

    Raises:
        BrokerError: the code is not a stored status; HeaderError: required fields missing.
    """
    status = _SEND_STATUS_BY_CODE.get(resp.code)  # type: ignore[call-overload]
    if status is None:
        raise error_for_response(resp.code, resp.remark)
    ext = resp.ext_fields
    try:
        offset_msg_id = ext["msgId"]
        queue_id = int(ext["queueId"])
        queue_offset = int(ext["queueOffset"])
    except (KeyError, ValueError, TypeError):  # the typed decoder raises the precise HeaderError
        rh = SendMessageResponseHeader.from_ext_fields(ext)
        offset_msg_id = rh.msg_id or ""
        queue_id = rh.queue_id if rh.queue_id is not None else -1
        queue_offset = rh.queue_offset or 0
    get = ext.get
    return SendResult(
        send_status=status,
        msg_id=msg_id,
        offset_msg_id=offset_msg_id,
        message_queue=mq if queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, queue_id),
        queue_offset=queue_offset,
        transaction_id=get("transactionId"),
        region_id=get("MSG_REGION"),
        trace_on=get("TRACE_ON", "true").lower() != "false",
        recall_handle=get("recallHandle"),
    )


async def recall_message(req: Requester, addr: str, header: RecallMessageRequestHeader, timeout: float) -> str:
    """RECALL_MESSAGE (370) to a broker (``MQClientAPIImpl.recallMessage``).

    Returns:
        The recalled message's ``UNIQ_KEY`` (the response's ``msgId``).

    Raises:
        BrokerError: the broker refused (NO_PERMISSION when recall is off, ILLEGAL_OPERATION for
            a bad or expired handle, ...); TransportError: network.
    """
    cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, header.to_ext_fields())
    resp = _check(await req.request(addr, cmd, timeout))
    return RecallMessageResponseHeader.from_ext_fields(resp.ext_fields).msg_id or ""


def send_code(properties: dict[str, str], batch: bool) -> RequestCode:
    """The request code of a send: SEND_BATCH_MESSAGE (320) for a batch, SEND_REPLY_MESSAGE_V2
    (325) for a reply (``MSG_TYPE=reply``, see ``MQClientAPIImpl.sendMessage``), else
    SEND_MESSAGE_V2 (310). All three carry the V2 header."""
    if batch:
        return RequestCode.SEND_BATCH_MESSAGE
    if properties.get(PROPERTY_MESSAGE_TYPE) == REPLY_MESSAGE_FLAG:
        return RequestCode.SEND_REPLY_MESSAGE_V2
    return RequestCode.SEND_MESSAGE_V2


async def send_message_oneway(
    req: Requester, addr: str, header: SendMessageRequestHeaderV2, body: bytes, code: int | None = None
) -> None:
    """SEND_MESSAGE_V2 (310) as a one-way request (no result); SEND_BATCH_MESSAGE when
    ``header.batch``, or ``code`` when given (SEND_REPLY_MESSAGE_V2 for a reply).

    Raises:
        TransportError: the request could not be written.
    """
    if code is None:
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
    await req.oneway(addr, RemotingCommand.request(code, header.to_ext_fields(), body, oneway=True))


def end_transaction_command(header: EndTransactionRequestHeader, remark: str | None = None) -> RemotingCommand:
    """The oneway END_TRANSACTION (37) request of ``header``, with ``remark`` (the text of a local
    transaction's exception) as the command's remark, as ``MQClientAPIImpl.endTransactionOneway``."""
    cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=True)
    cmd.remark = remark
    return cmd


async def end_transaction_oneway(
    req: Requester, addr: str, header: EndTransactionRequestHeader, remark: str | None = None
) -> None:
    """END_TRANSACTION (37) as a oneway request (``MQClientAPIImpl.endTransactionOneway``).

    Args:
        addr: the broker that holds the half message.
        header: commit (8), rollback (12) or unknown (0) of one half message.
        remark: sent as the request's remark (the broker logs it).

    Raises:
        TransportError: the request could not be written.
    """
    await req.oneway(addr, end_transaction_command(header, remark))


# --------------------------------------------------------------------------------------------
# Pull


class PullStatus(enum.Enum):
    """Outcome of a pull (``PullStatus``), from the response code."""

    FOUND = "FOUND"  # SUCCESS
    NO_NEW_MSG = "NO_NEW_MSG"  # PULL_NOT_FOUND
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # PULL_RETRY_IMMEDIATELY
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"  # PULL_OFFSET_MOVED


_PULL_STATUS_BY_CODE: Final = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(frozen=True, slots=True)
class PullRaw:
    """Undecoded pull result (``PullResultExt`` before ``processPullResult``).

    Attributes:
        status: the pull status.
        next_begin_offset: offset to request next.
        min_offset: queue min offset.
        max_offset: queue max offset (exclusive).
        body: concatenated stored-message records (FOUND only; decode with
            :func:`rocketpipe.protocol.message.decode_records`).
        suggest_which_broker_id: broker id for the next pull of this queue (0 = master).
    """

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes
    suggest_which_broker_id: int = 0


async def pull_message(
    req: Requester,
    addr: str,
    *,
    consumer_group: str,
    mq: MessageQueue,
    queue_offset: int,
    max_msg_nums: int,
    sys_flag: int,
    commit_offset: int,
    suspend_timeout: float,
    subscription: str | None,
    sub_version: int,
    expression_type: str | None,
    timeout: float,
    max_msg_bytes: int | None = None,
) -> PullRaw:
    """PULL_MESSAGE (11).

    Args:
        suspend_timeout: how long the broker may hold the request, seconds
            (``suspendTimeoutMillis`` on the wire).
        timeout: RPC timeout, seconds; must exceed ``suspend_timeout``.
        (others: the ``PullMessageRequestHeader`` fields.)

    Raises:
        BrokerError: any other response code (FLOW_CONTROL, SUBSCRIPTION_NOT_LATEST, ...);
        TransportError: network failure or timeout.
    """
    header = PullMessageRequestHeader(
        consumer_group=consumer_group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=queue_offset,
        max_msg_nums=max_msg_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=_ms(suspend_timeout),
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
        max_msg_bytes=max_msg_bytes,
    )
    resp = await req.request(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()), timeout)
    status = _PULL_STATUS_BY_CODE.get(resp.code)  # type: ignore[call-overload]
    if status is None:
        raise error_for_response(resp.code, resp.remark)
    rh = PullMessageResponseHeader.from_ext_fields(resp.ext_fields)
    return PullRaw(
        status=status,
        next_begin_offset=rh.next_begin_offset or 0,
        min_offset=rh.min_offset or 0,
        max_offset=rh.max_offset or 0,
        body=bytes(resp.body) if status is PullStatus.FOUND else b"",
        suggest_which_broker_id=rh.suggest_which_broker_id or 0,
    )


# --------------------------------------------------------------------------------------------
# Offsets and queue metadata


async def query_consumer_offset(req: Requester, addr: str, group: str, mq: MessageQueue, timeout: float) -> int:
    """QUERY_CONSUMER_OFFSET (14).

    Raises:
        BrokerError: QUERY_NOT_FOUND (code 22) when the group has no offset, or another code.
    """
    h = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)
    resp = _check(
        await req.request(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext_fields()), timeout)
    )
    return QueryConsumerOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset or 0


async def update_consumer_offset(
    req: Requester, addr: str, group: str, mq: MessageQueue, offset: int, timeout: float, *, oneway: bool = False
) -> None:
    """UPDATE_CONSUMER_OFFSET (15), one-way (periodic persist) or acknowledged.

    Raises:
        BrokerError: refused (acknowledged mode only); TransportError: network failure.
    """
    h = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset
    )
    cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h.to_ext_fields(), oneway=oneway)
    if oneway:
        await req.oneway(addr, cmd)
    else:
        _check(await req.request(addr, cmd, timeout))


async def get_max_offset(req: Requester, addr: str, mq: MessageQueue, timeout: float) -> int:
    """GET_MAX_OFFSET (30): the next offset to be written (exclusive max).

    Raises:
        BrokerError / TransportError.
    """
    h = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    resp = _check(
        await req.request(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, h.to_ext_fields()), timeout)
    )
    return GetMaxOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset or 0


async def get_min_offset(req: Requester, addr: str, mq: MessageQueue, timeout: float) -> int:
    """GET_MIN_OFFSET (31): the smallest available offset.

    Raises:
        BrokerError / TransportError.
    """
    h = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id)
    resp = _check(
        await req.request(addr, RemotingCommand.request(RequestCode.GET_MIN_OFFSET, h.to_ext_fields()), timeout)
    )
    return GetMinOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset or 0


async def search_offset(req: Requester, addr: str, mq: MessageQueue, timestamp_ms: int, timeout: float) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP (29).

    Args:
        timestamp_ms: epoch milliseconds (already wire units).

    Raises:
        BrokerError / TransportError.
    """
    h = SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms)
    resp = _check(
        await req.request(
            addr, RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h.to_ext_fields()), timeout
        )
    )
    return SearchOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset or 0


# --------------------------------------------------------------------------------------------
# Membership, heartbeat, retry


async def heart_beat(req: Requester, addr: str, body: bytes, timeout: float) -> int:
    """HEART_BEAT (34) with an encoded ``HeartbeatData`` body.

    Returns:
        The broker's version (from the response frame).

    Raises:
        BrokerError / TransportError.
    """
    resp = _check(await req.request(addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, body), timeout))
    return resp.version


async def check_client_config(
    req: Requester, addr: str, client_id: str, group: str, subscription: SubscriptionData, timeout: float
) -> None:
    """CHECK_CLIENT_CONFIG (46): ask whether the broker accepts ``subscription`` (``checkClientInBroker``).

    Raises:
        BrokerError: SYSTEM_ERROR (filter type unsupported / disabled) or
            SUBSCRIPTION_PARSE_FAILED (:class:`~rocketpipe.errors.SubscriptionError`); TransportError.
    """
    from ..protocol.bodies import javajson as jj

    body = jj.dumps({"clientId": client_id, "group": group, "subscriptionData": subscription.to_obj()})
    _check(await req.request(addr, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body), timeout))


async def unregister_client(
    req: Requester,
    addr: str,
    client_id: str,
    timeout: float,
    *,
    producer_group: str | None = None,
    consumer_group: str | None = None,
) -> None:
    """UNREGISTER_CLIENT (35) for one group.

    Raises:
        BrokerError / TransportError.
    """
    h = UnregisterClientRequestHeader(client_id=client_id, producer_group=producer_group, consumer_group=consumer_group)
    _check(await req.request(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, h.to_ext_fields()), timeout))


async def get_consumer_id_list(req: Requester, addr: str, group: str, timeout: float) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP (38).

    Raises:
        BrokerError: SYSTEM_ERROR when the group has no live consumer; TransportError.
    """
    from ..protocol.bodies.consumer import ConsumerListBody

    h = GetConsumerListByGroupRequestHeader(consumer_group=group)
    resp = _check(
        await req.request(
            addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, h.to_ext_fields()), timeout
        )
    )
    if not resp.body:
        return []
    return [str(c) for c in ConsumerListBody.decode(bytes(resp.body)).consumer_id_list]


async def consumer_send_msg_back(
    req: Requester,
    addr: str,
    *,
    commit_log_offset: int,
    group: str,
    delay_level: int,
    origin_msg_id: str,
    origin_topic: str,
    max_reconsume_times: int,
    broker_name: str | None,
    timeout: float,
) -> None:
    """CONSUMER_SEND_MSG_BACK (36): hand a failed message back to the broker.

    Raises:
        BrokerError / TransportError.
    """
    h = ConsumerSendMsgBackRequestHeader(
        offset=commit_log_offset,
        group=group,
        delay_level=delay_level,
        origin_msg_id=origin_msg_id,
        origin_topic=origin_topic,
        unit_mode=False,
        max_reconsume_times=max_reconsume_times,
        bname=broker_name,
    )
    _check(
        await req.request(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h.to_ext_fields()), timeout)
    )


# --------------------------------------------------------------------------------------------
# Admin


async def create_topic(
    req: Requester, addr: str, topic: str, *, read_queue_nums: int, write_queue_nums: int, perm: int, timeout: float
) -> None:
    """UPDATE_AND_CREATE_TOPIC (17) to one broker.

    Raises:
        BrokerError / TransportError.
    """
    h = CreateTopicRequestHeader(
        topic=topic, read_queue_nums=read_queue_nums, write_queue_nums=write_queue_nums, perm=perm
    )
    _check(
        await req.request(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), timeout
        )
    )
