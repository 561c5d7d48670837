"""What the console shows and does, over :class:`~rocketpipe.client.Admin` (console).

Every page's data comes from one :class:`ConsoleService` method that returns plain
dataclasses; the Starlette handlers (``app.py``) only render them. Imports the public client
API (``rocketpipe.client``), ``protocol`` (names, message shapes) and ``errors``.

Write actions (create / delete topic, reset offset, DLQ resend) are methods too; the app
refuses them unless the console was started with ``allow_writes``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from ..client import Admin, ClientConfig, Producer, SessionCredentials
from ..client.admin import MessageTrack
from ..client.trace import TraceView
from ..errors import BrokerError, RocketMQError, TopicNotExistError
from ..protocol.bodies.assignment import MessageRequestModeSerializeWrapper
from ..protocol.bodies.consumer import ConsumerRunningInfo
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    Message,
    MessageExt,
    MessageQueue,
    decode_records,
)
from ..protocol.sysflag import PERM_READ

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
RESEND_PRODUCER_GROUP = "CONSOLE_RESEND_GROUP"
"""Producer group of the console's DLQ resends."""
CONSOLE_PRODUCER_GROUP = "CONSOLE_PRODUCER_GROUP"
"""Producer group of the messages sent from a topic page."""
BODY_PREVIEW_BYTES = 512
"""Bytes of a message body shown in a list (the message page shows up to 64 KiB)."""
MAX_BROWSE = 64
"""Messages at most per queue when browsing a time range (and per broker for a key search)."""
OVERVIEW_PARALLEL = 8
"""Groups asked at a time for the groups page (each costs 2 requests or more)."""
# properties the broker or the consumer's send-back set; a resent copy starts clean
_RESEND_DROPPED = frozenset(
    {
        PROPERTY_DELAY_TIME_LEVEL,
        PROPERTY_RECONSUME_TIME,
        PROPERTY_MAX_RECONSUME_TIMES,
        PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        "MIN_OFFSET",
        "MAX_OFFSET",
        "CONSUME_START_TIME",
        "REAL_TOPIC",
        "REAL_QID",
        "CLUSTER",
        "WAIT",
    }
)


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """How the console reaches the cluster.

    Attributes:
        namesrv_addr: ``;``-separated name servers (``host:port``).
        allow_writes: allow create / delete topic, reset offset and DLQ resend.
        credentials: ACL access key / secret key that sign every request, or None.
        request_timeout: seconds per request to a name server or broker.
    """

    namesrv_addr: str
    allow_writes: bool = False
    credentials: SessionCredentials | None = None
    request_timeout: float = 5.0

    def client_config(self) -> ClientConfig:
        """The :class:`ClientConfig` of the console's admin and resend producer."""
        return ClientConfig(
            namesrv_addr=self.namesrv_addr, credentials=self.credentials, request_timeout=self.request_timeout
        )


@dataclass(slots=True)
class BrokerRow:
    """One broker of the cluster page.

    Attributes:
        cluster, broker_name, broker_id (0 = master), addr: from the name server.
        runtime: GET_BROKER_RUNTIME_INFO key -> value (empty if the broker did not answer).
        config: GET_BROKER_CONFIG key -> value (empty if unsupported).
        error: why the broker did not answer, or None.
    """

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    runtime: dict[str, str] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def role(self) -> str:
        """``MASTER`` / ``SLAVE``, or the broker's ``brokerRole`` setting when it tells."""
        return self.config.get("brokerRole") or ("MASTER" if self.broker_id == 0 else "SLAVE")

    @property
    def version(self) -> str:
        """``brokerVersionDesc`` (e.g. ``V5_3_3``), or ``?``."""
        return self.runtime.get("brokerVersionDesc", "?")

    @property
    def flush_disk_type(self) -> str:
        """``ASYNC_FLUSH`` / ``SYNC_FLUSH`` when the broker tells (config), else ``?``."""
        return self.config.get("flushDiskType", "?")

    @property
    def disk_ratio_percent(self) -> str:
        """Commit-log disk use in percent (``commitLogDiskRatio`` × 100), or ``?``."""
        return _percent(self.runtime.get("commitLogDiskRatio"))

    def tps(self, key: str) -> float:
        """The 10 s figure of a ``"tps10 tps60 tps600"`` runtime value (``putTps``,
        ``getTransferedTps``), messages per second; 0.0 when absent."""
        return tps_of(self.runtime.get(key))


@dataclass(slots=True)
class QueueRow:
    """One queue of a topic: broker, id, offsets (max = next to be written), last store ms."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_ms: int


@dataclass(slots=True)
class TopicDetail:
    """The topic page: queues, route brokers with perms, consumer groups reading it."""

    topic: str
    queues: list[QueueRow]
    brokers: list[tuple[str, int, int, int]]  # broker name, read queues, write queues, perm
    groups: list[str]
    error: str | None = None

    @property
    def total_messages(self) -> int:
        """Messages stored in every queue (sum of max − min)."""
        return sum(q.max_offset - q.min_offset for q in self.queues)


@dataclass(slots=True)
class LagRow:
    """One queue of a group's progress: broker (max) offset, committed offset, lag = difference."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def lag(self) -> int:
        """Messages not yet consumed (broker offset − consumer offset)."""
        return self.broker_offset - self.consumer_offset


@dataclass(slots=True)
class GroupDetail:
    """The group page: online members, subscriptions, consume mode and lag per queue."""

    group: str
    members: list[tuple[str, str, str, int]]  # client id, address, language, version
    subscriptions: list[tuple[str, str, str]]  # topic, expression, expression type
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None
    lag_rows: list[LagRow]
    consume_tps: float
    members_error: str | None = None
    lag_error: str | None = None

    @property
    def total_lag(self) -> int:
        """Sum of the queues' lag (messages)."""
        return sum(r.lag for r in self.lag_rows)


@dataclass(slots=True)
class MessageView:
    """A stored message as the console shows it.

    Attributes:
        msg: the decoded message.
        body_text: the body as UTF-8 (invalid bytes replaced), cut to ``preview`` bytes.
        truncated: the body was longer than the preview.
    """

    msg: MessageExt
    body_text: str
    truncated: bool

    @classmethod
    def of(cls, msg: MessageExt, preview: int = BODY_PREVIEW_BYTES) -> MessageView:
        """Wrap ``msg`` with a body preview of ``preview`` bytes."""
        body = bytes(msg.body)
        return cls(msg, body[:preview].decode("utf-8", "replace"), len(body) > preview)

    @property
    def msg_id(self) -> str:
        """The client msg id (``UNIQ_KEY``), else the offset msg id."""
        return self.msg.msg_id or self.msg.offset_msg_id or ""


def tps_of(value: str | None) -> float:
    """The first figure of a ``"tps10 tps60 tps600"`` runtime value; 0.0 when absent or bad."""
    try:
        return float((value or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


def _num(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def _percent(value: str | None) -> str:
    try:
        return f"{float(value or ''):.1%}"
    except ValueError:
        return "?"


def topic_kind(topic: str) -> str:
    """``retry`` (``%RETRY%…``), ``dlq`` (``%DLQ%…``), ``system`` (reserved names) or ``normal``."""
    if topic.startswith(RETRY_PREFIX):
        return "retry"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    system = {"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC"}
    if topic in system or topic.startswith(("rmq_sys_", "RMQ_SYS_")) or topic.endswith("_REPLY_TOPIC"):
        return "system"
    return "normal"


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class ConsoleService:
    """The console's reads and writes on one cluster, over one :class:`Admin`.

    Args:
        settings: the name servers, write permission and credentials.
    """

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.admin = Admin(config=settings.client_config())

    async def close(self) -> None:
        """Close the admin's connections."""
        await self.admin.close()

    # ------------------------------------------------------------------ cluster

    async def brokers(self, with_config: bool = True) -> list[BrokerRow]:
        """Every broker the name server knows, with its runtime info and (``with_config``) its
        config, asked in parallel."""
        info = await self.admin.examine_broker_cluster_info()
        rows: list[BrokerRow] = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                bd = info.broker_addr_table.get(name)
                if bd is None:
                    continue
                for bid, addr in sorted(bd.broker_addrs.items()):
                    rows.append(BrokerRow(cluster, name, int(bid), addr))

        async def fill(row: BrokerRow) -> None:
            try:
                row.runtime = await self.admin.fetch_broker_runtime_stats(row.addr)
            except RocketMQError as e:
                row.error = _err(e)
                return
            if not with_config:
                return
            try:
                row.config = await self.admin.get_broker_config(row.addr)
            except RocketMQError:
                row.config = {}

        await asyncio.gather(*(fill(r) for r in rows))
        return rows

    # ------------------------------------------------------------------ topics

    async def topics(self) -> list[tuple[str, str]]:
        """Every topic the name server knows as (name, kind), sorted by name."""
        return sorted((t, topic_kind(t)) for t in await self.admin.fetch_all_topic_list())

    async def topic_detail(self, topic: str) -> TopicDetail:
        """The topic's queues (min / max offsets, last store time), route and consumer groups."""
        route = await self.admin.topic_route(topic)
        brokers = sorted((q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas)
        queues: list[QueueRow] = []
        error: str | None = None
        try:
            stats = await self.admin.examine_topic_stats(topic)
            for mq, off in sorted(stats.offset_table.items()):
                queues.append(
                    QueueRow(mq.broker_name, mq.queue_id, off.min_offset, off.max_offset, off.last_update_timestamp)
                )
        except RocketMQError as e:
            error = _err(e)
        try:
            groups = sorted(await self.admin.query_topic_consume_by_who(topic))
        except RocketMQError:
            groups = []
        return TopicDetail(topic, queues, brokers, groups, error)

    async def topic_offsets(self, topic: str) -> tuple[int, int]:
        """(epoch ms, sum of the queues' max offsets): two reads a second apart give messages/s."""
        stats = await self.admin.examine_topic_stats(topic)
        return int(time.time() * 1000), sum(o.max_offset for o in stats.offset_table.values())

    async def create_topic(self, topic: str, queue_nums: int) -> None:
        """Create ``topic`` with ``queue_nums`` read / write queues on every master."""
        await self.admin.create_topic(topic, queue_nums)

    async def send_message(
        self, topic: str, body: str, tags: str | None, keys: str | None
    ) -> tuple[str, str, int, int]:
        """Send one message to ``topic`` (rocketmq-dashboard's "send message"): the UTF-8 ``body``,
        optional tags and space-separated keys, producer group :data:`CONSOLE_PRODUCER_GROUP`.

        Returns:
            (msg id, broker name, queue id, queue offset) of the stored message.
        """
        msg = Message.build(topic, body.encode("utf-8"), tags=tags or None, keys=(keys or "").split() or None)
        async with Producer(CONSOLE_PRODUCER_GROUP, config=self.settings.client_config()) as producer:
            r = await producer.send(msg)
        return r.msg_id, r.message_queue.broker_name, r.message_queue.queue_id, r.queue_offset

    async def delete_topic(self, topic: str) -> list[str]:
        """Delete ``topic`` from the brokers of every cluster that routes it and from the name servers.

        Returns:
            The broker addresses it was deleted on.
        """
        route = await self.admin.topic_route(topic)
        clusters = sorted({bd.cluster for bd in route.broker_datas})
        done: list[str] = []
        for cluster in clusters:
            done.extend(await self.admin.delete_topic(topic, cluster))
        return done

    # ------------------------------------------------------------------ groups

    async def groups(self) -> list[str]:
        """Consumer groups, as the name server's ``%RETRY%<group>`` topics name them, sorted."""
        return sorted(
            t[len(RETRY_PREFIX) :] for t in await self.admin.fetch_all_topic_list() if t.startswith(RETRY_PREFIX)
        )

    async def group_overview(self) -> list[GroupDetail]:
        """Every group of :meth:`groups` with its members, consume mode and lag (asked for
        :data:`OVERVIEW_PARALLEL` groups at a time)."""
        gate = asyncio.Semaphore(OVERVIEW_PARALLEL)

        async def one(group: str) -> GroupDetail:
            async with gate:
                return await self.group_detail(group)

        return list(await asyncio.gather(*(one(g) for g in await self.groups())))

    async def producers(self, topic: str, group: str) -> list[tuple[str, str, str, int]]:
        """The producer clients of ``group`` connected to the brokers of ``topic``:
        (client id, address, language, version)."""
        try:
            conns = await self.admin.examine_producer_connection_info(group, topic)
        except BrokerError as e:  # a broker that knows no producer of the group: "... not exist"
            if "not exist" in str(e):
                return []
            raise
        return sorted({(c.client_id, c.client_addr, c.language, c.version) for c in conns})

    async def group_detail(self, group: str) -> GroupDetail:
        """Members (consumer connections), subscriptions, consume mode and lag per queue."""
        detail = GroupDetail(group, [], [], None, None, None, [], 0.0)
        try:
            cc = await self.admin.examine_consumer_connection_info(group)
            detail.members = sorted((c.client_id, c.client_addr, c.language, c.version) for c in cc.connection_set)
            detail.subscriptions = sorted(
                (s.topic, s.sub_string, s.expression_type or "TAG") for s in cc.subscription_table.values()
            )
            detail.consume_type = cc.consume_type
            detail.message_model = cc.message_model
            detail.consume_from_where = cc.consume_from_where
        except RocketMQError as e:
            detail.members_error = _err(e)
        try:
            stats = await self.admin.examine_consume_stats(group)
            detail.consume_tps = stats.consume_tps
            detail.lag_rows = [
                LagRow(mq.topic, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset, w.last_timestamp)
                for mq, w in sorted(stats.offset_table.items())
            ]
        except RocketMQError as e:
            detail.lag_error = _err(e)
        return detail

    async def client_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        """One consumer client's running info (GET_CONSUMER_RUNNING_INFO through a broker):
        settings, subscriptions, per-queue process-queue state and per-topic TPS figures."""
        return await self.admin.get_consumer_running_info(group, client_id)

    async def group_tps(self, group: str) -> dict[str, float]:
        """The members' own statistics summed over the group: ``pull`` (pullTPS) and
        ``consume_ok`` / ``consume_failed`` (consumeOKTPS / consumeFailedTPS), messages per
        second over the last minute; empty when no member is online."""
        try:
            cc = await self.admin.examine_consumer_connection_info(group)
        except RocketMQError:
            return {}
        infos = await asyncio.gather(
            *(self.admin.get_consumer_running_info(group, c.client_id) for c in cc.connection_set),
            return_exceptions=True,
        )
        out = {"pull": 0.0, "consume_ok": 0.0, "consume_failed": 0.0}
        keys = {"pull": "pullTPS", "consume_ok": "consumeOKTPS", "consume_failed": "consumeFailedTPS"}
        for info in infos:
            if isinstance(info, BaseException):
                continue
            for status in info.status_table.values():
                for name, key in keys.items():
                    out[name] += _num(status.get(key))
        return out

    async def request_modes(self, group: str) -> tuple[list[tuple[str, str, int, str]], str | None]:
        """The 5.x consume (request) modes set for ``group``: (topic, PULL / POP, pop share
        queue num, broker address) per master that has one, read with
        GET_ALL_MESSAGE_REQUEST_MODE; a topic without an entry is consumed in PULL mode.
        Also the error of a broker that cannot tell (Apache 4.x), else None."""
        info = await self.admin.examine_broker_cluster_info()
        masters = sorted(a for bd in info.broker_addr_table.values() for bid, a in bd.broker_addrs.items() if bid == 0)
        rows: list[tuple[str, str, int, str]] = []
        error: str | None = None
        for addr in masters:
            cmd = RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
            try:
                resp = await self.admin.runtime.pool.request(addr, cmd, self.settings.request_timeout)
            except RocketMQError as e:
                error = _err(e)
                continue
            if resp.code != ResponseCode.SUCCESS:
                error = f"{addr}: code {resp.code} {resp.remark or ''}".strip()
                continue
            table = MessageRequestModeSerializeWrapper.decode(bytes(resp.body or b"{}"))
            for topic, groups in table.message_request_mode_map.items():
                if (body := groups.get(group)) is not None:
                    rows.append((topic, body.mode.value, body.pop_share_queue_num, addr))
        return sorted(rows), error

    async def set_consume_mode(self, group: str, topic: str, mode: str, pop_share_queue_num: int) -> list[str]:
        """Set how ``group`` consumes ``topic``: ``PULL`` or ``POP`` (``mqadmin setConsumeMode``,
        5.x brokers). Returns the broker addresses that took it."""
        return await self.admin.set_message_request_mode(topic, group, mode, pop_share_queue_num)

    async def reset_offset(self, group: str, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets on ``topic`` to the first message stored at or after
        ``timestamp_ms`` (epoch ms; -1 = the end). Returns the new offset per queue."""
        return await self.admin.reset_offset_by_timestamp(topic, group, timestamp_ms)

    # ------------------------------------------------------------------ messages

    async def search_by_key(self, topic: str, key: str, begin_ms: int, end_ms: int) -> list[MessageView]:
        """Messages of ``topic`` indexed under ``key`` and stored in [begin_ms, end_ms]."""
        found = await self.admin.query_message(topic, key, MAX_BROWSE, begin_ms, end_ms)
        return [MessageView.of(m) for m in found.message_list]

    async def search_by_id(self, topic: str, msg_id: str) -> MessageView:
        """The message of ``msg_id`` (offset msg id or client msg id) in ``topic``, 64 KiB of body shown."""
        found = await self.admin.query_message_by_unique_key(topic, msg_id, 1)
        if found:
            return MessageView.of(found[0], 64 * 1024)
        try:  # an offset msg id (store host + commit-log offset)
            msg = await self.admin.view_message(msg_id, topic)
        except (RocketMQError, ValueError, OverflowError) as e:
            raise RocketMQError(f"no message {msg_id!r} in {topic!r}") from e
        if msg.topic != topic:
            raise RocketMQError(f"message {msg_id!r} is in {msg.topic!r}, not {topic!r}")
        return MessageView.of(msg, 64 * 1024)

    async def view(self, offset_msg_id: str) -> MessageView:
        """The message stored at ``offset_msg_id``, 64 KiB of body shown."""
        return MessageView.of(await self.admin.view_message(offset_msg_id), 64 * 1024)

    async def tracks(self, msg: MessageExt) -> tuple[list[MessageTrack], str | None]:
        """For each consumer group of the message's topic: CONSUMED, NOT_CONSUME_YET, NOT_ONLINE …
        (``messageTrackDetail``), and the error when that could not be asked."""
        try:
            return await self.admin.message_track_detail(msg), None
        except RocketMQError as e:
            return [], _err(e)

    async def traces(self, msg_id: str) -> tuple[list[TraceView], str | None]:
        """The message-trace records of ``msg_id`` in ``RMQ_SYS_TRACE_TOPIC`` (empty, with the
        reason, when there is no trace topic or nothing was traced)."""
        try:
            return await self.admin.query_trace(msg_id), None
        except TopicNotExistError:
            return [], "the cluster has no RMQ_SYS_TRACE_TOPIC"
        except RocketMQError as e:
            return [], _err(e)

    async def browse(self, topic: str, begin_ms: int, end_ms: int, per_queue: int = MAX_BROWSE) -> list[MessageView]:
        """Messages of ``topic`` stored in [begin_ms, end_ms], up to ``per_queue`` per queue,
        newest store time first."""
        out: list[MessageView] = []
        for mq in await self.admin.topic_queues(topic):
            start = await self.admin.search_offset(mq, begin_ms)
            stop = await self.admin.max_offset(mq)
            offset, taken = start, 0
            while offset < stop and taken < per_queue:
                raw = await self.admin.pull_raw(mq, offset, min(32, stop - offset))
                if not raw.body:
                    break
                msgs = decode_records(raw.body)
                if not msgs:
                    break
                for m in msgs:
                    if begin_ms <= m.store_timestamp <= end_ms and taken < per_queue:
                        out.append(MessageView.of(m))
                        taken += 1
                offset = raw.next_begin_offset
                if msgs[-1].store_timestamp > end_ms:
                    break
        out.sort(key=lambda v: v.msg.store_timestamp, reverse=True)
        return out

    # ------------------------------------------------------------------ DLQ

    async def dlq_topics(self) -> list[str]:
        """The ``%DLQ%<group>`` topics the name server knows, sorted."""
        return sorted(t for t in await self.admin.fetch_all_topic_list() if t.startswith(DLQ_PREFIX))

    async def unreadable_brokers(self, topic: str) -> list[str]:
        """The brokers whose queues of ``topic`` lack the read permission (PermName 4): a
        write-only ``%DLQ%`` topic (perm 2) cannot be browsed."""
        route = await self.admin.topic_route(topic)
        return sorted(qd.broker_name for qd in route.queue_datas if not qd.perm & PERM_READ)

    async def make_readable(self, topic: str) -> list[str]:
        """Add the read permission to ``topic`` on each master whose queues lack it
        (UPDATE_AND_CREATE_TOPIC with the same queue counts, ``mqadmin updateTopicPerm -p 6``).

        Returns:
            The broker addresses updated.
        """
        route = await self.admin.topic_route(topic)
        masters = {bd.broker_name: bd.broker_addrs.get(0) for bd in route.broker_datas}
        done: list[str] = []
        for qd in route.queue_datas:
            addr = masters.get(qd.broker_name)
            if qd.perm & PERM_READ or addr is None:
                continue
            await self.admin.create_and_update_topic_config(
                addr,
                topic,
                read_queue_nums=qd.read_queue_nums,
                write_queue_nums=qd.write_queue_nums,
                perm=qd.perm | PERM_READ,
                topic_sys_flag=qd.topic_sys_flag,
            )
            done.append(addr)
        return sorted(done)

    async def resend_dlq(self, offset_msg_id: str) -> tuple[str, str]:
        """Send a copy of the dead message at ``offset_msg_id`` back to its group's retry topic.

        The copy goes to ``%RETRY%<group>`` (so only the DLQ's group gets it again, as
        rocketmq-dashboard's resend) with ``RETRY_TOPIC`` = the original topic (the consumer
        restores it; kept from the dead message), ``ORIGIN_MESSAGE_ID`` = the dead message's msg id, reconsume count 0,
        the same body, tags, keys and user properties. The dead message stays in the DLQ.

        Returns:
            (retry topic, msg id of the copy).

        Raises:
            RocketMQError: the id is not in a ``%DLQ%`` topic, or the send failed.
        """
        msg = await self.admin.view_message(offset_msg_id)
        if not msg.topic.startswith(DLQ_PREFIX):
            raise RocketMQError(f"message {offset_msg_id} is in {msg.topic!r}, not a %DLQ% topic")
        group = msg.topic[len(DLQ_PREFIX) :]
        retry_topic = RETRY_PREFIX + group
        props = {k: v for k, v in msg.properties.items() if k not in _RESEND_DROPPED}
        props[PROPERTY_ORIGIN_MESSAGE_ID] = msg.msg_id or offset_msg_id
        copy = Message(retry_topic, bytes(msg.body), msg.flag, props)
        async with Producer(RESEND_PRODUCER_GROUP, config=self.settings.client_config()) as producer:
            result = await producer.send(copy)
        return retry_topic, result.msg_id
