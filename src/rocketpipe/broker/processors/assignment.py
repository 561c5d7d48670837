"""Server-side rebalance: QUERY_ASSIGNMENT (400), SET_MESSAGE_REQUEST_MODE (401) and
GET_ALL_MESSAGE_REQUEST_MODE (402).

Mirrors ``QueryAssignmentProcessor`` (400, 401), ``AdminBrokerProcessor.getAllMessageRequestMode``
(402), ``MessageRequestModeManager`` (the table, persisted to
``<store_dir>/config/messageRequestMode.json`` after every SET, loaded at start) and
``TopicRouteInfoManager.getTopicSubscribeInfo`` (a topic's queues on every broker, from the
name server's route, reused for ``load_balance_poll_name_server_interval`` s).

* 401: body :class:`~rocketpipe.protocol.bodies.assignment.SetMessageRequestModeRequestBody`;
  NO_PERMISSION for a ``%RETRY%`` topic, TOPIC_NOT_EXIST for a topic unknown to this broker,
  SUBSCRIPTION_GROUP_NOT_EXIST when the group is unknown and cannot be auto-created; else
  SUCCESS and the table is written to disk before the answer.
* 400: body :class:`~rocketpipe.protocol.bodies.assignment.QueryAssignmentRequestBody`;
  SUCCESS with :class:`~rocketpipe.protocol.bodies.assignment.QueryAssignmentResponseBody`:
  the queues :func:`~rocketpipe.broker.request_mode.do_load_balance` gives the client, each
  tagged with the effective mode (``{}`` = no valid result: unknown topic, group or strategy).
* 402: SUCCESS, body = the table (``{"messageRequestModeMap": …}``).

A body that is not JSON, lacks ``topic``/``consumerGroup`` (or ``messageModel`` for 400), or
names an unknown mode/model is answered SYSTEM_ERROR (Java fails there with an exception,
which its remoting layer answers SYSTEM_ERROR).

rocketpipe difference: when the name server has no route for the topic (or cannot be reached)
but this broker has the topic, its readable queues here are used instead of answering "no
assignment" (Java answers ``{}`` until its route cache is refreshed).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ...errors import ProtocolError, RocketMQError
from ...protocol import sysflag as sf
from ...protocol.bodies import javajson as jj
from ...protocol.bodies.assignment import (
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from ...protocol.bodies.route import TopicRouteData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.route import GetRouteInfoRequestHeader
from ...protocol.message import MessageQueue
from ...store.json_file import save_json
from ...transport import Connection, Router
from ..context import BrokerContext
from ..metadata import load_file
from ..request_mode import (
    REQUEST_MODE_FILE,
    RETRY_PREFIX,
    AssignmentConfig,
    RequestModeTable,
    do_load_balance,
    effective_mode,
)
from .common import error

log = logging.getLogger(__name__)

#: ``TopicRouteInfoManager.GET_TOPIC_ROUTE_TIMEOUT`` (3 s).
_ROUTE_TIMEOUT_S = 3.0


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """Every readable queue of ``route``: ``MQClientInstance.topicRouteData2TopicSubscribeInfo``."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if sf.is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    }


class AssignmentProcessor:
    """Handlers of 400/401/402 plus the request-mode table they share.

    Args:
        broker: the broker.
        config: assignment settings (Java defaults).

    Attributes:
        table: the request-mode table.
    """

    def __init__(self, broker: BrokerContext, config: AssignmentConfig | None = None) -> None:
        self.broker = broker
        self.config = config or AssignmentConfig()
        self.table = RequestModeTable()
        self._routes: dict[str, tuple[float, set[MessageQueue]]] = {}
        self._save_lock = asyncio.Lock()

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.QUERY_ASSIGNMENT, self.query_assignment)
        router.register(RequestCode.SET_MESSAGE_REQUEST_MODE, self.set_message_request_mode)
        router.register(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, self.get_all_message_request_mode)

    @property
    def path(self) -> Path:
        """``<store_dir>/config/messageRequestMode.json``."""
        return self.broker.config_dir / REQUEST_MODE_FILE

    # ------------------------------------------------------------------ lifecycle
    async def load(self) -> None:
        """Read the persisted table (missing file → empty), with the bad-file policy of
        :mod:`..metadata` (``.bak`` used when the file is bad). Call from ``Broker.start``.

        Raises:
            MetadataError: the file and its ``.bak`` are both unusable and the broker's
                ``recover_metadata`` is False (nothing renamed, the table stays empty).
            OSError: a file cannot be read or renamed.
        """
        recover = self.broker.config.recover_metadata
        obj = await asyncio.to_thread(
            load_file, self.path, RequestModeTable.JSON_SHAPE, recover=recover, what="message request modes"
        )
        self.table.load_json(obj)
        self.table.dirty = False

    async def persist(self) -> None:
        """Write the table (atomically, keeping ``.bak``); one write at a time.

        Raises:
            OSError: the write failed (the table stays dirty).
        """
        async with self._save_lock:
            self.table.dirty = False
            try:
                await asyncio.to_thread(save_json, self.path, self.table.to_json())
            except BaseException:
                self.table.dirty = True
                raise

    async def close(self) -> None:
        """Write the table if a write failed earlier (the name-server connections are the broker's)."""
        if self.table.dirty:
            try:
                await self.persist()
            except OSError as exc:
                log.warning("persisting %s failed: %s", REQUEST_MODE_FILE, exc)

    # ------------------------------------------------------------------ 401
    async def set_message_request_mode(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """SET_MESSAGE_REQUEST_MODE: record (and persist) the mode of (topic, group).

        Mirrors ``QueryAssignmentProcessor.setMessageRequestMode``.
        """
        b = self.broker
        try:
            body = SetMessageRequestModeRequestBody.decode(bytes(cmd.body or b""))
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad SetMessageRequestModeRequestBody: {exc}")
        if not body.topic or not body.consumer_group:
            return error(
                cmd, ResponseCode.SYSTEM_ERROR, "SetMessageRequestModeRequestBody needs topic and consumerGroup"
            )
        if body.topic.startswith(RETRY_PREFIX):
            return error(cmd, ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        if b.topics.get(body.topic) is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{body.topic}] not exist")
        if b.groups_config.find(body.consumer_group) is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist")
        self.table.set(body.topic, body.consumer_group, body)
        try:
            await self.persist()
        except OSError as exc:  # Java logs a failed ConfigManager.persist and still answers SUCCESS
            log.warning("persisting %s failed: %s", REQUEST_MODE_FILE, exc)
        log.info(
            "message request mode set topic=%s group=%s mode=%s popShareQueueNum=%d",
            body.topic,
            body.consumer_group,
            body.mode.value,
            body.pop_share_queue_num,
        )
        return cmd.response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ 402
    async def get_all_message_request_mode(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_ALL_MESSAGE_REQUEST_MODE: the whole table. Mirrors ``AdminBrokerProcessor.getAllMessageRequestMode``."""
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps(self.table.to_json()))

    # ------------------------------------------------------------------ 400
    async def query_assignment(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """QUERY_ASSIGNMENT: the queues (and their mode) this client should consume.

        Mirrors ``QueryAssignmentProcessor.queryAssignment`` / ``doLoadBalance``.
        """
        b = self.broker
        try:
            req = QueryAssignmentRequestBody.decode(bytes(cmd.body or b""))
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad QueryAssignmentRequestBody: {exc}")
        if not req.topic or req.consumer_group is None or req.message_model is None:
            return error(
                cmd, ResponseCode.SYSTEM_ERROR, "QueryAssignmentRequestBody needs topic, consumerGroup and messageModel"
            )
        topic, group = req.topic, req.consumer_group
        mode = effective_mode(self.table, topic, group, self.config)
        info = b.clients.consumer_group(group)
        assigned = do_load_balance(
            topic=topic,
            group=group,
            client_id=req.client_id or "",
            message_model=req.message_model,
            strategy_name=req.strategy_name or "",
            mode=mode,
            mq_set=await self.topic_subscribe_info(topic),
            cid_all=info.client_ids() if info is not None else None,
            broker_name=b.config.broker_name,
            server_load_balancer_enable=self.config.server_load_balancer_enable,
        )
        if assigned is None:
            log.debug(
                "query assignment: no assignment topic=%s group=%s client=%s strategy=%s",
                topic,
                group,
                req.client_id,
                req.strategy_name,
            )
            body = QueryAssignmentResponseBody(None)
        else:
            body = QueryAssignmentResponseBody([MessageQueueAssignment(mq, mode.mode) for mq in assigned])
        return cmd.response(ResponseCode.SUCCESS, None, None, body.encode())

    async def topic_subscribe_info(self, topic: str) -> set[MessageQueue] | None:
        """Every readable queue of ``topic`` on every broker, or None when the topic is unknown.

        From the name servers' route (cached ``load_balance_poll_name_server_interval`` s), as
        ``TopicRouteInfoManager.getTopicSubscribeInfo``; without name servers, or when none
        knows the topic, this broker's own readable queues (None if it has no such topic).
        """
        loop = asyncio.get_running_loop()
        cached = self._routes.get(topic)
        if cached is not None and loop.time() - cached[0] < self.config.load_balance_poll_name_server_interval:
            return set(cached[1])
        for addr in self.broker.config.namesrv_addrs:
            route = await self._fetch_route(addr, topic)
            if route is not None:
                queues = subscribe_queues(topic, route)
                self._routes[topic] = (loop.time(), queues)
                return set(queues)
        tc = self.broker.topics.get(topic)
        if tc is None:
            return None
        if not sf.is_readable(tc.perm):
            return set()
        return {MessageQueue(topic, self.broker.config.broker_name, i) for i in range(tc.read_queue_nums)}

    async def _fetch_route(self, addr: str, topic: str) -> TopicRouteData | None:
        req = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        )
        try:
            resp = await self.broker.pool.request(
                addr, req, _ROUTE_TIMEOUT_S
            )  # the broker's own name-server connections
        except (RocketMQError, OSError) as exc:
            log.info("query assignment: route lookup failed namesrv=%s topic=%s error=%s", addr, topic, exc)
            return None
        if resp.code != ResponseCode.SUCCESS:
            return None
        try:
            return TopicRouteData.decode(bytes(resp.body))
        except ProtocolError as exc:
            log.warning("query assignment: bad route from namesrv=%s topic=%s: %s", addr, topic, exc)
            return None
