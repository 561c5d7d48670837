"""Administration: UPDATE_AND_CREATE_TOPIC (17), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
GET_TOPIC_STATS_INFO (202), GET_CONSUMER_CONNECTION_LIST (203), GET_CONSUME_STATS (208),
VIEW_MESSAGE_BY_ID (33), GET_ALL_TOPIC_CONFIG (21), DELETE_TOPIC_IN_BROKER (215),
INVOKE_BROKER_TO_RESET_OFFSET (222, 5.x server-side reset), GET_TOPIC_CONFIG (351),
GET_BROKER_RUNTIME_INFO (28), QUERY_TOPIC_CONSUME_BY_WHO (300), GET_PRODUCER_CONNECTION_LIST (204),
DELETE_SUBSCRIPTIONGROUP (207), GET_BROKER_CONFIG (26), and the admin → broker → client
calls GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) (``callConsumer``).

Mirrors the matching handlers of ``AdminBrokerProcessor`` / ``QueryMessageProcessor``. Bodies
with ``Map<MessageQueue, …>`` are written the fastjson way (object-literal keys) by
:mod:`rocketpipe.protocol.bodies.javajson`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from typing import Any

from ...errors import InvalidArgumentError, ProtocolError, RequestTimeoutError, TransportError
from ...protocol import message as pm
from ...protocol.bodies import javajson as jj
from ...protocol.bodies.admin import GroupList, ResetOffsetBody
from ...protocol.bodies.route import KVTable
from ...protocol.codes import CURRENT_VERSION, CURRENT_VERSION_DESC, LanguageCode, RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.admin import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ViewMessageRequestHeader,
)
from ...protocol.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from ...protocol.message import MessageQueue
from ...protocol.topic_attributes import (
    ATTR_ADD_PLUS_SIGN,
    TOPIC_ATTRIBUTES,
    TOPIC_MESSAGE_TYPE_ATTRIBUTE,
    TopicAttributeError,
    TopicMessageType,
    alter_current_attributes,
    parse_to_map,
)
from ...store.disk import disk_partition_used_ratio
from ...transport import Connection, Router
from ..context import BrokerContext
from ..schedule import SCHEDULE_TOPIC
from ..stats import format_runtime
from ..topics import SubscriptionGroupConfig, TopicConfig, validate_group, validate_topic
from .common import decode_header, error, require

log = logging.getLogger(__name__)

#: ``Broker2Client.callClient``: timeout of the request forwarded to a client (10 000 ms), seconds.
CALL_CLIENT_TIMEOUT = 10.0


class AdminProcessor:
    """Handlers of topic/group administration and statistics requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.UPDATE_AND_CREATE_TOPIC, self.update_and_create_topic)
        router.register(RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic)
        router.register(RequestCode.GET_ALL_TOPIC_CONFIG, self.get_all_topic_config)
        router.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.update_and_create_subscription_group)
        router.register(RequestCode.GET_TOPIC_STATS_INFO, self.get_topic_stats_info)
        router.register(RequestCode.GET_CONSUME_STATS, self.get_consume_stats)
        router.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.get_consumer_connection_list)
        router.register(RequestCode.VIEW_MESSAGE_BY_ID, self.view_message_by_id)
        router.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.invoke_broker_to_reset_offset)
        router.register(RequestCode.GET_TOPIC_CONFIG, self.get_topic_config)
        router.register(RequestCode.GET_BROKER_RUNTIME_INFO, self.get_broker_runtime_info)
        router.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.query_topic_consume_by_who)
        router.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.get_consumer_running_info)
        router.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.get_producer_connection_list)
        router.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, self.delete_subscription_group)
        router.register(RequestCode.GET_BROKER_CONFIG, self.get_broker_config)
        router.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.consume_message_directly)

    async def update_and_create_topic(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Create or update a topic; re-register with the name servers on change.

        The header's ``attributes`` (``+key=value,-key``) change the topic's attributes as
        ``AdminBrokerProcessor.updateAndCreateTopic`` → ``TopicConfigManager.updateTopicConfig``
        → ``AttributeUtil.alterCurrentAttributes`` do: no ``attributes`` keeps the current ones; a
        malformed string, an unsupported key, a bad value, an unchangeable key on update or a
        ``-key`` on create answers SYSTEM_ERROR with Java's exception message as remark;
        ``+message.type=MIXED`` answers INVALID_PARAMETER ``MIXED message type is not supported.``
        """
        b = self.broker
        h = decode_header(CreateTopicRequestHeader, cmd)
        require(h.topic, "topic")
        problem = validate_topic(h.topic)
        if problem is not None:
            return error(cmd, ResponseCode.INVALID_PARAMETER, problem)
        read = h.read_queue_nums if h.read_queue_nums is not None else 8
        write = h.write_queue_nums if h.write_queue_nums is not None else 8
        if read < 0 or write < 0 or (read == 0 and write == 0):
            return error(cmd, ResponseCode.INVALID_PARAMETER, "readQueueNums/writeQueueNums must be positive")
        try:
            requested = parse_to_map(h.attributes)
        except TopicAttributeError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
        # BrokerConfig.enableMixedMessageType is false by default; rocketpipe has no switch for it
        if requested.get(ATTR_ADD_PLUS_SIGN + TOPIC_MESSAGE_TYPE_ATTRIBUTE.name) == TopicMessageType.MIXED:
            return error(cmd, ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
        current = b.topics.get(h.topic)  # type: ignore[arg-type]
        try:
            attributes = alter_current_attributes(
                current is None, TOPIC_ATTRIBUTES, current.attributes if current else {}, requested
            )
        except TopicAttributeError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
        tc = TopicConfig(
            topic_name=h.topic,  # type: ignore[arg-type]
            read_queue_nums=read,
            write_queue_nums=write,
            perm=h.perm if h.perm is not None else 6,
            topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
            topic_sys_flag=h.topic_sys_flag or 0,
            order=bool(h.order),
            attributes=attributes,
        )
        if b.topics.put(tc, b.clock.now_ms()):
            b.topics_changed()
            if b.config.namesrv_addrs:
                # Java registers the new topic with the name servers before answering
                # (AdminBrokerProcessor.updateAndCreateTopic -> registerIncrementBrokerData), so a
                # route lookup right after the reply finds it.
                await b.register_broker_all()
        return cmd.response(ResponseCode.SUCCESS)

    async def delete_topic(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Forget a topic's config (its stored messages stay until retention)."""
        b = self.broker
        h = decode_header(DeleteTopicRequestHeader, cmd)
        require(h.topic, "topic")
        if b.topics.delete(h.topic, b.clock.now_ms()):  # type: ignore[arg-type]
            b.topics_changed()
        return cmd.response(ResponseCode.SUCCESS)

    async def get_all_topic_config(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Body ``TopicConfigSerializeWrapper`` of every topic."""
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps(self.broker.topics.to_json()))

    async def update_and_create_subscription_group(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Create or update a subscription group from a ``SubscriptionGroupConfig`` JSON body."""
        try:
            cfg = SubscriptionGroupConfig.from_json(jj.as_dict(jj.loads(bytes(cmd.body))))
        except (ProtocolError, KeyError, TypeError, ValueError) as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad SubscriptionGroupConfig body: {exc}")
        problem = validate_group(cfg.group_name)
        if problem is not None:
            return error(cmd, ResponseCode.INVALID_PARAMETER, problem)
        self.broker.groups_config.put(cfg)
        return cmd.response(ResponseCode.SUCCESS)

    async def get_topic_stats_info(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``TopicStatsTable``: min/max offset and last store time per queue."""
        b = self.broker
        h = decode_header(GetTopicStatsInfoRequestHeader, cmd)
        require(h.topic, "topic")
        tc = b.topics.get(h.topic)  # type: ignore[arg-type]
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        table: dict[MessageQueue, Any] = {}
        for q in range(tc.queue_nums):
            mn = b.store.get_min_offset(tc.topic_name, q)
            mx = b.store.get_max_offset(tc.topic_name, q)
            last = b.store.get_store_timestamp(tc.topic_name, q, mx - 1) if mx > 0 else 0
            table[MessageQueue(tc.topic_name, b.config.broker_name, q)] = {
                "lastUpdateTimestamp": last,
                "maxOffset": mx,
                "minOffset": mn,
            }
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps({"offsetTable": table}))

    async def get_consume_stats(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``ConsumeStats`` of a group for one topic, a list, or every topic it has offsets on."""
        b = self.broker
        h = decode_header(GetConsumeStatsRequestHeader, cmd)
        require(h.consumer_group, "consumerGroup")
        group: str = h.consumer_group  # type: ignore[assignment]
        if h.topic:
            topics = [h.topic]
        elif h.topic_list:
            topics = [t for t in h.topic_list.split(",") if t]
        else:
            topics = b.offsets.topics_of_group(group)
        table: dict[MessageQueue, Any] = {}
        for topic in topics:
            tc = b.topics.get(topic)
            if tc is None:
                continue
            for q in range(tc.read_queue_nums):  # AdminBrokerProcessor.getConsumeStats: readQueueNums
                broker_offset = b.store.get_max_offset(topic, q)
                consumer_offset = max(0, b.offsets.query(group, topic, q))
                last = b.store.get_store_timestamp(topic, q, consumer_offset - 1) if consumer_offset > 0 else 0
                table[MessageQueue(topic, b.config.broker_name, q)] = {
                    "brokerOffset": broker_offset,
                    "consumerOffset": consumer_offset,
                    "lastTimestamp": last,
                    "pullOffset": consumer_offset,
                }
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps({"consumeTps": 0.0, "offsetTable": table}))

    async def get_consumer_connection_list(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``ConsumerConnection`` of a group; CONSUMER_NOT_ONLINE when nobody is registered."""
        h = decode_header(GetConsumerConnectionListRequestHeader, cmd)
        require(h.consumer_group, "consumerGroup")
        info = self.broker.clients.consumer_group(h.consumer_group)  # type: ignore[arg-type]
        if info is None or not info.channels:
            return error(cmd, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online")
        body = {
            "connectionSet": [_connection(ch) for ch in info.channels.values()],
            "consumeFromWhere": info.consume_from_where,
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": dict(info.subscriptions.items()),
        }
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps(body))

    async def get_producer_connection_list(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``ProducerConnection`` of a producer group (``AdminBrokerProcessor.getProducerConnectionList``);
        SYSTEM_ERROR "the producer group[...] not exist" when no producer of it is connected here.
        """
        group = (cmd.ext_fields or {}).get("producerGroup")
        require(group, "producerGroup")
        chans = self.broker.clients.producers.get(group or "")
        if not chans:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = {"connectionSet": [_connection(ch) for ch in chans.values()]}
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps(body))

    async def delete_subscription_group(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Forget a group's config (``AdminBrokerProcessor.deleteSubscriptionGroup``). The
        5.x ``cleanOffset`` flag is not honoured: the group's committed offsets stay.
        """
        h = decode_header(DeleteSubscriptionGroupRequestHeader, cmd)
        require(h.group_name, "groupName")
        groups = self.broker.groups_config
        if groups.groups.pop(h.group_name or "", None) is not None:
            groups.dirty = True
        return cmd.response(ResponseCode.SUCCESS)

    async def get_broker_config(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """The broker's settings as Java ``Properties`` text (``AdminBrokerProcessor.getBrokerConfig``):
        one ``key=value`` line per :class:`~rocketpipe.broker.BrokerConfig` field, keys in Java's
        camelCase (rocketpipe's own settings included), booleans ``true``/``false``, sorted.
        """
        lines = []
        for f in dataclasses.fields(self.broker.config):
            value = getattr(self.broker.config, f.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, list | tuple):
                text = ";".join(str(v) for v in value)
            else:
                text = "" if value is None else str(value)
            head, *rest = f.name.split("_")
            lines.append(f"{head}{''.join(p.capitalize() for p in rest)}={text}")
        body = "".join(line + "\n" for line in sorted(lines)).encode()
        return cmd.response(ResponseCode.SUCCESS, None, None, body)

    async def view_message_by_id(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """One stored record by commit-log offset."""
        h = decode_header(ViewMessageRequestHeader, cmd)
        require(h.offset, "offset")
        record = self._record_at(h.offset)  # type: ignore[arg-type]
        if record is None:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}")
        return cmd.response(ResponseCode.SUCCESS, None, None, record)

    def _record_at(self, offset: int) -> bytes | None:
        """The stored record at commit-log ``offset`` (``selectOneMessageByOffset``), or None."""
        msg = self.broker.store.look_message_by_offset(offset)
        if msg is None:
            return None
        return pm.encode_message_ext(msg)

    async def get_consumer_running_info(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Forward GET_CONSUMER_RUNNING_INFO to the client and relay its answer.

        Mirrors ``AdminBrokerProcessor.getConsumerRunningInfo`` → ``callConsumer``.
        """
        h = decode_header(GetConsumerRunningInfoRequestHeader, cmd)
        require(h.consumer_group, "consumerGroup")
        require(h.client_id, "clientId")
        return await self._call_consumer(cmd, h.consumer_group, h.client_id)  # type: ignore[arg-type]

    async def consume_message_directly(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Forward CONSUME_MESSAGE_DIRECTLY to the client with the stored message as body.

        Mirrors ``AdminBrokerProcessor.consumeMessageDirectly``: ext fields ``brokerName`` (this
        broker), ``topicSysFlag`` / ``groupSysFlag`` (when the topic / group is known) are added;
        the body is the record at the commit-log offset of the offset msg id ``msgId`` (none when
        the id does not decode, as Java); SYSTEM_ERROR when nothing is stored at that offset.
        """
        b = self.broker
        h = decode_header(ConsumeMessageDirectlyResultRequestHeader, cmd)
        require(h.consumer_group, "consumerGroup")
        ext = dict(cmd.ext_fields or {})
        ext["brokerName"] = b.config.broker_name
        if h.topic:
            tc = b.topics.get(h.topic)
            if tc is not None:
                ext["topicSysFlag"] = str(tc.topic_sys_flag)
        gcfg = b.groups_config.groups.get(h.consumer_group or "")
        if gcfg is not None:
            ext["groupSysFlag"] = str(gcfg.group_sys_flag)
        body: bytes | None = None
        try:
            _, offset = pm.decode_offset_msg_id(h.msg_id or "")
        except (InvalidArgumentError, ValueError):
            pass  # Java: an undecodable host is swallowed and the request forwarded without a body
        else:
            body = self._record_at(offset)
            if body is None:  # Java: selectOneMessageByOffset null → NPE → SYSTEM_ERROR
                return error(cmd, ResponseCode.SYSTEM_ERROR, f"no message stored at commit-log offset {offset}")
        return await self._call_consumer(cmd, h.consumer_group, h.client_id, ext=ext, body=body)  # type: ignore[arg-type]

    async def _call_consumer(
        self,
        cmd: RemotingCommand,
        group: str,
        client_id: str | None,
        *,
        ext: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> RemotingCommand:
        """``AdminBrokerProcessor.callConsumer``: send ``cmd`` (same code, ext fields, body) to
        the channel of ``client_id`` in ``group`` and answer with the client's response.

        SYSTEM_ERROR "The Consumer <g> <id> not online" when no such channel; CONSUME_MSG_TIMEOUT
        when the client does not answer within 10 s; SYSTEM_ERROR on any other failure.
        """
        info = self.broker.clients.consumer_group(group)
        ch = None
        if info is not None:
            ch = next((c for c in info.channels.values() if c.client_id == client_id), None)
        if ch is None:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        fwd = RemotingCommand.request(
            cmd.code,
            ext if ext is not None else dict(cmd.ext_fields or {}),
            body if body is not None else bytes(cmd.body),
        )
        try:
            resp = await ch.channel.request(fwd, CALL_CLIENT_TIMEOUT)  # type: ignore[attr-defined]
        except RequestTimeoutError as exc:
            return error(cmd, ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}")
        except TransportError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {exc}")
        return cmd.response(resp.code, resp.remark, dict(resp.ext_fields or {}), bytes(resp.body))

    async def invoke_broker_to_reset_offset(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Reset a group's offsets on a topic (5.x ``useServerSideResetOffset`` path).

        Target per queue: with ``queueId`` >= 0 the header ``offset`` when given (not -1; outside
        [min, max + 1] → SYSTEM_ERROR, nothing reset), else for every read queue (``offset`` is
        then ignored, as in Java) the max offset for a negative ``timestamp``, else the first
        offset stored at or after ``timestamp``; ``isForce`` is ignored, as in Java 5.x (the 4.x
        client-side path moved a queue forward only with it). The committed offset is replaced
        at once and the next pull of each queue answers PULL_OFFSET_MOVED (``OFFSET_RESET``); client commits
        are ignored until then. Body: ``ResetOffsetBody`` of the new offsets. TOPIC_NOT_EXIST /
        SUBSCRIPTION_GROUP_NOT_EXIST (a group the broker has no config of) as Java 5.x
        ``AdminBrokerProcessor.resetOffsetInner``.
        """
        b = self.broker
        h = decode_header(ResetOffsetRequestHeader, cmd)
        require(h.group, "group")
        require(h.topic, "topic")
        group: str = h.group  # type: ignore[assignment]
        topic: str = h.topic  # type: ignore[assignment]
        tc = b.topics.get(topic)
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        if group not in b.groups_config.groups:  # resetOffsetInner: containsSubscriptionGroup
            return error(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} does not exist")
        by_queue = h.queue_id is not None and h.queue_id >= 0
        queues = [h.queue_id] if h.queue_id is not None and by_queue else list(range(tc.read_queue_nums))
        targets: dict[int, int] = {}
        for q in queues:
            mn, mx = b.store.get_min_offset(topic, q), b.store.get_max_offset(topic, q)
            if by_queue and h.offset is not None and h.offset != -1:
                # resetOffsetInner: an explicit offset only for one queue, within [min, max + 1]
                if (mn >= 0 and h.offset < mn) or h.offset > mx + 1:
                    return error(
                        cmd,
                        ResponseCode.SYSTEM_ERROR,
                        f"Target offset {h.offset} not in consume queue range [{mn}-{mx}]",
                    )
                target = h.offset
            elif (h.timestamp or 0) < 0:  # searchOffsetByTimestamp: a negative time = the max offset
                target = mx
            else:
                target = b.store.get_offset_by_timestamp(topic, q, h.timestamp or 0)
            targets[q] = target
        table: dict[MessageQueue, int] = {}
        for q, target in targets.items():
            b.offsets.set_reset(group, topic, q, target)
            table[MessageQueue(topic, b.config.broker_name, q)] = target
        return cmd.response(ResponseCode.SUCCESS, None, None, ResetOffsetBody(offset_table=table).encode())

    async def get_topic_config(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``TopicConfigAndQueueMapping`` of one topic (5.x ``AdminBrokerProcessor.getTopicConfig``).

        The body is the ``TopicConfig`` bean (with its ``attributes``, ``{}`` when none) plus
        ``mappingDetail``, which is null here (no static topics) and so left out, as fastjson's
        ``toJSONString`` leaves null fields out. TOPIC_NOT_EXIST for an unknown topic.
        """
        h = decode_header(GetTopicConfigRequestHeader, cmd)
        require(h.topic, "topic")
        tc = self.broker.topics.get(h.topic)  # type: ignore[arg-type]
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {h.topic}")
        body = tc.to_json()
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps(body))

    async def query_topic_consume_by_who(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``GroupList`` of the groups consuming a topic: groups registered here with a
        subscription to it (``ConsumerManager.queryTopicConsumeByWho``) plus groups with offsets
        on it (``ConsumerOffsetManager.whichGroupByTopic``). An unknown topic gives an empty list.
        """
        b = self.broker
        h = decode_header(QueryTopicConsumeByWhoRequestHeader, cmd)
        require(h.topic, "topic")
        topic: str = h.topic  # type: ignore[assignment]
        groups = {g for g, info in b.clients.consumers.items() if topic in info.subscriptions}
        groups.update(b.offsets.groups_of_topic(topic))
        return cmd.response(ResponseCode.SUCCESS, None, None, GroupList(groups).encode())

    async def get_broker_runtime_info(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``KVTable`` of run-time figures (``AdminBrokerProcessor.prepareRuntimeInfo``)."""
        return cmd.response(ResponseCode.SUCCESS, None, None, KVTable(self.runtime_info()).encode())

    def runtime_info(self) -> dict[str, str]:
        """The ``prepareRuntimeInfo`` table, with the keys rocketpipe can fill honestly.

        From ``StoreStatsService``/``DefaultMessageStore.getRuntimeInfo`` (4.9.x and 5.x),
        ``ScheduleMessageService.buildRunningStats`` and ``BrokerStats``. Both TPS key
        spellings are sent: 4.9.x ``getTransferedTps`` (read by 4.9 ``clusterList``) and 5.x
        ``getTransferredTps``. Requests are served on the event loop, not queued in thread
        pools, so the pool queue sizes and head wait times are 0. Put latency figures, pool
        capacities and the per-topic/TPS breakdowns of get hits/misses are not kept and are left out.
        """
        b = self.broker
        st = b.stats
        store = b.store
        now = b.clock.now_ms()
        root = str(b.config.store_dir)
        times = st.put_times_total or 1  # StoreStatsService: 0 -> 1
        info: dict[str, str] = {
            "bootTimestamp": str(st.boot_ms),
            "runtime": format_runtime(now - st.boot_ms),
            "putMessageTimesTotal": str(times),
            "putMessageSizeTotal": str(st.put_size_total),
            "putMessageAverageSize": repr(st.put_size_total / times),
            "putTps": st.put_tps(),
            "getTransferredTps": st.get_transferred_tps(),
            "getTransferedTps": st.get_transferred_tps(),
            "brokerActive": "true",
            "brokerVersionDesc": CURRENT_VERSION_DESC,
            "brokerVersion": str(CURRENT_VERSION),
            # BrokerStats: the morning snapshots are taken daily from the next midnight on
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(st.put_nums),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(st.get_nums),
            "dispatchBehindBytes": "0",  # consume queues are written with the commit log
            "pageCacheLockTimeMills": "0",  # no put holds the append lock while this runs
            "earliestMessageTimeStamp": str(_earliest_message_time(store)),
            "startAcceptSendRequestTimeStamp": "0",
            "timerReadBehind": "0",  # no timer wheel: Java's values with timerWheelEnable=false
            "timerOffsetBehind": "0",
            "timerCongestNum": "0",
            "timerEnqueueTps": "0.0",
            "timerDequeueTps": "0.0",
            "remainTransientStoreBufferNumbs": str(2**31 - 1),  # transientStorePoolEnable=false
            "remainHowManyDataToFlush": human_readable_bytes(max(0, store.get_max_phy_offset() - store.flushed_offset)),
            "commitLogMinOffset": str(store.get_min_phy_offset()),
            "commitLogMaxOffset": str(store.get_max_phy_offset()),
            # rocketpipe: damaged commit-log records found (never served), and the disk-full flag
            "damagedRecords": str(store.damaged_records),
            "diskFull": "true" if store.disk_full else "false",
        }
        for name in ("send", "pull", "litePull", "query", "ack"):
            info[f"{name}ThreadPoolQueueSize"] = "0"
            info[f"{name}ThreadPoolQueueHeadWaitTimeMills"] = "0"
        info["EndTransactionQueueSize"] = "0"
        commit_log_dir = os.path.join(root, "commitlog")
        ratio = disk_partition_used_ratio(commit_log_dir)
        info[f"commitLogDiskRatio_{commit_log_dir}"] = repr(ratio)
        info["commitLogDiskRatio"] = repr(ratio)
        info["consumeQueueDiskRatio"] = repr(disk_partition_used_ratio(os.path.join(root, "consumequeue")))
        try:
            vfs = os.statvfs(root)
            total, free = vfs.f_blocks * vfs.f_frsize, vfs.f_bfree * vfs.f_frsize
            info["commitLogDirCapacity"] = (
                f"Total : {human_readable_bytes(total)}, Free : {human_readable_bytes(free)}."
            )
        except OSError:
            pass
        for level, offset in sorted(b.schedule.offsets.items()):  # ScheduleMessageService.buildRunningStats
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{store.get_max_offset(SCHEDULE_TOPIC, level - 1)}"
        return info


def _connection(ch: Any) -> dict[str, Any]:
    """The ``Connection`` bean of a client channel (``ClientChannelInfo``)."""
    try:
        lang = LanguageCode(ch.language).name
    except ValueError:
        lang = "OTHER"
    return {
        "clientAddr": getattr(ch.channel, "remote_address", ""),
        "clientId": ch.client_id,
        "language": lang,
        "version": ch.version,
    }


def _earliest_message_time(store: Any) -> int:
    """``DefaultMessageStore.getEarliestMessageTime``: store time at the commit log's min offset, or -1."""
    offset = store.get_min_phy_offset()
    size = store.commit_log.record_size_at(offset)
    return store.commit_log.pickup_store_timestamp(offset, size) if size > 0 else -1


def human_readable_bytes(n: int) -> str:
    """``MixAll.humanReadableByteCount(n, false)``: ``"512 B"``, ``"1.5 KiB"``."""
    if n < 1024:
        return f"{n} B"
    exp = int(math.log(n) / math.log(1024))
    return f"{n / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"
