"""Admin: topic metadata, queue offsets and raw pulls (L3; what Spark and the CLI use).

Mirrors the parts of ``DefaultMQAdminExt`` / ``MQAdminImpl`` that read topic routes and queue
offsets, ``DefaultMQPullConsumer.pull`` without a consumer group's state (for exact offset-range
reads), ``createTopic``, ``deleteTopic``, ``setMessageRequestMode`` (the ``mqadmin
setConsumeMode`` tool), the cluster / topic lists, topic and consume statistics, consumer
connections, message queries (``queryMessage`` by key, ``viewMessage`` by offset msg id), message
traces (``mqadmin queryMsgTraceById``), the
server-side offset reset (``resetOffsetByTimestamp``) and the calls the broker forwards to a
consumer client (``getConsumerRunningInfo``, ``consumeMessageDirectly``). Constructing an
:class:`Admin` opens nothing; connections are made on first use. Imports sibling client
modules, protocol and errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ..errors import (
    BrokerError,
    InvalidArgumentError,
    RocketMQError,
    RouteNotFoundError,
    TransportError,
    error_for_response,
)
from ..protocol.bodies import javajson as jj
from ..protocol.bodies.admin import (
    ConsumeStats,
    GroupList,
    OffsetWrapper,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicStatsTable,
)
from ..protocol.bodies.consumer import Connection, ConsumerConnection, ConsumerRunningInfo
from ..protocol.bodies.route import ClusterInfo, KVTable, TopicList
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.admin import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
)
from ..protocol.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from ..protocol.headers.route import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    PutKVConfigRequestHeader,
)
from ..protocol.message import MessageExt, MessageQueue, decode_offset_msg_id, decode_records
from ..protocol.sysflag import PERM_READ, PERM_WRITE, build_pull_sys_flag
from . import rpc
from .config import ClientConfig
from .consumer.assignment import MessageRequestMode, SetMessageRequestModeRequestBody
from .consumer.assignment import set_message_request_mode as _set_message_request_mode
from .inbound import ConsumeMessageDirectlyResult
from .routing import MASTER_ID, subscribe_queues
from .rpc import PullRaw
from .runtime import ClientRuntime
from .trace.codec import trace_views
from .trace.model import RMQ_SYS_TRACE_TOPIC, TraceView

if TYPE_CHECKING:
    from ..protocol.bodies.route import TopicRouteData

T = TypeVar("T")

#: MixAll.TOOLS_CONSUMER_GROUP: the group name admin tools pull with.
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
#: SetConsumeModeSubCommand: timeout of each SET_MESSAGE_REQUEST_MODE (5 000 ms), seconds.
SET_MESSAGE_REQUEST_MODE_TIMEOUT: Final = 5.0
#: Default wait of the admin → broker → client calls, seconds: above the broker's 10 s
#: ``callConsumer`` wait for the client (``Broker2Client.callClient``).
CALL_CONSUMER_TIMEOUT: Final = 15.0
#: MixAll.RETRY_GROUP_TOPIC_PREFIX: the group-based calls find the group's brokers by this topic.
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
#: MessageConst.KEY_SEPARATOR: keys of a message are joined by a space.
KEY_SEPARATOR: Final = " "
#: QueryMsgTraceByIdSubCommand: default maxNum of the trace query.
QUERY_TRACE_MAX_NUM: Final = 64
#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG: the name servers' KV namespace of order-topic configs.
ORDER_TOPIC_CONFIG_NAMESPACE: Final = "ORDER_TOPIC_CONFIG"
#: Long.MAX_VALUE: the trace query's default end timestamp.
_LONG_MAX: Final = 2**63 - 1


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``Properties`` text as brokers send it (``key=value`` lines; ``#`` comments).

    Returns:
        key -> value, in text order; blank lines and comments skipped.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


@dataclass(slots=True)
class MessageTrack:
    """One consumer group's view of a message (Java ``MessageTrack``).

    Attributes:
        consumer_group: the group.
        track_type: Java ``TrackType`` name: CONSUMED, CONSUMED_BUT_FILTERED, PULL,
            NOT_CONSUME_YET, NOT_ONLINE or UNKNOWN.
        exception_desc: why the state is NOT_ONLINE / UNKNOWN, else None.
    """

    consumer_group: str
    track_type: str = "UNKNOWN"
    exception_desc: str | None = None


@dataclass(slots=True)
class RollbackStats:
    """One queue of :meth:`Admin.reset_offset_by_timestamp_old` (Java ``RollbackStats``); offsets
    are queue offsets.

    Attributes:
        broker_name / queue_id: the queue.
        broker_offset: its max offset.
        consumer_offset: the group's offset before the reset.
        timestamp_offset: the offset found for the timestamp.
        rollback_offset: the offset committed (``consumer_offset`` when it was left alone).
    """

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


@dataclass(slots=True)
class QueryResult:
    """Result of :meth:`Admin.query_message` (Java ``QueryResult``).

    Attributes:
        index_last_update_timestamp: the newest ``indexLastUpdateTimestamp`` of the answering
            brokers, ms (how far their key index reaches).
        message_list: the matching messages (every broker's, in answer order).
    """

    index_last_update_timestamp: int = 0
    message_list: list[MessageExt] = field(default_factory=list)


class Admin:
    """Asynchronous admin client.

    Use ``async with Admin(namesrv_addr=...) as admin`` or call :meth:`close` when done.

    Args:
        namesrv_addr: ``;``-separated name servers (or give ``config``).
        config: full client settings (``namesrv_addr`` is then ignored).
        runtime: share an existing runtime (not closed by this admin).

    Raises:
        InvalidArgumentError: neither ``namesrv_addr`` nor ``config`` nor ``runtime`` given.
    """

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        config: ClientConfig | None = None,
        runtime: ClientRuntime | None = None,
    ) -> None:
        if runtime is None:
            if config is None:
                if not namesrv_addr:
                    raise InvalidArgumentError("Admin needs namesrv_addr, config or runtime")
                config = ClientConfig(namesrv_addr=namesrv_addr)
            runtime = ClientRuntime(config)
            self._owns_runtime = True
        else:
            self._owns_runtime = False
        self._runtime = runtime

    @property
    def runtime(self) -> ClientRuntime:
        """The client runtime used."""
        return self._runtime

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections (when this admin owns its runtime); idempotent."""
        if self._owns_runtime:
            await self._runtime.close()

    # ------------------------------------------------------------------ routes

    async def topic_route(self, topic: str) -> TopicRouteData:
        """Return the topic's route, always fresh from a name server.

        Raises:
            TopicNotExistError: the topic has no route; TransportError: no name server reachable.
        """
        return await self._runtime.fetch_route(topic)

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """Return the readable queues of ``topic``, sorted by (topic, broker, queue id).

        Raises:
            TopicNotExistError: the name server has no route; RouteNotFoundError: no readable
            queue; TransportError.
        """
        queues = subscribe_queues(topic, await self.topic_route(topic))
        if not queues:
            raise RouteNotFoundError(f"topic {topic!r} has no readable queue")
        return queues

    # ------------------------------------------------------------------ offsets

    async def _on_master(self, mq: MessageQueue, call: Callable[[str], Awaitable[T]]) -> T:
        addr = await self._runtime.find_master_addr(mq.broker_name, mq.topic)
        try:
            return await call(addr)
        except TransportError:
            await self._runtime.fetch_route(mq.topic)
            new_addr = await self._runtime.find_master_addr(mq.broker_name, mq.topic)
            if new_addr == addr:
                raise
            return await call(new_addr)

    async def max_offset(self, mq: MessageQueue) -> int:
        """Return the queue's max offset (exclusive: the next offset to be written).

        Raises:
            BrokerError / TransportError / RocketMQError (unknown broker).
        """
        t = self._runtime.config.request_timeout
        return await self._on_master(mq, lambda a: rpc.get_max_offset(self._runtime.pool, a, mq, t))

    async def min_offset(self, mq: MessageQueue) -> int:
        """Return the queue's smallest available offset.

        Raises:
            BrokerError / TransportError / RocketMQError (unknown broker).
        """
        t = self._runtime.config.request_timeout
        return await self._on_master(mq, lambda a: rpc.get_min_offset(self._runtime.pool, a, mq, t))

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """Return the offset of the first message stored at or after ``timestamp_ms``.

        Args:
            mq: the queue.
            timestamp_ms: epoch milliseconds.

        Raises:
            BrokerError / TransportError / RocketMQError (unknown broker).
        """
        t = self._runtime.config.request_timeout
        return await self._on_master(mq, lambda a: rpc.search_offset(self._runtime.pool, a, mq, timestamp_ms, t))

    async def pull_raw(
        self, mq: MessageQueue, offset: int, max_nums: int, *, timeout: float = 10.0, max_bytes: int | None = None
    ) -> PullRaw:
        """Pull up to ``max_nums`` records from ``offset`` without decoding them.

        No consumer-group state is used: the pull carries subscription ``*`` (group
        ``TOOLS_CONSUMER``), no suspend (the broker answers at once) and no offset commit.

        Args:
            mq: the queue.
            offset: first queue offset to read.
            max_nums: max records (the broker caps it, typically at 32).
            timeout: RPC timeout, seconds.
            max_bytes: optional ``maxMsgBytes`` hint.

        Returns:
            :class:`PullRaw`; ``body`` holds concatenated records when ``status`` is FOUND.

        Raises:
            InvalidArgumentError: ``offset`` < 0 or ``max_nums`` < 1.
            BrokerError / TransportError / RocketMQError (unknown broker).
        """
        if offset < 0 or max_nums < 1:
            raise InvalidArgumentError("pull_raw needs offset >= 0 and max_nums >= 1")
        flag = build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True)
        return await self._on_master(
            mq,
            lambda a: rpc.pull_message(
                self._runtime.pool,
                a,
                consumer_group=TOOLS_CONSUMER_GROUP,
                mq=mq,
                queue_offset=offset,
                max_msg_nums=max_nums,
                sys_flag=flag,
                commit_offset=0,
                suspend_timeout=0.0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
                timeout=timeout,
                max_msg_bytes=max_bytes,
            ),
        )

    # ------------------------------------------------------------------ topics

    async def create_topic(
        self, topic: str, queue_nums: int = 8, broker_addr: str | None = None, *, attributes: str | None = None
    ) -> None:
        """Create or update ``topic`` with ``queue_nums`` read and write queues (perm RW).

        Args:
            topic: the topic name.
            queue_nums: read and write queue count.
            broker_addr: one broker to create it on; None = every master of the cluster info.
            attributes: 5.x attribute changes, Java's ``AttributeParser`` form
                (``"+message.type=FIFO"``; ``-key`` removes on update); None keeps the current ones.

        Raises:
            InvalidArgumentError: ``queue_nums`` < 1; BrokerError / TransportError (a refused
            attribute change: BrokerError with the broker's remark, e.g. ``unsupported key: x``).
            RocketMQError: no broker known to the name server.
        """
        if queue_nums < 1:
            raise InvalidArgumentError("queue_nums must be >= 1")
        rt = self._runtime
        t = rt.config.request_timeout
        if broker_addr is not None:
            addrs = [broker_addr]
        else:
            info = await rt.invoke_namesrv(lambda a: rpc.get_broker_cluster_info(rt.pool, a, t))
            addrs = sorted(
                addr
                for bd in (info.broker_addr_table or {}).values()
                for bid, addr in (bd.broker_addrs or {}).items()
                if int(bid) == MASTER_ID
            )
            if not addrs:
                raise RocketMQError("the name server knows no master broker")
        for addr in addrs:
            await self.create_and_update_topic_config(
                addr, topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, attributes=attributes
            )

    # ------------------------------------------------------------------ consumer groups

    async def set_message_request_mode(
        self,
        topic: str,
        group: str,
        mode: MessageRequestMode | str,
        pop_share_queue_num: int = 0,
        *,
        cluster_name: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Set how ``group`` consumes ``topic``: PULL or POP (SET_MESSAGE_REQUEST_MODE, 5.x).

        Push consumers of the group created with ``client_rebalance=False`` get their queues
        from the broker (QUERY_ASSIGNMENT) in this mode at their next rebalance. Mirrors
        ``mqadmin setConsumeMode -c <cluster>`` (``SetConsumeModeSubCommand``): the request
        goes to every master broker of the cluster; without ``cluster_name`` / ``broker_addr``
        the clusters are those of the brokers in the topic's route. The broker stores the mode
        (``MessageRequestModeManager``, persisted).

        Args:
            topic: a normal topic that exists on the brokers (not a retry topic).
            group: consumer group (created by brokers with ``autoCreateSubscriptionGroup``).
            mode: :class:`MessageRequestMode` or its name (``"PULL"`` / ``"POP"``).
            pop_share_queue_num: POP: each consumer also pops the queues allocated to the next
                N consumers of the group; 0 (default) = every consumer pops every queue
                (assignments with queue id −1).
            cluster_name: only this cluster's masters.
            broker_addr: only this broker (``-b``).

        Returns:
            The broker addresses that accepted the mode (sorted).

        Raises:
            InvalidArgumentError: unknown mode or a negative ``pop_share_queue_num``.
            TopicNotExistError: the topic has no route (when the brokers come from it), or a
                broker does not know the topic.
            RequestCodeNotSupportedError: a broker without the command (Apache 4.x).
            NoPermissionError: a retry topic; BrokerError; TransportError.
            RocketMQError: no master broker found.
        """
        if isinstance(mode, str):
            try:
                mode = MessageRequestMode(mode.strip().upper())
            except ValueError:
                raise InvalidArgumentError(f"mode must be PULL or POP, not {mode!r}") from None
        if pop_share_queue_num < 0:
            raise InvalidArgumentError("pop_share_queue_num must be >= 0")
        rt = self._runtime
        t = rt.config.request_timeout
        if broker_addr is not None:
            addrs = [broker_addr]
        else:
            info = await rt.invoke_namesrv(lambda a: rpc.get_broker_cluster_info(rt.pool, a, t))
            if cluster_name is not None:
                names = set(info.cluster_addr_table.get(cluster_name, ()))
            else:
                in_route = {bd.broker_name for bd in (await self.topic_route(topic)).broker_datas or ()}
                clusters = {c for c, brokers in info.cluster_addr_table.items() if brokers & in_route}
                names = {b for c in clusters for b in info.cluster_addr_table[c]} or in_route
            addrs = sorted(
                addr
                for name in names
                if (bd := info.broker_addr_table.get(name)) is not None
                for bid, addr in (bd.broker_addrs or {}).items()
                if int(bid) == MASTER_ID
            )
            if not addrs:
                raise RocketMQError(f"no master broker for topic {topic!r} (cluster {cluster_name!r})")
        body = SetMessageRequestModeRequestBody(topic, group, mode, pop_share_queue_num)
        for addr in addrs:
            await _set_message_request_mode(rt, addr, body, SET_MESSAGE_REQUEST_MODE_TIMEOUT)
        return addrs

    # ------------------------------------------------------------------ cluster and topic lists

    async def examine_broker_cluster_info(self) -> ClusterInfo:
        """Return the name server's cluster table (GET_BROKER_CLUSTER_INFO, 106).

        Mirrors ``DefaultMQAdminExt.examineBrokerClusterInfo``.

        Raises:
            BrokerError / TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout
        return await rt.invoke_namesrv(lambda a: rpc.get_broker_cluster_info(rt.pool, a, t))

    async def fetch_all_topic_list(self) -> set[str]:
        """Return every topic the name server knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206),
        system topics (``TBW102``, ``%RETRY%…``, ``SCHEDULE_TOPIC_XXXX`` …) included.

        Mirrors ``DefaultMQAdminExt.fetchAllTopicList``.

        Raises:
            BrokerError / TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout

        async def call(addr: str) -> set[str]:
            resp = await self._request(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), t)
            return TopicList.decode(bytes(resp.body)).topic_list if resp.body else set()

        return await rt.invoke_namesrv(call)

    async def delete_topic(self, topic: str, cluster_name: str) -> list[str]:
        """Delete ``topic`` from every broker of ``cluster_name`` and from every name server.

        Mirrors ``DefaultMQAdminExt.deleteTopic(topic, clusterName)``: DELETE_TOPIC_IN_BROKER
        (215) to each broker (masters and slaves) of the cluster, then DELETE_TOPIC_IN_NAMESRV
        (216, header ``topic`` only, so the name servers drop the whole route, even other
        clusters' queues, as ``DefaultMQAdminExtImpl.deleteTopic``) to each name server. Stored messages stay
        until retention; the broker forgets the topic's config and offsets.

        Returns:
            The broker addresses the topic was deleted on (sorted).

        Raises:
            RocketMQError: the cluster has no broker; BrokerError (e.g.
            RequestCodeNotSupportedError from a name server without 216) / TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout
        info = await self.examine_broker_cluster_info()
        addrs = sorted(
            addr
            for name in info.cluster_addr_table.get(cluster_name, ())
            if name in info.broker_addr_table
            for addr in info.broker_addr_table[name].broker_addrs.values()
        )
        if not addrs:
            raise RocketMQError(f"cluster {cluster_name!r} has no broker")
        for addr in addrs:
            h = DeleteTopicRequestHeader(topic=topic)
            await self._request(addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, h.to_ext_fields()), t)
        for ns in rt.config.namesrv_addrs():
            cmd = RemotingCommand.request(
                RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}
            )  # the whole route, as Java
            await self._request(ns, cmd, t)
        return addrs

    # ------------------------------------------------------------------ statistics

    async def examine_topic_stats(self, topic: str) -> TopicStatsTable:
        """Return min / max offset and last store time of every queue of ``topic``.

        Mirrors ``DefaultMQAdminExt.examineTopicStats(topic)``: GET_TOPIC_STATS_INFO (202) to
        each broker of the topic's route, tables merged. Offsets are queue offsets (max =
        next to be written); ``last_update_timestamp`` is epoch ms (0 for an empty queue).

        Raises:
            TopicNotExistError: no route, or a broker does not know the topic;
            RocketMQError: the merged table is empty (Java: "Not found the topic stats info");
            BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        out = TopicStatsTable()
        for addr in await self._route_addrs(topic):
            h = GetTopicStatsInfoRequestHeader(topic=topic)
            resp = await self._request(
                addr, RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, h.to_ext_fields()), t
            )
            out.offset_table.update(TopicStatsTable.decode(bytes(resp.body)).offset_table)
        if not out.offset_table:
            raise RocketMQError(f"Not found the topic stats info of {topic!r}")
        return out

    async def examine_consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """Return ``group``'s progress per queue: broker (max) offset, committed consumer offset
        and last consumed store time; ``compute_total_diff()`` is the lag in messages.

        Mirrors ``DefaultMQAdminExt.examineConsumeStats(group[, topic])``: the brokers are those
        of the route of ``%RETRY%<group>`` (else of ``topic``); GET_CONSUME_STATS (208) to each,
        tables merged and ``consume_tps`` summed. Without ``topic`` every topic the group has
        offsets on is reported. Queues the group never committed report consumer offset 0.

        Raises:
            TopicNotExistError: neither route exists; BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        out = ConsumeStats()
        for addr in await self._group_addrs(group, topic):
            h = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
            resp = await self._request(
                addr, RemotingCommand.request(RequestCode.GET_CONSUME_STATS, h.to_ext_fields()), t * 3
            )
            cs = ConsumeStats.decode(bytes(resp.body))
            out.offset_table.update(cs.offset_table)
            out.consume_tps += cs.consume_tps
        return out

    async def examine_consumer_connection_info(self, group: str, broker_addr: str | None = None) -> ConsumerConnection:
        """Return the clients online in ``group`` with their subscriptions and settings.

        Mirrors ``DefaultMQAdminExt.examineConsumerConnectionInfo``: GET_CONSUMER_CONNECTION_LIST
        (203) to a broker of ``%RETRY%<group>``'s route (or ``broker_addr``).

        Raises:
            BrokerError: CONSUMER_NOT_ONLINE (206) when nobody of the group is connected to the
            broker; TopicNotExistError: no route of the retry topic; TransportError.
        """
        t = self._runtime.config.request_timeout
        addrs = [broker_addr] if broker_addr else await self._group_addrs(group, None)
        h = GetConsumerConnectionListRequestHeader(consumer_group=group)
        resp = await self._request(
            addrs[0], RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, h.to_ext_fields()), t
        )
        cc = ConsumerConnection.decode(bytes(resp.body))
        if not cc.connection_set:
            raise error_for_response(ResponseCode.CONSUMER_NOT_ONLINE, "Not found the consumer group connection")
        return cc

    # ------------------------------------------------------------------ messages

    async def query_message(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int) -> QueryResult:
        """Return the messages of ``topic`` indexed under ``key`` stored in [begin_ms, end_ms].

        Mirrors ``MQAdminImpl.queryMessage`` (``mqadmin queryMsgByKey``): QUERY_MESSAGE (12) to
        each broker of the route, then keeps the messages whose topic is ``topic`` and whose
        ``KEYS`` (space-separated) contain ``key``. A broker answering QUERY_NOT_FOUND adds
        nothing. Brokers index asynchronously: a message is findable shortly after its send.

        Args:
            topic: the topic.
            key: one message key.
            max_num: max messages per broker (brokers cap it: 64).
            begin_ms / end_ms: store-time range, epoch ms.

        Returns:
            :class:`QueryResult`; an empty ``message_list`` when nothing matched (Java raises
            ``MQClientException`` NO_MESSAGE "query message by key finished, but no message.").

        Raises:
            TopicNotExistError: no route; BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        out = QueryResult()
        for addr in await self._route_addrs(topic):
            h = QueryMessageRequestHeader(
                topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms
            )
            cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, h.to_ext_fields())
            resp = await self._runtime.pool.request(addr, cmd, t)
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_response(resp.code, resp.remark)
            rh = QueryMessageResponseHeader.from_ext_fields(resp.ext_fields or {})
            out.index_last_update_timestamp = max(out.index_last_update_timestamp, rh.index_last_update_timestamp or 0)
            for m in decode_records(bytes(resp.body)):
                if m.topic == topic and key in (m.properties.get("KEYS") or "").split(KEY_SEPARATOR):
                    out.message_list.append(m)
        return out

    async def query_trace(
        self,
        msg_id: str,
        trace_topic: str = RMQ_SYS_TRACE_TOPIC,
        *,
        max_num: int = QUERY_TRACE_MAX_NUM,
        begin_ms: int = 0,
        end_ms: int = _LONG_MAX,
    ) -> list[TraceView]:
        """Return the trace records of message ``msg_id`` (``mqadmin queryMsgTraceById``).

        Mirrors ``QueryMsgTraceByIdSubCommand.queryTraceByMsgId``: :meth:`query_message` on
        ``trace_topic`` with key = ``msg_id``, then every record of the found trace messages
        whose msg id is ``msg_id`` (``TraceView.decodeFromTraceTransData``), in the order the
        brokers answered (not sorted). Records of Java and rocketpipe clients alike: Pub,
        SubBefore, SubAfter, EndTransaction (and 5.3 Recall). Tracing clients send their
        records in the background, in batches (at the latest 5 s after a record, and when they
        close): a record is findable once its trace message is stored and indexed.

        Args:
            msg_id: the message's msg id (``SendResult.msg_id``, ``MessageExt.msg_id``).
            trace_topic: where the traces were sent (``-t``; the client's
                ``customized_trace_topic``).
            max_num: trace messages per broker (``-c``, 64).
            begin_ms / end_ms: store-time range of the trace messages, epoch ms (``-b`` / ``-e``).

        Returns:
            The :class:`~rocketpipe.client.trace.TraceView` list; empty when nothing matched
            (Java fails with "query message by key finished, but no message.").

        Raises:
            TopicNotExistError / RouteNotFoundError: the trace topic has no route;
            BrokerError / TransportError.
        """
        found = await self.query_message(trace_topic, msg_id, max_num, begin_ms, end_ms)
        views: list[TraceView] = []
        for m in found.message_list:
            views.extend(trace_views(msg_id, m.body, m.born_host))
        return views

    async def view_message(self, offset_msg_id: str, topic: str | None = None) -> MessageExt:
        """Return the stored message of an offset msg id (``SendResult.offset_msg_id``).

        Mirrors ``MQAdminImpl.viewMessage``: the id gives the store host and the commit-log
        offset; VIEW_MESSAGE_BY_ID (33) goes to that host.

        Raises:
            InvalidArgumentError: not an offset msg id; BrokerError: SYSTEM_ERROR when nothing is
            stored at the offset; TransportError.
        """
        addr, offset = decode_offset_msg_id(offset_msg_id)
        h = ViewMessageRequestHeader(topic=topic, offset=offset)
        resp = await self._request(
            addr,
            RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, h.to_ext_fields()),
            self._runtime.config.request_timeout,
        )
        msgs = decode_records(bytes(resp.body))
        if not msgs:
            raise BrokerError(f"no message at offset {offset}", response_code=ResponseCode.SYSTEM_ERROR)
        return msgs[0]

    # ------------------------------------------------------------------ consumer groups: offsets

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp_ms: int, is_force: bool = True
    ) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets on ``topic`` to the first message stored at or after
        ``timestamp_ms`` (-1 = the max offset), while its consumers run.

        Mirrors ``DefaultMQAdminExt.resetOffsetByTimestamp(topic, group, timestamp, isForce)``
        (``mqadmin resetOffsetByTime``): INVOKE_BROKER_TO_RESET_OFFSET (222, header ``offset``
        −1) to each broker of the topic's route. What the broker does is its business: a 5.x
        broker (``useServerSideResetOffset``, the default) replaces the committed offsets and
        answers the consumers' next pulls with PULL_OFFSET_MOVED; a 4.x broker sends
        RESET_CONSUMER_CLIENT_OFFSET (220) to each online consumer of the group (and fails with
        CONSUMER_NOT_ONLINE when there is none). A 4.x broker only moves a queue backwards
        without ``is_force``; 5.x ignores it.

        Returns:
            The new offset of every queue (queue offsets), merged over the brokers.

        Raises:
            TopicNotExistError: no route, or a broker does not know the topic; BrokerError:
            CONSUMER_NOT_ONLINE (206, 4.x), SUBSCRIPTION_GROUP_NOT_EXIST (5.x), SYSTEM_ERROR
            (4.x: the group has no offset on the topic); TransportError.
        """
        t = self._runtime.config.request_timeout
        table: dict[MessageQueue, int] = {}
        for addr in await self._route_addrs(topic):
            h = ResetOffsetRequestHeader(group=group, topic=topic, timestamp=timestamp_ms, is_force=is_force, offset=-1)
            resp = await self._request(
                addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h.to_ext_fields()), t
            )
            if resp.body:
                table.update(ResetOffsetBody.decode(bytes(resp.body)).offset_table)
        return table

    async def reset_offset_by_queue_id(
        self, broker_addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> dict[MessageQueue, int]:
        """Set ``group``'s offset of one queue of ``topic`` on ``broker_addr`` to ``offset``.

        Mirrors ``DefaultMQAdminExt.resetOffsetByQueueId`` (``mqadmin resetOffsetByTime -b -q``):
        UPDATE_CONSUMER_OFFSET (15), then INVOKE_BROKER_TO_RESET_OFFSET (222) with ``queueId``
        and ``offset`` so a 5.x broker makes the group's next pull of the queue move there.

        Returns:
            The broker's ``ResetOffsetBody`` table (may be empty, e.g. from a 4.x broker).

        Raises:
            BrokerError: the broker refused (e.g. an offset outside the queue's range, an unknown
            group or topic); TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout
        mq = MessageQueue(topic, "", queue_id)
        await rpc.update_consumer_offset(rt.pool, broker_addr, group, mq, offset, t)
        h = ResetOffsetRequestHeader(group=group, topic=topic, timestamp=0, queue_id=queue_id, offset=offset)
        resp = await self._request(
            broker_addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h.to_ext_fields()), t
        )
        return ResetOffsetBody.decode(bytes(resp.body)).offset_table if resp.body else {}

    async def search_offset_on(self, broker_addr: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """:meth:`search_offset` on a given broker address (SEARCH_OFFSET_BY_TIMESTAMP, 29).

        Raises:
            BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        return await rpc.search_offset(
            self._runtime.pool, broker_addr, MessageQueue(topic, "", queue_id), timestamp_ms, t
        )

    async def reset_offset_by_timestamp_old(
        self, group: str, topic: str, timestamp_ms: int, force: bool = True
    ) -> list[RollbackStats]:
        """Reset ``group``'s offsets on ``topic`` by committing them directly (no consumer needed).

        Mirrors ``DefaultMQAdminExt.resetOffsetByTimestampOld`` (mqadmin's fallback when a 4.x
        broker answers CONSUMER_NOT_ONLINE, ``ResetOffsetByTimeOldCommand``): per broker of the
        route, the group's queues of ``topic`` from GET_CONSUME_STATS (or, when it has none there,
        every read queue from GET_TOPIC_STATS_INFO with consumer offset = min offset); the target
        is the first offset stored at or after ``timestamp_ms`` (-1: the max offset) and is
        committed with UPDATE_CONSUMER_OFFSET when ``force`` or when it is not ahead of the
        consumer offset. Running consumers overwrite it with their next commit.

        Returns:
            One :class:`RollbackStats` per queue.

        Raises:
            TopicNotExistError: no route; BrokerError / TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout
        route = await self.topic_route(topic)
        read_nums = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas}
        out: list[RollbackStats] = []
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            h = GetConsumeStatsRequestHeader(consumer_group=group)
            resp = await self._request(
                addr, RemotingCommand.request(RequestCode.GET_CONSUME_STATS, h.to_ext_fields()), t
            )
            table = {mq: w for mq, w in ConsumeStats.decode(bytes(resp.body)).offset_table.items() if mq.topic == topic}
            if not table:
                hs = GetTopicStatsInfoRequestHeader(topic=topic)
                resp = await self._request(
                    addr, RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, hs.to_ext_fields()), t
                )
                stats = TopicStatsTable.decode(bytes(resp.body)).offset_table
                for q in range(read_nums.get(bd.broker_name, 0)):
                    mq = MessageQueue(topic, bd.broker_name, q)
                    o = stats.get(mq)
                    table[mq] = OffsetWrapper(
                        broker_offset=o.max_offset if o else 0, consumer_offset=o.min_offset if o else 0
                    )
            for mq, w in sorted(table.items(), key=lambda kv: kv[0].queue_id):
                if timestamp_ms == -1:
                    target = await rpc.get_max_offset(rt.pool, addr, mq, t)
                else:
                    target = await rpc.search_offset(rt.pool, addr, mq, timestamp_ms, t)
                stats_row = RollbackStats(
                    mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset, target, w.consumer_offset
                )
                if force or target <= w.consumer_offset:
                    stats_row.rollback_offset = target
                    await rpc.update_consumer_offset(rt.pool, addr, group, mq, target, t)
                out.append(stats_row)
        return out

    # ------------------------------------------------------------------ consumer clients (via a broker)

    async def get_consumer_running_info(
        self, group: str, client_id: str, jstack: bool = False, *, timeout: float = CALL_CONSUMER_TIMEOUT
    ) -> ConsumerRunningInfo:
        """Return the running state of one consumer client of ``group``.

        Mirrors ``DefaultMQAdminExt.getConsumerRunningInfo(group, clientId, jstack)``
        (``mqadmin consumerStatus``): GET_CONSUMER_RUNNING_INFO (307) to a broker of
        ``%RETRY%<group>``'s route, which forwards it to the client's connection
        (``AdminBrokerProcessor.callConsumer``, 10 s) and relays its answer.

        Returns:
            :class:`ConsumerRunningInfo`: ``properties`` (settings, ``PROP_*``),
            ``subscription_set``, ``mq_table`` (queue → ``ProcessQueueInfo`` dict: cached
            counts / offsets, ``commitOffset``, ``droped``, timestamps in epoch ms),
            ``status_table`` (topic → ``ConsumeStatus`` dict: ``pullRT`` / ``consumeRT`` ms,
            ``pullTPS`` / ``consumeOKTPS`` / ``consumeFailedTPS`` per second over the last
            minute, ``consumeFailedMsgs`` over the last hour), ``jstack`` when asked.

        Args:
            timeout: seconds to wait for the broker's answer; longer than the broker's own 10 s
                wait for the client, so that its CONSUME_MSG_TIMEOUT arrives first.

        Raises:
            BrokerError: SYSTEM_ERROR "The Consumer <g> <id> not online" (unknown client) or the
            client's own SYSTEM_ERROR (group not in that client); CONSUME_MSG_TIMEOUT (207);
            TopicNotExistError: no route of the retry topic; TransportError.
        """
        addrs = await self._group_addrs(group, None)
        h = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id, jstack_enable=jstack)
        resp = await self._request(
            addrs[0], RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, h.to_ext_fields()), timeout
        )
        return ConsumerRunningInfo.decode(bytes(resp.body))

    async def consume_message_directly(
        self, group: str, client_id: str, topic: str, msg_id: str, *, timeout: float = CALL_CONSUMER_TIMEOUT
    ) -> ConsumeMessageDirectlyResult:
        """Make one consumer client of ``group`` consume one stored message now.

        Mirrors ``DefaultMQAdminExt.consumeMessageDirectly(group, clientId, topic, msgId)``
        (``mqadmin consumeMessage``): the message is looked up (:meth:`view_message`, so
        ``msg_id`` is an offset msg id) and CONSUME_MESSAGE_DIRECTLY (309) goes to its store
        host, which reads the record and forwards it to the client. The client's listener
        consumes it once; no offset moves and nothing is sent back.

        Returns:
            :class:`ConsumeMessageDirectlyResult`: ``consume_result`` (CR_SUCCESS, CR_LATER,
            CR_RETURN_NULL, CR_THROW_EXCEPTION …), ``order``, ``auto_commit``, ``remark``,
            ``spent_time_mills`` (ms).

        Args:
            timeout: seconds to wait for the broker's answer (see :meth:`get_consumer_running_info`).

        Raises:
            InvalidArgumentError: not an offset msg id; BrokerError: as
            :meth:`get_consumer_running_info`, or SYSTEM_ERROR when no message is at the id;
            TransportError.
        """
        msg = await self.view_message(msg_id, topic)
        addr = msg.store_host or decode_offset_msg_id(msg_id)[0]
        h = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=group, client_id=client_id, msg_id=msg.offset_msg_id or msg_id, topic=topic
        )
        resp = await self._request(
            addr, RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, h.to_ext_fields()), timeout
        )
        return ConsumeMessageDirectlyResult.decode(bytes(resp.body))

    # ------------------------------------------------------------------ mqadmin: brokers, topics, groups

    async def cluster_master_addrs(self, cluster_name: str | None = None) -> list[str]:
        """Return the master addresses of ``cluster_name`` (every cluster when None), sorted.

        Mirrors ``CommandUtil.fetchMasterAddrByClusterName`` (GET_BROKER_CLUSTER_INFO, 106).

        Raises:
            RocketMQError: the cluster is unknown or has no master; BrokerError / TransportError.
        """
        info = await self.examine_broker_cluster_info()
        if cluster_name is None:
            names: set[str] = set(info.broker_addr_table)
        else:
            if cluster_name not in info.cluster_addr_table:
                raise RocketMQError(
                    f"Make sure the specified clusterName exists or the name server connected to is correct: {cluster_name}"
                )
            names = set(info.cluster_addr_table[cluster_name])
        addrs = sorted(
            addr
            for name in names
            if (bd := info.broker_addr_table.get(name)) is not None
            for bid, addr in (bd.broker_addrs or {}).items()
            if int(bid) == MASTER_ID
        )
        if not addrs:
            raise RocketMQError(f"cluster {cluster_name!r} has no master broker")
        return addrs

    async def create_and_update_topic_config(
        self,
        broker_addr: str,
        topic: str,
        *,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
        topic_sys_flag: int = 0,
        attributes: str | None = None,
    ) -> None:
        """Create or update ``topic`` on one broker (UPDATE_AND_CREATE_TOPIC, 17).

        Mirrors ``DefaultMQAdminExt.createAndUpdateTopicConfig`` (``mqadmin updateTopic``,
        ``tools/command/topic/UpdateTopicSubCommand``).

        Args:
            read_queue_nums / write_queue_nums: queue counts (>= 1 each for a usable topic).
            perm: PermName bits (2 write, 4 read, 6 both).
            order: order topic flag.
            topic_sys_flag: TopicSysFlag bits (unit / unit-sub).
            attributes: 5.x ``+key=value,-key`` changes (None: none).

        Raises:
            InvalidArgumentError: a queue count < 0; BrokerError / TransportError.
        """
        if read_queue_nums < 0 or write_queue_nums < 0:
            raise InvalidArgumentError("queue nums must be >= 0")
        h = CreateTopicRequestHeader(
            topic=topic,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
            topic_sys_flag=topic_sys_flag,
            attributes=attributes,
        )
        await self._request(
            broker_addr,
            RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()),
            self._runtime.config.request_timeout,
        )

    async def examine_topic_config(self, broker_addr: str, topic: str) -> dict[str, Any]:
        """Return a broker's config of ``topic`` (GET_TOPIC_CONFIG, 351; 5.x brokers): the
        parsed ``TopicConfigAndQueueMapping`` bean (``topicName``, ``readQueueNums``,
        ``writeQueueNums``, ``perm``, ``topicSysFlag``, ``order`` …).

        Mirrors ``DefaultMQAdminExt.examineTopicConfig(addr, topic)``.

        Raises:
            TopicNotExistError: the broker does not know the topic; BrokerError
            (RequestCodeNotSupportedError from a 4.x broker) / TransportError.
        """
        h = GetTopicConfigRequestHeader(topic=topic)
        cmd = RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, h.to_ext_fields())
        resp = await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return jj.as_dict(jj.loads(bytes(resp.body))) if resp.body else {}

    async def create_and_update_subscription_group_config(
        self, broker_addr: str, config: SubscriptionGroupConfig
    ) -> None:
        """Create or update a consumer group's config on one broker
        (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200, body ``SubscriptionGroupConfig`` JSON).

        Mirrors ``DefaultMQAdminExt.createAndUpdateSubscriptionGroupConfig`` (``mqadmin
        updateSubGroup``, ``tools/command/consumer/UpdateSubGroupSubCommand``).

        Raises:
            BrokerError / TransportError.
        """
        cmd = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())
        await self._request(broker_addr, cmd, self._runtime.config.request_timeout)

    async def delete_subscription_group(self, broker_addr: str, group: str, clean_offset: bool = False) -> None:
        """Delete a consumer group's config on one broker (DELETE_SUBSCRIPTIONGROUP, 207).

        Mirrors ``DefaultMQAdminExt.deleteSubscriptionGroup(addr, group, removeOffset)``
        (``mqadmin deleteSubGroup``, ``tools/command/consumer/DeleteSubscriptionGroupCommand``).

        Args:
            clean_offset: 5.x: also drop the group's committed offsets on that broker.

        Raises:
            BrokerError (RequestCodeNotSupportedError from a broker without 207) / TransportError.
        """
        h = DeleteSubscriptionGroupRequestHeader(group_name=group, clean_offset=clean_offset)
        cmd = RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, h.to_ext_fields())
        await self._request(broker_addr, cmd, self._runtime.config.request_timeout)

    async def examine_producer_connection_info(self, group: str, topic: str) -> list[Connection]:
        """Return the producer clients of ``group`` connected to the brokers of ``topic``.

        Mirrors ``DefaultMQAdminExt.examineProducerConnectionInfo`` (``mqadmin
        producerConnection``): GET_PRODUCER_CONNECTION_LIST (204, header ``producerGroup``) to
        each broker of the topic's route, answers merged (``ProducerConnection.connectionSet``;
        a client connected to several brokers appears once per broker, as Java's set of beans).

        Raises:
            BrokerError: SYSTEM_ERROR ("the producer group[...] not exist") from a broker that knows
            no producer of the group; TopicNotExistError: no route; TransportError.
        """
        t = self._runtime.config.request_timeout
        out: list[Connection] = []
        for addr in await self._route_addrs(topic):
            cmd = RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})
            resp = await self._request(addr, cmd, t)
            body = jj.as_dict(jj.loads(bytes(resp.body))) if resp.body else {}
            for c in jj.as_list(body.get("connectionSet")):
                conn = Connection.from_obj(c)
                if conn not in out:
                    out.append(conn)
        return out

    async def fetch_broker_runtime_stats(self, broker_addr: str) -> dict[str, str]:
        """Return a broker's run-time figures (GET_BROKER_RUNTIME_INFO, 28; ``KVTable``).

        Mirrors ``DefaultMQAdminExt.fetchBrokerRuntimeStats`` (``mqadmin brokerStatus``,
        ``clusterList``): keys such as ``brokerVersionDesc``, ``putTps`` (``"tps10 tps60 tps600"``),
        ``msgPutTotalTodayNow``, ``commitLogDiskRatio`` (0..1), ``bootTimestamp`` (epoch ms).

        Raises:
            BrokerError / TransportError.
        """
        cmd = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        resp = await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return KVTable.decode(bytes(resp.body)).table if resp.body else {}

    async def get_broker_config(self, broker_addr: str) -> dict[str, str]:
        """Return a broker's configuration (GET_BROKER_CONFIG, 26): the body is Java
        ``Properties`` text (``key=value`` lines), parsed into a dict.

        Mirrors ``DefaultMQAdminExt.getBrokerConfig`` (``mqadmin getBrokerConfig``).

        Raises:
            BrokerError / TransportError.
        """
        cmd = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
        resp = await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return parse_properties(bytes(resp.body).decode("utf-8", "replace")) if resp.body else {}

    async def update_broker_config(self, broker_addr: str, properties: dict[str, str]) -> None:
        """Change broker settings at run time (UPDATE_BROKER_CONFIG, 25; body ``key=value`` lines).

        Mirrors ``DefaultMQAdminExt.updateBrokerConfig`` (``mqadmin updateBrokerConfig``). Java
        brokers and rocketpipe's ignore unknown keys; rocketpipe's changes only the keys it
        honours at run time (:data:`rocketpipe.broker.processors.broker_config.RUNTIME_KEYS`)
        and keeps them across restarts.

        Raises:
            BrokerError: NO_PERMISSION for a black-listed key (``brokerConfigPath``,
            ``configBlackList``…); from rocketpipe's broker INVALID_PARAMETER for a key it cannot
            change while running or a bad value. TransportError.
        """
        body = "".join(f"{k}={v}\n" for k, v in properties.items()).encode()
        cmd = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=body)
        await self._request(broker_addr, cmd, self._runtime.config.request_timeout)

    async def clean_expired_consume_queue(self, broker_addr: str) -> bool:
        """Ask a broker to destroy the consume queues whose last record is below the commit
        log's min offset (CLEAN_EXPIRED_CONSUMEQUEUE, 306; system topics are kept).
        Mirrors ``DefaultMQAdminExt.cleanExpiredConsumerQueueByAddr``.

        Returns:
            True when the broker answered SUCCESS.

        Raises:
            BrokerError / TransportError.
        """
        cmd = RemotingCommand.request(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return True

    async def view_broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> dict[str, Any]:
        """Return one statistics item of a broker (VIEW_BROKER_STATS_DATA, 315): the parsed
        ``BrokerStatsData`` ``{"statsMinute"|"statsHour"|"statsDay": {"sum": n, "tps": x, "avgpt": x}}``.

        Mirrors ``DefaultMQAdminExt.viewBrokerStatsData`` (``mqadmin statsAll``); ``stats_name`` is
        a Java ``Stats`` name such as ``TOPIC_PUT_NUMS`` (key ``topic``), ``GROUP_GET_NUMS`` (key
        ``topic@group``) or ``BROKER_PUT_NUMS`` (key: the cluster name). ``sum`` counts messages
        (bytes for ``*_SIZE``), ``tps`` is per second, ``avgpt`` is ``sum`` per request.

        Raises:
            BrokerError: SYSTEM_ERROR "The stats <name> <key> not exist" when the broker has no
            such item; TransportError.
        """
        h = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
        cmd = RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA, h.to_ext_fields())
        resp = await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return jj.as_dict(jj.loads(bytes(resp.body))) if resp.body else {}

    async def get_all_subscription_group(self, broker_addr: str) -> SubscriptionGroupWrapper:
        """Return every consumer group's config on a broker (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201).

        Mirrors ``DefaultMQAdminExt.getAllSubscriptionGroup``.

        Raises:
            BrokerError / TransportError.
        """
        cmd = RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        resp = await self._request(broker_addr, cmd, self._runtime.config.request_timeout)
        return SubscriptionGroupWrapper.decode(bytes(resp.body or b"{}"))

    async def examine_subscription_group_config(self, broker_addr: str, group: str) -> SubscriptionGroupConfig | None:
        """Return one group's config on a broker, or None when the broker has no such group.

        Mirrors ``DefaultMQAdminExt.examineSubscriptionGroupConfig`` (``mqadmin getConsumerConfig``):
        :meth:`get_all_subscription_group`, then the group's entry.

        Raises:
            BrokerError / TransportError.
        """
        return (await self.get_all_subscription_group(broker_addr)).subscription_group_table.get(group)

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """Store ``key = value`` in ``namespace`` of every name server (PUT_KV_CONFIG, 100).

        Mirrors ``MQClientAPIImpl.putKVConfigValue`` (all name servers of the config).

        Raises:
            BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        h = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        for ns in self._runtime.config.namesrv_addrs():
            await self._request(ns, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, h.to_ext_fields()), t)

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """Remove ``key`` from ``namespace`` of every name server (DELETE_KV_CONFIG, 102).

        Mirrors ``DefaultMQAdminExt.deleteKvConfig`` (``mqadmin deleteKvConfig``).

        Raises:
            BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        h = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        for ns in self._runtime.config.namesrv_addrs():
            await self._request(ns, RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, h.to_ext_fields()), t)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """Return the value of ``key`` in ``namespace`` (GET_KV_CONFIG, 101), None when unset.

        Mirrors ``MQClientAPIImpl.getKVConfigValue`` (QUERY_NOT_FOUND → None here).

        Raises:
            BrokerError / TransportError.
        """
        rt = self._runtime
        t = rt.config.request_timeout
        h = GetKVConfigRequestHeader(namespace=namespace, key=key)

        async def call(addr: str) -> str | None:
            resp = await rt.pool.request(addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG, h.to_ext_fields()), t)
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                return None
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_response(resp.code, resp.remark)
            return GetKVConfigResponseHeader.from_ext_fields(resp.ext_fields or {}).value

        return await rt.invoke_namesrv(call)

    async def create_or_update_order_conf(self, topic: str, order_conf: str, is_cluster: bool) -> str:
        """Set ``topic``'s order configuration (``brokerName:queueNums[;…]``) in the name servers'
        ``ORDER_TOPIC_CONFIG`` namespace; the name servers then put it in the topic's route
        (``orderTopicConf``), which ordered producers use.

        Mirrors ``DefaultMQAdminExt.createOrUpdateOrderConf``: with ``is_cluster`` the value
        replaces the old one; otherwise its ``brokerName:n`` entry is merged into it.

        Returns:
            The value stored.

        Raises:
            BrokerError / TransportError.
        """
        value = order_conf
        if not is_cluster:
            entries: dict[str, str] = {}
            old = await self.get_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic)
            for item in (old or "").split(";"):
                if item.strip():
                    entries[item.split(":", 1)[0]] = item
            entries[order_conf.split(":", 1)[0]] = order_conf
            value = ";".join(entries.values())
        await self.put_kv_config(ORDER_TOPIC_CONFIG_NAMESPACE, topic, value)
        return value

    async def message_track_detail(self, msg: MessageExt) -> list[MessageTrack]:
        """Say, for each consumer group of ``msg``'s topic, whether it consumed ``msg``.

        Mirrors ``DefaultMQAdminExt.messageTrackDetail`` (printed by ``mqadmin queryMsgById``):
        the groups are QUERY_TOPIC_CONSUME_BY_WHO's; a group nobody of which is connected is
        NOT_ONLINE; a pull (CONSUME_ACTIVELY) group is PULL; a push group is CONSUMED when its
        committed offset of the message's queue (on the message's store host) is past the
        message's queue offset (CONSUMED_BUT_FILTERED when its subscription's tags exclude the
        message's tag), else NOT_CONSUME_YET; UNKNOWN with ``exception_desc`` on other failures.

        Raises:
            TopicNotExistError: the topic has no route; BrokerError / TransportError.
        """
        out: list[MessageTrack] = []
        info: ClusterInfo | None = None
        for group in sorted(await self.query_topic_consume_by_who(msg.topic)):
            track = MessageTrack(group)
            out.append(track)
            try:
                cc = await self.examine_consumer_connection_info(group)
            except BrokerError as exc:
                if exc.response_code == ResponseCode.CONSUMER_NOT_ONLINE:
                    track.track_type = "NOT_ONLINE"
                track.exception_desc = f"CODE:{exc.response_code} DESC:{exc.remark}"
                continue
            except RocketMQError as exc:
                track.exception_desc = str(exc)
                continue
            if cc.consume_type == "CONSUME_ACTIVELY":
                track.track_type = "PULL"
                continue
            try:
                stats = await self.examine_consume_stats(group)
                if info is None:
                    info = await self.examine_broker_cluster_info()
            except RocketMQError as exc:
                track.exception_desc = str(exc)
                continue
            consumed = False
            for mq, w in stats.offset_table.items():
                if mq.topic != msg.topic or mq.queue_id != msg.queue_id:
                    continue
                bd = info.broker_addr_table.get(mq.broker_name)
                master = (bd.broker_addrs or {}).get(MASTER_ID) if bd is not None else None
                if master == msg.store_host and w.consumer_offset > msg.queue_offset:
                    consumed = True
            if not consumed:
                track.track_type = "NOT_CONSUME_YET"
                continue
            track.track_type = "CONSUMED"
            sub = cc.subscription_table.get(msg.topic)
            if sub is not None and sub.tags_set and "*" not in sub.tags_set and msg.tags not in sub.tags_set:
                track.track_type = "CONSUMED_BUT_FILTERED"
        return out

    async def query_topic_consume_by_who(self, topic: str) -> set[str]:
        """Return the consumer groups of ``topic`` (QUERY_TOPIC_CONSUME_BY_WHO, 300, to each
        broker of the route; ``GroupList`` merged). Mirrors ``DefaultMQAdminExt.queryTopicConsumeByWho``.

        Raises:
            TopicNotExistError: no route; BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        out: set[str] = set()
        for addr in await self._route_addrs(topic):
            h = QueryTopicConsumeByWhoRequestHeader(topic=topic)
            resp = await self._request(
                addr, RemotingCommand.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, h.to_ext_fields()), t
            )
            out |= GroupList.decode(bytes(resp.body)).group_list
        return out

    async def query_message_by_unique_key(self, topic: str, msg_id: str, max_num: int = 32) -> list[MessageExt]:
        """Return the stored messages whose ``UNIQ_KEY`` (the client msg id) is ``msg_id``.

        Mirrors ``MQAdminImpl.queryMessageByUniqKey`` (``mqadmin queryMsgByUniqueKey``):
        QUERY_MESSAGE with ``_UNIQUE_KEY_QUERY=true`` to each broker of the route over all
        time; a message sent more than once (a retry) can be stored more than once.

        Raises:
            TopicNotExistError: no route; BrokerError / TransportError.
        """
        t = self._runtime.config.request_timeout
        out: list[MessageExt] = []
        for addr in await self._route_addrs(topic):
            h = QueryMessageRequestHeader(
                topic=topic,
                key=msg_id,
                max_num=max_num,
                begin_timestamp=0,
                end_timestamp=_LONG_MAX,
                unique_key_query=True,
            )
            resp = await self._runtime.pool.request(
                addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, h.to_ext_fields()), t
            )
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_response(resp.code, resp.remark)
            out.extend(m for m in decode_records(bytes(resp.body)) if m.topic == topic and m.msg_id == msg_id)
        return out

    async def query_message_by_id(self, topic: str, msg_id: str) -> MessageExt:
        """Return the message of ``msg_id``, an offset msg id or a unique key (client msg id).

        Mirrors ``DefaultMQAdminExt.queryMessage(clusterName, topic, msgId)`` as ``mqadmin
        queryMsgById`` uses it: :meth:`view_message` when ``msg_id`` decodes as an offset msg id
        (a store host with a valid port) and something is stored there under ``topic``, else
        :meth:`query_message_by_unique_key` (the first match). A 32-hex-character unique key
        has the length of an IPv4 offset msg id; its "port" is usually above 65535, so it goes
        straight to the unique-key query.

        Raises:
            BrokerError: QUERY_NOT_FOUND when neither lookup finds it (the message names both);
            TopicNotExistError; TransportError from the unique-key query.
        """
        try:
            addr, _ = decode_offset_msg_id(msg_id)
            port = int(addr.rpartition(":")[2])
        except (InvalidArgumentError, ValueError):
            pass
        else:
            if 0 < port <= 65535:
                try:
                    msg = await self.view_message(msg_id, topic)
                    if msg.topic == topic:
                        return msg
                except (BrokerError, TransportError, OSError):
                    pass  # Java: the offset lookup failed, try the unique key
        found = await self.query_message_by_unique_key(topic, msg_id)
        if not found:
            raise BrokerError(
                f"no message of id {msg_id} in topic {topic}: neither an offset msg id stored there "
                "nor a unique key (UNIQ_KEY) of it",
                response_code=ResponseCode.QUERY_NOT_FOUND,
            )
        return found[0]

    # ------------------------------------------------------------------ helpers

    async def _request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        resp = await self._runtime.pool.request(addr, cmd, timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise error_for_response(resp.code, resp.remark)
        return resp

    async def _route_addrs(self, topic: str) -> list[str]:
        """``BrokerData.selectBrokerAddr`` of each broker of ``topic``'s route."""
        route = await self.topic_route(topic)
        addrs = [a for bd in route.broker_datas or () if (a := bd.select_broker_addr()) is not None]
        if not addrs:
            raise RouteNotFoundError(f"topic {topic!r} has no broker")
        return addrs

    async def _group_addrs(self, group: str, topic: str | None) -> list[str]:
        """Brokers of ``%RETRY%<group>``'s route, else of ``topic``'s (Java's route topics)."""
        try:
            return await self._route_addrs(RETRY_GROUP_TOPIC_PREFIX + group)
        except RocketMQError:
            if topic is None:
                raise
            return await self._route_addrs(topic)
