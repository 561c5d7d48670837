"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and CONSUMER_SEND_MSG_BACK (36).

Mirrors ``SendMessageProcessor`` / ``AbstractSendMessageProcessor`` (``msgCheck``,
``handleRetryAndDLQ``, ``consumerSendMsgBack``) of apache/rocketmq 5.x, with 4.9 differences
noted where they matter. Imports broker services, ``protocol`` and ``store`` types only.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.consumer import ConsumerSendMsgBackRequestHeader
from ...protocol.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from ...protocol.names import RETRY_GROUP_TOPIC_PREFIX, TIMER_TOPIC
from ...protocol.recall import build_recall_handle
from ...store import MessageBatch, MessageInner, PutResult, PutStatus
from ...store.disk import disk_util
from ...transport import DEFER, Connection, Router
from .. import retry
from ..context import BrokerContext
from ..timer import TimerMessageIllegalError, TimerNotEnabledError, illegal_remark
from ..topics import TopicConfig, is_not_allowed_send_topic, validate_topic
from ..transaction.bridge import half_message
from .common import decode_header, error, require

log = logging.getLogger(__name__)

_PUT_STATUS_CODES: dict[str, ResponseCode] = {
    "PUT_OK": ResponseCode.SUCCESS,
    "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE,
    "MESSAGE_ILLEGAL": ResponseCode.MESSAGE_ILLEGAL,
    "PROPERTIES_SIZE_EXCEEDED": ResponseCode.MESSAGE_ILLEGAL,
    "SERVICE_NOT_AVAILABLE": ResponseCode.SERVICE_NOT_AVAILABLE,
    "OS_PAGE_CACHE_BUSY": ResponseCode.SYSTEM_BUSY,
}
#: Statuses that mean "stored, but not with the requested durability": the header is filled.
_STORED_STATUSES = frozenset({"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"})
#: TopicSysFlag.FLAG_UNIT
_TOPIC_SYS_FLAG_UNIT = 0x1


def put_status_code(status: PutStatus | str) -> ResponseCode:
    """Map a store put status to a send response code (``SendMessageProcessor.handlePutMessageResult``)."""
    return _PUT_STATUS_CODES.get(status if type(status) is str else status_name(status), ResponseCode.SYSTEM_ERROR)


#: PutStatus -> name (``Enum.name`` is a descriptor call; this is a dict hit on the hot path)
_STATUS_NAMES: dict[object, str] = {st: st.name for st in PutStatus}


def status_name(status: PutStatus | str) -> str:
    """Java's ``PutMessageStatus`` name of a put status."""
    name = _STATUS_NAMES.get(status)
    if name is not None:
        return name
    return status.name if isinstance(status, PutStatus) else str(status)


class _SendHeader:
    """The attributes of :class:`SendMessageRequestHeader` the send path reads, as a plain
    object: building a frozen 18-field dataclass costs ~3 us, this ~0.4 us."""

    __slots__ = (
        "batch",
        "born_timestamp",
        "default_topic",
        "default_topic_queue_nums",
        "flag",
        "max_reconsume_times",
        "producer_group",
        "properties",
        "queue_id",
        "reconsume_times",
        "sys_flag",
        "topic",
        "unit_mode",
    )

    def __init__(
        self,
        producer_group: str,
        topic: str,
        default_topic: str,
        default_topic_queue_nums: int,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        flag: int,
        properties: str | None,
        reconsume_times: int | None,
        unit_mode: bool | None,
        max_reconsume_times: int | None,
        batch: bool | None,
    ) -> None:
        self.producer_group = producer_group
        self.topic = topic
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.flag = flag
        self.properties = properties
        self.reconsume_times = reconsume_times
        self.unit_mode = unit_mode
        self.max_reconsume_times = max_reconsume_times
        self.batch = batch


#: wire keys of (producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueId, sysFlag,
#: bornTimestamp, flag, properties, reconsumeTimes, unitMode, maxReconsumeTimes, batch)
_V2_KEYS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m")
_V1_KEYS = (
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
    "properties",
    "reconsumeTimes",
    "unitMode",
    "maxReconsumeTimes",
    "batch",
)


def _delay_level(props: dict[str, str]) -> int:
    """``Message.getDelayTimeLevel``: the ``DELAY`` property, 0 when absent or not a number."""
    try:
        return int(props.get(pm.PROPERTY_DELAY_TIME_LEVEL) or 0)
    except ValueError:
        return 0


def decode_send_header(cmd: RemotingCommand) -> SendMessageRequestHeader | _SendHeader:
    """The send header of ``cmd`` (V1 keys for SEND_MESSAGE, V2 letters otherwise).

    Well-formed headers take a direct path; anything else (a missing required key, a number
    that does not parse) goes through the typed decoders, which raise the precise
    :class:`~rocketpipe.errors.HeaderError` or apply their defaults.
    """
    ext = cmd.ext_fields or {}
    v1 = cmd.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE)
    a, b, c, d, e, f, g, hh, i, j, k, ll, m = map(ext.get, _V1_KEYS if v1 else _V2_KEYS)
    if a is not None and b is not None and c is not None:
        try:
            return _SendHeader(  # the optional fields converted inline: a call each cost 5 % of this path
                a, b, c, int(d), int(e), int(f), int(g), int(hh), i,  # type: ignore[arg-type]
                None if j is None else int(j), None if k is None else k.lower() == "true",
                None if ll is None else int(ll), None if m is None else m.lower() == "true",
            )  # fmt: skip
        except (TypeError, ValueError):
            pass
    if v1:
        return decode_header(SendMessageRequestHeader, cmd)
    return decode_header(SendMessageRequestHeaderV2, cmd).to_v1()


class SendProcessor:
    """Handlers of the send codes and of CONSUMER_SEND_MSG_BACK."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self._rand = random.Random()

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            router.register(code, self.handle_send, inline=self.handle_send_inline)
        router.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.handle_send_back)

    # ------------------------------------------------------------------ send
    async def handle_send(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Store one message or a batch; answer the send response.

        Never raises for bad input except :class:`~rocketpipe.errors.HeaderError` (SYSTEM_ERROR).
        """
        out = self._send(cmd, conn)
        if isinstance(out, RemotingCommand):
            return out
        inner, queue_id, result, ext_extra = out
        status = "PUT_OK" if await self.broker.wait_durable(result) else "FLUSH_DISK_TIMEOUT"
        return self._send_response(cmd, inner, queue_id, result, status, ext_extra)

    def handle_send_inline(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | object:
        """:meth:`handle_send` run in the connection's read callback (no task per request).

        Same outcome; SYNC_FLUSH requests are deferred to :meth:`handle_send` (they await the
        group commit).
        """
        if self.broker.config.flush_disk_type == "SYNC_FLUSH":
            return DEFER
        out = self._send(cmd, conn)
        if isinstance(out, RemotingCommand):
            return out
        inner, queue_id, result, ext_extra = out  # pragma: no cover - ASYNC_FLUSH never waits
        return self._send_response(cmd, inner, queue_id, result, "PUT_OK", ext_extra)

    def _send(
        self, cmd: RemotingCommand, conn: Connection
    ) -> RemotingCommand | tuple[MessageInner | None, int, PutResult, dict[str, str]]:
        """Decode, check and store; return the response, or what :meth:`_send_response` needs
        once the durability wait (SYNC_FLUSH, ``WAIT=true``) is over (the stored message; None
        for a batch)."""
        b = self.broker
        ext_extra = {"MSG_REGION": b.config.region_id, "TRACE_ON": "true" if b.config.trace_on else "false"}
        h = decode_send_header(cmd)
        resp = self._check_and_send(cmd, conn, h)
        if isinstance(resp, RemotingCommand):
            resp.ext_fields.update(ext_extra)
            return resp
        payload, queue_id = resp
        inner: MessageInner | None
        if isinstance(payload, MessageBatch):  # the batch's WAIT decides, as Java's MessageExtBatch
            inner, result, wait = None, b.put_batch(payload), payload.wait
        else:
            inner = payload
            result, wait = b.put_message(inner), inner.get_property(pm.PROPERTY_WAIT_STORE_MSG_OK)
        status = status_name(result.status)
        if status == "PUT_OK" and wait != "false" and b.config.flush_disk_type == "SYNC_FLUSH":
            return inner, queue_id, result, ext_extra
        return self._send_response(cmd, inner, queue_id, result, status, ext_extra)

    def _put_failed_remark(self, status: str, result: PutResult) -> str:
        """The remark ``SendMessageProcessor.handlePutMessageResult`` gives a failed put (the
        store's own when it gave one: a malformed batch)."""
        if result.remark is not None:
            return result.remark
        if status == "SERVICE_NOT_AVAILABLE":
            return (
                "service not available now. It may be caused by one of the following reasons: "
                f"the broker's disk is full [{disk_util(self.broker.store.config.root_dir)}], "
                "messages are put to the slave, message store has been shut down, etc."
            )
        if status == "CREATE_MAPPED_FILE_FAILED":
            return "create mapped file failed, server is busy or broken."
        return f"put message failed: {status}"

    def _send_response(
        self,
        cmd: RemotingCommand,
        inner: MessageInner | None,
        queue_id: int,
        result: PutResult,
        status: str,
        ext_extra: dict[str, str],
    ) -> RemotingCommand:
        """The send response; ``inner`` is the stored message, None for a batch."""
        code = put_status_code(status)
        if status not in _STORED_STATUSES:
            r = error(cmd, code, self._put_failed_remark(status, result))
            r.ext_fields.update(ext_extra)
            return r
        # SendMessageResponseHeader(...).to_ext_fields(), built directly (hot path)
        ext = {
            "msgId": ",".join(result.msg_ids),
            "queueId": str(queue_id),
            "queueOffset": str(result.queue_offset),
        }
        if inner is not None:
            uniq = inner.get_property(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            if uniq:
                ext["transactionId"] = uniq
            if inner.topic == TIMER_TOPIC:
                handle = self._recall_handle(inner, uniq)
                if handle is not None:
                    ext["recallHandle"] = handle
        ext.update(ext_extra)
        return cmd.response(int(code), None if code == ResponseCode.SUCCESS else status, ext)

    def _recall_handle(self, inner: MessageInner, uniq: str | None) -> str | None:
        """``SendMessageProcessor.attachRecallHandle`` for a stored timer message: the handle of
        its real topic, this broker, ``TIMER_OUT_MS`` + 1 and its ``UNIQ_KEY``; none for a
        ``%RETRY%`` topic (batches and send-backs never get here). A message without
        ``UNIQ_KEY`` gets ``"null"`` there, as Java's ``String.join`` of a null id."""
        due = inner.get_property(pm.PROPERTY_TIMER_OUT_MS)
        real_topic = inner.get_property(pm.PROPERTY_REAL_TOPIC)
        if due is None or real_topic is None or real_topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return None
        return build_recall_handle(real_topic, self.broker.config.broker_name, str(int(due) + 1), uniq or "null")

    def _check_and_send(
        self, cmd: RemotingCommand, conn: Connection, h: SendMessageRequestHeader | _SendHeader
    ) -> RemotingCommand | tuple[MessageInner | MessageBatch, int]:
        """``SendMessageProcessor.sendMessage`` / ``sendBatchMessage`` up to the store put.

        :meth:`_msg_check`, then the queue (a random writable one for ``queueId < 0``), the body
        size and the stored sysflag (MULTI_TAGS for a MULTI_TAG topic); then the message(s) to
        store: :meth:`_build_batch` or :meth:`_build_single`.

        Returns:
            The error response, or (the message or batch to store, queue id).
        """
        if type(h) is not _SendHeader:  # _SendHeader is only built with these set
            for name in ("producer_group", "topic", "queue_id", "born_timestamp"):
                require(getattr(h, name), name)
        topic: str = h.topic  # type: ignore[assignment]
        tc = self._msg_check(cmd, h, topic)
        if isinstance(tc, RemotingCommand):
            return tc
        queue_id: int = h.queue_id  # type: ignore[assignment]
        if queue_id < 0:
            queue_id = self._rand.randrange(1 << 30) % max(1, tc.write_queue_nums)
        body = bytes(cmd.body)
        max_size = self.broker.config.max_message_size
        if len(body) > max_size:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, f"the message body size over max value, MAX: {max_size}")
        props = pm.string_to_properties(h.properties or "")
        sys_flag = (h.sys_flag or 0) | (sf.MULTI_TAGS_FLAG if tc.topic_filter_type == "MULTI_TAG" else 0)
        if h.batch or cmd.code == RequestCode.SEND_BATCH_MESSAGE:
            return self._build_batch(cmd, conn, h, topic, queue_id, body, props, sys_flag)
        return self._build_single(cmd, conn, h, topic, queue_id, body, props, sys_flag)

    def _msg_check(
        self, cmd: RemotingCommand, h: SendMessageRequestHeader | _SendHeader, topic: str
    ) -> RemotingCommand | TopicConfig:
        """``AbstractSendMessageProcessor.msgCheck``: the topic's config, or the error response.

        The topic name (unless already in the table: names there were validated when they were
        created) and the forbidden system topics; a missing topic is auto-created
        (:meth:`_create_topic_in_send`); an order topic on a broker without write permission;
        a queue id past ``max(read, write)`` queues.
        """
        b = self.broker
        tc = b.topics.get(topic)
        if tc is None:
            problem = validate_topic(topic)
            if problem is not None:
                return error(cmd, ResponseCode.INVALID_PARAMETER, problem)
        if is_not_allowed_send_topic(topic):
            return error(cmd, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        if tc is None:
            tc = self._create_topic_in_send(topic, h)
            if tc is None:
                return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not sf.is_writeable(b.config.broker_permission) and tc.order:
            return error(cmd, ResponseCode.NO_PERMISSION, f"the broker[{b.config.host}] sending message is forbidden")
        queue_id: int = h.queue_id  # type: ignore[assignment]
        if queue_id >= tc.queue_nums:
            return error(
                cmd,
                ResponseCode.INVALID_PARAMETER,
                f"request queueId[{queue_id}] is illegal, topic:{topic} topicConfig.writeQueueNums:"
                f"{tc.write_queue_nums} topicConfig.readQueueNums:{tc.read_queue_nums}",
            )
        return tc

    def _create_topic_in_send(self, topic: str, h: SendMessageRequestHeader | _SendHeader) -> TopicConfig | None:
        """``createTopicInSendMessageMethod`` from the header's default topic; a retry topic
        without a usable template gets one queue, perm RW (``createTopicInSendMessageBackMethod``).

        Returns:
            The created config (the broker re-registers), or None: TOPIC_NOT_EXIST.
        """
        b = self.broker
        unit = _TOPIC_SYS_FLAG_UNIT if h.unit_mode else 0
        tc = b.topics.create_in_send(topic, h.default_topic, h.default_topic_queue_nums or 0, unit, b.clock.now_ms())
        if tc is None and retry.is_retry_topic(topic):
            tc = b.topics.create_if_missing(topic, 1, sf.PERM_READ | sf.PERM_WRITE, unit, b.clock.now_ms())
        if tc is not None:
            b.topics_changed()
        return tc

    def _build_single(
        self,
        cmd: RemotingCommand,
        conn: Connection,
        h: SendMessageRequestHeader | _SendHeader,
        topic: str,
        queue_id: int,
        body: bytes,
        props: dict[str, str],
        sys_flag: int,
    ) -> RemotingCommand | tuple[MessageInner | MessageBatch, int]:
        """The one message of a SEND_MESSAGE(_V2) (``sendMessage`` after ``msgCheck``).

        :meth:`_retry_redirect` (``handleRetryAndDLQ``); a ``UNIQ_KEY`` when the producer sent
        none; ``CLUSTER``; then either the half message of a transaction (``TRAN_MSG=true``,
        unless it is an old client's delayed send-back: :func:`~..transaction.bridge.half_message`;
        NO_PERMISSION with ``reject_transaction_message``) or the delay level
        or timer (:meth:`~rocketpipe.broker.context.BrokerContext.apply_delay`; a bad timer is
        MESSAGE_ILLEGAL with Java's remark).
        """
        b = self.broker
        reconsume = h.reconsume_times or 0
        half = props.get(pm.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true" and not (
            reconsume > 0 and _delay_level(props) > 0
        )
        if half and b.config.reject_transaction_message:
            return error(
                cmd, ResponseCode.NO_PERMISSION, f"the broker[{b.config.host}] sending transaction message is forbidden"
            )
        if retry.is_retry_topic(topic):
            redirected = self._retry_redirect(cmd, topic, props, reconsume, h.max_reconsume_times)
            if isinstance(redirected, RemotingCommand):
                return redirected
            if redirected is not None:
                topic, queue_id = redirected
        if pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in props:
            props[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = b.unique_ids.next_id()
        # 5.x buildMsgContext: every stored message carries the broker's region and trace switch
        props[pm.PROPERTY_MSG_REGION] = b.config.region_id
        props[pm.PROPERTY_TRACE_SWITCH] = "true" if b.config.trace_on else "false"
        props[pm.PROPERTY_CLUSTER] = b.config.broker_cluster_name
        # properties over 32767 bytes: the store answers PROPERTIES_SIZE_EXCEEDED -> MESSAGE_ILLEGAL
        inner = self._inner(
            topic, queue_id, body, h.flag or 0, props, sys_flag, h.born_timestamp or 0, conn.remote_address, reconsume
        )
        if half:
            return half_message(inner), queue_id
        try:
            return b.apply_delay(inner), queue_id
        except TimerMessageIllegalError:  # WHEEL_TIMER_MSG_ILLEGAL
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, illegal_remark(b.config.timer_max_delay_sec))
        except TimerNotEnabledError as exc:  # WHEEL_TIMER_NOT_ENABLE
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(exc))

    def _retry_redirect(
        self, cmd: RemotingCommand, topic: str, props: dict[str, str], reconsume: int, header_max: int | None
    ) -> RemotingCommand | tuple[str, int] | None:
        """``handleRetryAndDLQ`` (5.x): a client send into ``%RETRY%<group>`` goes to the DLQ when
        past its max, or at once while the group holds any unexpired orderly queue lock here.

        The DLQ copy is stored with ``DELAY=-1`` (Java puts it into the request's property map,
        which replaces the message's own delay level), so it is stored at once, not scheduled.
        """
        b = self.broker
        group = retry.group_of_retry_topic(topic)
        gcfg = b.groups_config.find(group)
        if gcfg is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
        max_times = retry.max_reconsume_times(header_max, gcfg.retry_max_times, cmd.version)
        now = b.clock.now_ms()
        orderly = not b.locks.is_lock_all_expired(group, now)
        if not (retry.retry_send_goes_to_dlq(reconsume, max_times) or orderly):
            return None
        if orderly:
            log.info(
                "group %s holds unexpired queue locks (orderly): retry message to DLQ at once, reconsume=%d",
                group,
                reconsume,
            )
        dlq = retry.dlq_topic(group)
        rw = sf.PERM_READ | sf.PERM_WRITE
        if b.topics.get(dlq) is None:
            b.topics.create_if_missing(dlq, retry.DLQ_NUMS_PER_GROUP, rw, 0, now)
            b.topics_changed()
        props[pm.PROPERTY_DELAY_TIME_LEVEL] = "-1"
        return dlq, 0

    def _build_batch(
        self,
        cmd: RemotingCommand,
        conn: Connection,
        h: SendMessageRequestHeader | _SendHeader,
        topic: str,
        queue_id: int,
        body: bytes,
        envelope: dict[str, str],
        sys_flag: int,
    ) -> RemotingCommand | tuple[MessageInner | MessageBatch, int]:
        b = self.broker
        if retry.is_retry_topic(topic):
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}")
        if len(topic) > 127:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(topic)}")
        if sys_flag & sf.TRANSACTION_TYPE_MASK not in (sf.TRANSACTION_NOT_TYPE, sf.TRANSACTION_COMMIT_TYPE):
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, "batch messages cannot be transactional")
        try:
            level = int(envelope.get(pm.PROPERTY_DELAY_TIME_LEVEL, "0") or 0)
        except ValueError:
            level = 0
        if level > 0:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, "batch messages cannot carry a delay level")
        if not body:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, "empty batch body")
        # 5.x buildMsgContext puts MSG_REGION / TRACE_ON into the envelope, whose properties the
        # encoder appends to every message's; then CLUSTER
        tail = (
            f"{pm.PROPERTY_MSG_REGION}\x01{b.config.region_id}\x02"
            f"{pm.PROPERTY_TRACE_SWITCH}\x01{'true' if b.config.trace_on else 'false'}\x02"
            f"{pm.PROPERTY_CLUSTER}\x01{b.config.broker_cluster_name}\x02"
        )
        batch = MessageBatch(
            topic,
            queue_id,
            body,
            tail,
            envelope.get(pm.PROPERTY_WAIT_STORE_MSG_OK),
            b.unique_ids.next_id,
            sys_flag,
            h.born_timestamp or 0,
            conn.remote_address,
            b.address,
            h.reconsume_times or 0,
        )
        return batch, queue_id

    def _inner(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        flag: int,
        properties: dict[str, str] | str,
        sys_flag: int,
        born_timestamp: int,
        born_host: str,
        reconsume_times: int,
    ) -> MessageInner:
        """A message to store (store host: this broker); :meth:`_build_batch` inlines the same call."""
        return MessageInner(
            topic,
            queue_id,
            body,
            flag,
            properties,
            sys_flag,
            born_timestamp,
            born_host,
            self.broker.address,
            reconsume_times,
        )

    # ------------------------------------------------------------------ send back
    async def handle_send_back(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """CONSUMER_SEND_MSG_BACK: re-store a failed message into ``%RETRY%`` (delayed) or ``%DLQ%``.

        Mirrors ``AbstractSendMessageProcessor.consumerSendMsgBack``.
        """
        b = self.broker
        h = decode_header(ConsumerSendMsgBackRequestHeader, cmd)
        require(h.offset, "offset")
        require(h.group, "group")
        group: str = h.group  # type: ignore[assignment]
        gcfg = b.groups_config.find(group)
        if gcfg is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
        if not sf.is_writeable(b.config.broker_permission):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the broker[{b.config.host}] sending message is forbidden")
        if gcfg.retry_queue_nums <= 0:
            return cmd.response(ResponseCode.SUCCESS)
        record = b.store.look_message_by_offset(h.offset)  # type: ignore[arg-type]
        if record is None:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        max_times = retry.max_reconsume_times(h.max_reconsume_times, gcfg.retry_max_times, cmd.version)
        decision = retry.decide_send_back(
            group=group,
            reconsume_times=record.reconsume_times,
            delay_level=h.delay_level or 0,
            max_times=max_times,
            retry_queue_nums=gcfg.retry_queue_nums,
            random_int=self._rand.randrange(1 << 30),
        )
        if decision is None:  # pragma: no cover - retry_queue_nums checked above
            return cmd.response(ResponseCode.SUCCESS)
        rw = sf.PERM_READ | sf.PERM_WRITE
        n = retry.DLQ_NUMS_PER_GROUP if decision.is_dlq else gcfg.retry_queue_nums
        existed = b.topics.get(decision.topic) is not None
        tc = b.topics.create_if_missing(
            decision.topic, n, rw, _TOPIC_SYS_FLAG_UNIT if h.unit_mode else 0, b.clock.now_ms()
        )
        if not existed:
            b.topics_changed()
        if not sf.is_writeable(tc.perm):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the topic[{decision.topic}] sending message is forbidden")
        props: dict[str, Any] = dict(record.properties)
        props.setdefault(pm.PROPERTY_RETRY_TOPIC, record.topic)
        props[pm.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        # Java: msgExt.setDelayTimeLevel(0) on the DLQ path, i.e. the copy carries DELAY=0 (4.9.8 and 5.x)
        props[pm.PROPERTY_DELAY_TIME_LEVEL] = "0" if decision.is_dlq else str(decision.delay_level)
        if not props.get(pm.PROPERTY_ORIGIN_MESSAGE_ID):
            props[pm.PROPERTY_ORIGIN_MESSAGE_ID] = record.offset_msg_id
        inner = self._inner(
            decision.topic, decision.queue_id, record.body, record.flag, props, record.sys_flag,
            record.born_timestamp, record.born_host, decision.reconsume_times,
        )  # fmt: skip
        result: PutResult = b.put_message(b.apply_delay(inner))
        if status_name(result.status) != "PUT_OK":
            return error(cmd, ResponseCode.SYSTEM_ERROR, status_name(result.status))
        log.debug(
            "send back group=%s offset=%s to topic=%s queue=%d level=%d reconsume=%d",
            group,
            h.offset,
            decision.topic,
            decision.queue_id,
            decision.delay_level,
            decision.reconsume_times,
        )
        return cmd.response(ResponseCode.SUCCESS)


__all__ = ["SendProcessor", "put_status_code", "status_name"]
