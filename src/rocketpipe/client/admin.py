"""Admin: topic metadata, queue offsets and raw pulls (L3; what Spark and the CLI use).

Mirrors the parts of ``DefaultMQAdminExt`` / ``MQAdminImpl`` that read topic routes and queue
offsets, ``DefaultMQPullConsumer.pull`` without a consumer group's state (for exact offset-range
reads), and ``createTopic``. Constructing an :class:`Admin` opens nothing; connections are
made on first use. Imports sibling client modules, protocol and errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar

from ..errors import InvalidArgumentError, RocketMQError, RouteNotFoundError, TransportError
from ..protocol.message import MessageQueue
from ..protocol.sysflag import PERM_READ, PERM_WRITE, build_pull_sys_flag
from . import rpc
from .config import ClientConfig
from .consumer.assignment import MessageRequestMode, SetMessageRequestModeRequestBody
from .consumer.assignment import set_message_request_mode as _set_message_request_mode
from .routing import MASTER_ID, subscribe_queues
from .rpc import PullRaw
from .runtime import ClientRuntime

if TYPE_CHECKING:
    from ..protocol.bodies.route import TopicRouteData

T = TypeVar("T")

#: MixAll.TOOLS_CONSUMER_GROUP: the group name admin tools pull with.
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
#: SetConsumeModeSubCommand: timeout of each SET_MESSAGE_REQUEST_MODE (5 000 ms), seconds.
SET_MESSAGE_REQUEST_MODE_TIMEOUT: Final = 5.0


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

    async def create_topic(self, topic: str, queue_nums: int = 8, broker_addr: str | None = None) -> None:
        """Create or update ``topic`` with ``queue_nums`` read and write queues (perm RW).

        Args:
            topic: the topic name.
            queue_nums: read and write queue count.
            broker_addr: one broker to create it on; None = every master of the cluster info.

        Raises:
            InvalidArgumentError: ``queue_nums`` < 1; BrokerError / TransportError.
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
            await rpc.create_topic(
                rt.pool, addr, topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=PERM_READ | PERM_WRITE, timeout=t
            )

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
                for bid, addr in ((info.broker_addr_table.get(name).broker_addrs or {}) if name in info.broker_addr_table else {}).items()
                if int(bid) == MASTER_ID
            )
            if not addrs:
                raise RocketMQError(f"no master broker for topic {topic!r} (cluster {cluster_name!r})")
        body = SetMessageRequestModeRequestBody(topic, group, mode, pop_share_queue_num)
        for addr in addrs:
            await _set_message_request_mode(rt, addr, body, SET_MESSAGE_REQUEST_MODE_TIMEOUT)
        return addrs

    # ------------------------------------------------------------------ cluster and topic lists
