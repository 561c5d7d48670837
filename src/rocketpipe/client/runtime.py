"""ClientRuntime: connections, name servers, routes, heartbeats and periodic tasks (L3).

One runtime per client id, shared explicitly (``runtime=`` argument) or owned by a single
producer / consumer / admin. Mirrors ``MQClientInstance``: route cache and broker address
table, name-server selection (start at a random server, move on when it fails), heartbeats to
every broker, the periodic route-refresh / heartbeat / offset-persist tasks, the producer and
consumer tables (``selectProducer`` / ``selectConsumer``: :meth:`ClientRuntime.find_producer`,
:meth:`ClientRuntime.find_consumer`), and inbound requests from brokers
(NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE as
``ClientRemotingProcessor.checkTransactionState``, and PUSH_REPLY_MESSAGE_TO_CLIENT as its
``receiveReplyMessage``: the replies of request-reply, matched in :attr:`ClientRuntime.request_futures`).

Imports transport, protocol, errors and sibling client modules (never broker/namesrv/store).
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ClientClosedError, RocketMQError, TopicNotExistError, TransportError
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.consumer import NotifyConsumerIdsChangedRequestHeader
from ..protocol.headers.send import ReplyMessageRequestHeader
from ..protocol.headers.transaction import CheckTransactionStateRequestHeader
from ..protocol.message import (
    PROPERTY_CORRELATION_ID,
    PROPERTY_PRODUCER_GROUP,
    MessageExt,
    decode_records,
)
from ..ratelog import RateLimitedLog
from ..transport.pool import ConnectionPool
from ..transport.router import Router
from . import rpc
from ._tasks import TaskOwner, periodic
from .config import ClientConfig
from .request_reply import (
    REQUEST_SCAN_INITIAL_DELAY,
    REQUEST_SCAN_INTERVAL,
    RequestFutureHolder,
    reply_message_from_push,
)
from .routing import MASTER_ID, broker_addr_table

if TYPE_CHECKING:
    from ..protocol.bodies.route import TopicRouteData
    from ..transport.connection import Connection

log = logging.getLogger(__name__)

T = TypeVar("T")

#: MixAll.CLIENT_INNER_PRODUCER_GROUP (listed in every Java client's heartbeat).
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ProducerMember(Protocol):
    """What the runtime needs from a registered producer (Java ``MQProducerInner``)."""

    producer_group: str

    async def check_transaction_state(
        self, conn: Connection, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """Answer the broker's CHECK_TRANSACTION_STATE for the half message ``msg``.

        ``conn`` is the connection the check arrived on (the END_TRANSACTION goes back there).
        """


class ConsumerMember(Protocol):
    """What the runtime needs from a registered consumer."""

    group: str

    def consumer_data(self) -> Any:
        """Return the ``ConsumerData`` heartbeat element of this consumer."""

    def subscribed_topics(self) -> list[str]:
        """Return the topics whose routes must be kept fresh."""

    def on_consumer_ids_changed(self) -> None:
        """Rebalance soon (NOTIFY_CONSUMER_IDS_CHANGED arrived)."""

    async def persist_offsets(self) -> None:
        """Send the consumer's offsets to the brokers (periodic task)."""


class ClientRuntime:
    """Connections, routes and periodic tasks of one client id.

    Mirrors ``MQClientInstance``. Constructing a runtime opens nothing; connections are made
    on first use. :meth:`start` starts the periodic tasks; :meth:`close` stops them and closes
    the connections.

    Args:
        config: client settings; a ``DEFAULT`` instance name becomes ``<pid>#<ns>``.
        clock: wall clock (timestamps).
    """

    def __init__(self, config: ClientConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config.with_pid_instance_name()
        self.clock = clock
        self.client_id = self.config.client_id()
        self.router = Router()
        self.router.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify_consumer_ids_changed)
        self.router.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        self.router.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._on_push_reply_message)
        #: the pending request-reply requests of this client (Java ``RequestFutureHolder``)
        self.request_futures = RequestFutureHolder(clock)
        self._request_scan: asyncio.Task[None] | None = None
        self._pool: ConnectionPool | None = None
        self._closed = False
        self._namesrvs = self.config.namesrv_addrs()
        self._ns_index = random.randrange(len(self._namesrvs))
        self._routes: dict[str, TopicRouteData] = {}
        self._brokers: dict[str, dict[int, str]] = {}
        self._route_topics: set[str] = set()
        self._producers: dict[str, list[ProducerMember | None]] = {}
        self._announced: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._inbound_log = RateLimitedLog(log, 60.0)
        self._consumers: dict[str, ConsumerMember] = {}
        self._tasks = TaskOwner(f"runtime[{self.client_id}]")
        self._heartbeat_wake = asyncio.Event()
        self._heartbeat_lock: asyncio.Lock | None = None
        self._announce_lock: asyncio.Lock | None = None
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def pool(self) -> ConnectionPool:
        """The connection pool (created on first use).

        Raises:
            ClientClosedError: the runtime is closed.
            InvalidArgumentError: ``use_tls`` and a TLS file that is not a PEM certificate / key.
        """
        if self._closed:
            raise ClientClosedError("client runtime is closed")
        if self._pool is None:
            creds = self.config.credentials
            tls = self.config.tls_client_config()
            self._pool = ConnectionPool(
                router=self.router,
                connect_timeout=self.config.connect_timeout,
                request_hook=None if creds is None else creds.sign,
                ssl_context=None if tls is None else tls.client_context(),
            )
        return self._pool

    async def start(self) -> None:
        """Start route refresh, heartbeat and offset-persist tasks (idempotent).

        Periods: ``poll_name_server_interval`` (first after 10 ms), ``heartbeat_broker_interval``
        (first after 1 s), ``persist_consumer_offset_interval`` (first after 10 s, capped at the
        period), as ``MQClientInstance.startScheduledTask``.
        """
        if self._closed:
            raise ClientClosedError("client runtime is closed")
        if self._started:
            return
        self._started = True
        await self._tasks.start()
        cfg = self.config
        self._tasks.spawn(
            periodic("route", cfg.poll_name_server_interval, self.update_all_routes, initial_delay=0.01), "route"
        )
        self._tasks.spawn(
            periodic(
                "heartbeat",
                cfg.heartbeat_broker_interval,
                self.send_heartbeat_to_all_brokers,
                initial_delay=1.0,
                wake=self._heartbeat_wake,
            ),
            "heartbeat",
        )
        self._tasks.spawn(
            periodic(
                "persist",
                cfg.persist_consumer_offset_interval,
                self._persist_all_consumers,
                initial_delay=min(10.0, cfg.persist_consumer_offset_interval),
            ),
            "persist",
        )

    async def close(self) -> None:
        """Stop the periodic tasks and close every connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._tasks.close()
        if self.request_futures:
            self.request_futures.fail_all(ClientClosedError("client closed while waiting for a reply"))
        if self._pool is not None:
            await self._pool.close()

    async def __aenter__(self) -> ClientRuntime:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def tasks(self) -> TaskOwner:
        """The runtime's task owner."""
        return self._tasks

    # ------------------------------------------------------------------ registration

    def register_producer(self, group: str, producer: ProducerMember | None = None) -> None:
        """Add a producer group to heartbeats (``producerDataSet``) and, when given, the producer
        to the table :meth:`find_producer` reads (``MQClientInstance.registerProducer``).

        Several producers of one group may share a runtime (unlike Java, which refuses the
        second); the group stays in heartbeats until the last of them unregisters, and
        :meth:`find_producer` returns the most recently registered one.
        """
        self._producers.setdefault(group, []).append(producer)

    def unregister_producer(self, group: str, producer: ProducerMember | None = None) -> None:
        """Remove ``producer`` (or, when None, every registration) of ``group``; the group leaves
        heartbeats when no registration is left."""
        members = self._producers.get(group)
        if members is None:
            return
        if producer is None:
            members.clear()
        else:
            for i in range(len(members) - 1, -1, -1):
                if members[i] is producer:
                    del members[i]
                    break
        if not members:
            del self._producers[group]

    def find_producer(self, group: str) -> ProducerMember | None:
        """Return the producer registered for ``group`` (inbound broker requests), or None.

        Mirrors ``MQClientInstance.selectProducer``.
        """
        for member in reversed(self._producers.get(group, ())):
            if member is not None:
                return member
        return None

    def register_consumer(self, consumer: ConsumerMember) -> None:
        """Add a consumer (heartbeats, route refresh, ids-changed, offset persistence).

        Raises:
            InvalidArgumentError: the group is already registered in this runtime.
        """
        from ..errors import InvalidArgumentError

        if consumer.group in self._consumers:
            raise InvalidArgumentError(
                f"consumer group {consumer.group!r} already registered in this client; use another runtime"
            )
        self._consumers[consumer.group] = consumer

    def unregister_consumer(self, group: str) -> None:
        """Remove a consumer group."""
        self._consumers.pop(group, None)

    def find_consumer(self, group: str) -> ConsumerMember | None:
        """Return the consumer registered for ``group`` (inbound broker requests), or None."""
        return self._consumers.get(group)

    def add_route_topic(self, topic: str) -> None:
        """Keep ``topic``'s route refreshed by the periodic task."""
        self._route_topics.add(topic)

    # ------------------------------------------------------------------ name servers and routes

    async def invoke_namesrv(self, call: Callable[[str], Awaitable[T]]) -> T:
        """Run ``call(addr)`` against a name server, moving to the next one on network errors.

        Raises:
            TransportError: every name server failed; BrokerError: the name server answered
            with an error (not retried elsewhere).
        """
        last: TransportError | None = None
        for _ in range(len(self._namesrvs)):
            addr = self._namesrvs[self._ns_index % len(self._namesrvs)]
            try:
                return await call(addr)
            except TransportError as exc:
                last = exc
                log.warning("name server failed addr=%s err=%s", addr, exc)
                self._ns_index += 1
        assert last is not None
        raise last

    async def fetch_route(self, topic: str) -> TopicRouteData:
        """Ask a name server for ``topic``'s route and update the caches.

        Raises:
            TopicNotExistError: no route (retriable, refresh_route); TransportError.
        """
        timeout = self.config.request_timeout
        route = await self.invoke_namesrv(lambda addr: rpc.get_route_info(self.pool, addr, topic, timeout))
        self._routes[topic] = route
        for name, addrs in broker_addr_table(route).items():
            self._brokers[name] = dict(addrs)
        return route

    async def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """Return the cached route of ``topic``, fetching it when absent or asked to.

        Raises:
            TopicNotExistError: no route; TransportError: no name server reachable.
        """
        if not refresh:
            cached = self._routes.get(topic)
            if cached is not None:
                return cached
        return await self.fetch_route(topic)

    def cached_route(self, topic: str) -> TopicRouteData | None:
        """Return the cached route or None (no I/O)."""
        return self._routes.get(topic)

    async def update_all_routes(self) -> None:
        """Refresh the routes of every registered topic (periodic task)."""
        topics = set(self._route_topics)
        for c in self._consumers.values():
            topics.update(c.subscribed_topics())
        for topic in sorted(topics):
            try:
                await self.fetch_route(topic)
            except TopicNotExistError:
                log.debug("no route yet topic=%s", topic)
            except RocketMQError as exc:
                log.warning("route refresh failed topic=%s err=%s", topic, exc)

    def find_broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """Return the address of a broker id (master by default), or None when unknown."""
        return self._brokers.get(broker_name, {}).get(broker_id)

    async def find_master_addr(self, broker_name: str, topic: str | None = None) -> str:
        """Return the master address of ``broker_name``, refreshing ``topic``'s route if unknown.

        Raises:
            RocketMQError: the broker is unknown even after a refresh.
        """
        addr = self.find_broker_addr(broker_name)
        if addr is None and topic is not None:
            try:
                await self.fetch_route(topic)
            except RocketMQError as exc:
                log.debug("route refresh for broker lookup failed topic=%s err=%s", topic, exc)
            addr = self.find_broker_addr(broker_name)
        if addr is None:
            raise RocketMQError(f"broker {broker_name!r} has no known master address")
        return addr

    def all_broker_addrs(self, *, masters_only: bool = False) -> list[str]:
        """Return every known broker address (sorted)."""
        out = {
            a for addrs in self._brokers.values() for bid, a in addrs.items() if not masters_only or bid == MASTER_ID
        }
        return sorted(out)

    # ------------------------------------------------------------------ heartbeats

    def heartbeat_body(self) -> bytes | None:
        """Encode the ``HeartbeatData`` of this client, or None when nothing is registered."""
        from ..protocol.bodies.heartbeat import HeartbeatData, ProducerData

        if not self._producers and not self._consumers:
            return None
        groups = sorted(set(self._producers) | {CLIENT_INNER_PRODUCER_GROUP})
        data = HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=g) for g in groups],
            consumer_data_set=[c.consumer_data() for c in self._consumers.values()],
        )
        return data.encode()

    def wake_heartbeat(self) -> None:
        """Ask the heartbeat task to run now."""
        self._heartbeat_wake.set()

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every known broker (masters only when there is no consumer).

        Errors are logged per broker. Mirrors ``MQClientInstance.sendHeartbeatToAllBroker``.
        """
        if self._heartbeat_lock is None:
            self._heartbeat_lock = asyncio.Lock()
        async with self._heartbeat_lock:
            body = self.heartbeat_body()
            if body is None:
                return
            for addr in self.all_broker_addrs(masters_only=not self._consumers):
                await self._announce(addr, body)

    async def heartbeat_once(self, addr: str) -> None:
        """HEART_BEAT to ``addr`` unless this client already sent one on the current connection.

        Java 5.x sends a heartbeat when a connection to a known broker becomes active
        (``MQClientInstance``'s ``onChannelActive``); a transactional producer needs it so that the
        broker knows its channel for CHECK_TRANSACTION_STATE before the first periodic heartbeat
        (``heartbeat_broker_interval``, 30 s). Errors are logged, never raised.
        """
        conn = self.pool.open_connection(addr)
        if conn is not None and conn in self._announced:
            return
        body = self.heartbeat_body()
        if body is not None:
            await self._announce(addr, body)

    async def _announce(self, addr: str, body: bytes) -> None:
        """Send one HEART_BEAT and remember the connection it went on (errors are logged)."""
        try:
            await rpc.heart_beat(self.pool, addr, body, self.config.request_timeout)
        except RocketMQError as exc:
            log.warning("heartbeat failed broker=%s err=%s", addr, exc)
            return
        conn = self.pool.open_connection(addr)
        if conn is not None:
            self._announced.add(conn)

    async def heartbeat_masters_once(self) -> None:
        """:meth:`heartbeat_once` to every known master at once: the brokers learn this client's
        connection (and its producer groups) before it sends a request whose reply one of them
        will push here (request-reply; Java's ``prepareSendRequest`` heartbeats every broker).

        Masters whose current connection already carried a heartbeat cost nothing. Errors are
        logged, never raised.
        """
        addrs = [a for a in self.all_broker_addrs(masters_only=True) if not self._is_announced(a)]
        if not addrs:
            return
        if self._announce_lock is None:
            self._announce_lock = asyncio.Lock()
        async with self._announce_lock:  # concurrent first requests send one heartbeat per broker
            await asyncio.gather(*(self.heartbeat_once(a) for a in addrs))

    def _is_announced(self, addr: str) -> bool:
        conn = self.pool.open_connection(addr)
        return conn is not None and conn in self._announced

    def ensure_request_scan(self) -> None:
        """Start the expiry scan of :attr:`request_futures` (first after 3 s, then every second,
        as Java's "RequestHouseKeepingService") unless it runs already or the runtime is not
        running."""
        if self._request_scan is not None or not self._tasks.running:
            return

        async def scan() -> None:
            self.request_futures.scan_expired()

        self._request_scan = self._tasks.spawn(
            periodic("request-scan", REQUEST_SCAN_INTERVAL, scan, initial_delay=REQUEST_SCAN_INITIAL_DELAY),
            "request-scan",
        )

    async def unregister_client(self, *, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """UNREGISTER_CLIENT for one group to every known broker; errors are logged."""
        for addr in self.all_broker_addrs():
            try:
                await rpc.unregister_client(
                    self.pool,
                    addr,
                    self.client_id,
                    self.config.request_timeout,
                    producer_group=producer_group,
                    consumer_group=consumer_group,
                )
            except RocketMQError as exc:
                log.warning("unregister client failed broker=%s err=%s", addr, exc)

    # ------------------------------------------------------------------ periodic + inbound

    async def _persist_all_consumers(self) -> None:
        for c in list(self._consumers.values()):
            try:
                await c.persist_offsets()
            except RocketMQError as exc:
                log.warning("persist offsets failed group=%s err=%s", c.group, exc)

    async def _on_notify_consumer_ids_changed(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            group = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(cmd.ext_fields).consumer_group
        except RocketMQError as exc:
            log.warning("bad NOTIFY_CONSUMER_IDS_CHANGED from %s: %s", conn.remote_address, exc)
            return None
        consumer = self._consumers.get(group or "")
        if consumer is not None:
            log.info("consumer ids changed group=%s from=%s", group, conn.remote_address)
            consumer.on_consumer_ids_changed()
        return None

    async def _on_check_transaction_state(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """CHECK_TRANSACTION_STATE (39, oneway): hand the half message to its group's producer.

        Mirrors ``ClientRemotingProcessor.checkTransactionState``: decode the header and the one
        stored message of the body, take the group from its ``PGROUP`` property and call the
        producer's ``check_transaction_state`` (it answers with END_TRANSACTION on ``conn``).
        Undecodable requests and unknown groups are logged (one line per cause per minute).
        """
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(cmd.ext_fields)
            msgs = decode_records(bytes(cmd.body or b""))
        except RocketMQError as exc:
            self._inbound_log.log(
                logging.WARNING, "check-bad", "bad CHECK_TRANSACTION_STATE from %s: %s", conn.remote_address, exc
            )
            return None
        if not msgs:
            self._inbound_log.log(
                logging.WARNING, "check-empty", "CHECK_TRANSACTION_STATE without a message from %s", conn.remote_address
            )
            return None
        msg = msgs[0]
        group = msg.properties.get(PROPERTY_PRODUCER_GROUP)
        producer = self.find_producer(group) if group else None
        if producer is None:
            self._inbound_log.log(
                logging.INFO,
                f"check-unknown-{group}",
                "CHECK_TRANSACTION_STATE for producer group %s, not in this client; from=%s msgId=%s",
                group,
                conn.remote_address,
                header.msg_id,
            )
            return None
        await producer.check_transaction_state(conn, msg, header)
        return None

    async def _on_push_reply_message(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT (326, two-way): a reply for a request of this client.

        Mirrors ``ClientRemotingProcessor.receiveReplyMessage`` / ``processReplyMessage``: the
        reply (:func:`~rocketpipe.client.request_reply.reply_message_from_push`) goes to the
        pending request of its ``CORRELATION_ID``; the answer is SUCCESS, also for a reply no
        request waits for any more (a late one: logged, one line per minute). A header that does
        not decode is answered SYSTEM_ERROR by the router.
        """
        header = ReplyMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        try:
            reply = reply_message_from_push(header, bytes(cmd.body or b""), self.clock.now_ms())
            matched = self.request_futures.complete(reply)
        except Exception as exc:
            log.warning("unknown err when receiveReplyMsg from %s: %r", conn.remote_address, exc)
            return cmd.response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        if matched is None:
            self._inbound_log.log(
                logging.WARNING,
                "reply-unmatched",
                "receive reply message, but not matched any request, CorrelationId: %s, reply from host: %s",
                reply.properties.get(PROPERTY_CORRELATION_ID),
                reply.born_host,
            )
        return cmd.response(ResponseCode.SUCCESS)
