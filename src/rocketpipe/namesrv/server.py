"""The embedded name server (L3): :class:`NameServer`.

Composition root of a name server: a :class:`~rocketpipe.transport.RemotingServer`, the request
processors below, a :class:`~.routes.RouteTable`, an in-memory KV config table and the broker
expiry scan loop (every ``scan_interval_s``, wall time from an injected clock).

Commands served (remoting-protocol.md §3.1, §6.1):

* ``REGISTER_BROKER`` (103): ``RegisterBrokerBody`` JSON for request version >= 37 (the zlib
  ``compressed=true`` form too), a bare ``TopicConfigSerializeWrapper`` below; ``bodyCrc32``
  checked when non-zero; slaves get ``masterAddr``/``haServerAddr``;
* ``UNREGISTER_BROKER`` (104), ``GET_ROUTEINFO_BY_TOPIC`` (105) — standard JSON (quoted numeric
  keys) when the request version >= 401 or ``acceptStandardJsonOnly=true``, fastjson's bare-key
  form otherwise; ``GET_BROKER_CLUSTER_INFO`` (106, always the bare-key form, as Java);
  ``GET_ALL_TOPIC_LIST_FROM_NAMESERVER`` (206); ``QUERY_DATA_VERSION`` (322);
  ``GET_TOPICS_BY_CLUSTER`` (224); KV config ``PUT/GET/DELETE_KV_CONFIG`` (100/101/102) and
  ``GET_KVLIST_BY_NAMESPACE`` (219), in memory only;
* anything else: ``REQUEST_CODE_NOT_SUPPORTED``.

ACL (rocketpipe; Java's name server checks none): with ``acl_enable`` the requests that change
the name server's state (:data:`NAMESRV_ADMIN_CODES`: broker registration and unregistration,
topic deletion, KV config writes, broker write permission) must be signed by an ``admin: true``
account of ``acl_file`` (or come from a white-listed address); they are answered NO_PERMISSION
otherwise and change nothing. Route and cluster queries stay open, as in Java. A broker signs its
registrations with ``BrokerConfig.inner_client_authentication_credentials``.

A broker's connection closing removes it at once (``BrokerHousekeepingService``). Connections
are bounded as the broker's are (:class:`~rocketpipe.transport.limits.ServerLimits`: idle timeout,
maximum connections, bytes held for incomplete frames, rate-limited warnings).
Mirrors ``NamesrvController`` + ``DefaultRequestProcessor`` / ``ClientRequestProcessor``.

Imports: stdlib asyncio, :mod:`rocketpipe.acl`, :mod:`rocketpipe.clock`, :mod:`rocketpipe.errors`,
:mod:`rocketpipe.protocol`, :mod:`rocketpipe.transport`, :mod:`.routes`. Never ``store``.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from typing import Final

from ..acl import PlainPermissionManager
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import InvalidArgumentError
from ..protocol.bodies.register import DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper
from ..protocol.bodies.route import KVTable
from ..protocol.codes import VERSION_STANDARD_JSON_ROUTE, RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.route import (
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from ..transport import Connection, RemotingServer, Router
from ..transport.limits import ServerLimits
from ..transport.tls import TlsServerConfig
from .routes import RouteTable

__all__ = ["NAMESRV_ADMIN_CODES", "NameServer"]

#: The name-server requests that need an admin account when the name server checks ACL.
NAMESRV_ADMIN_CODES: Final = frozenset(
    {
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.REGISTER_TOPIC_IN_NAMESRV,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
    }
)

log = logging.getLogger(__name__)

#: MQVersion.V3_0_11: from this request version on the body is a RegisterBrokerBody.
_V3_0_11: Final = 37
#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
NAMESPACE_ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"
_NO_ROUTE: Final = "No topic route info in name server for the topic: "
#: ``FAQUrl.suffixHelpUrl(APPLY_TOPIC_URL)``
_FAQ_SUFFIX: Final = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


def java_crc32(data: bytes | memoryview) -> int:
    """``UtilAll.crc32``: CRC32 masked to 31 bits (never negative)."""
    return zlib.crc32(data) & 0x7FFFFFFF


class NameServer:
    """An embedded RocketMQ name server.

    ``async with NameServer() as ns: ns.address`` — or :meth:`start` / :meth:`close`.

    Args:
        host: interface to bind.
        port: TCP port (0 = any free port; Java's default is 9876).
        clock: wall clock for registration times and expiry.
        broker_expiry_s: seconds without registration after which a broker is dropped, unless
            its registration carries ``heartbeatTimeoutMillis`` (Java 120 s).
        scan_interval_s: seconds between expiry scans (Java ``scanNotActiveBrokerInterval``,
            5 s).
        limits: connection limits (default ``ServerLimits()``: the broker's defaults, idle
            timeout 120 s as Java's ``serverChannelMaxIdleTimeSeconds``).
        tls_server: TLS of the listening port (Java's ``tls.server.*``: disabled / permissive /
            enforcing, see :class:`~rocketpipe.transport.TlsServerConfig`); None: disabled.
        acl_enable: check :data:`NAMESRV_ADMIN_CODES` requests against ``acl_file`` (an
            ``admin: true`` account's signature; rocketpipe only, Java's name server has no ACL).
        acl_file: the plain_acl.yml path (needed with ``acl_enable``), reloaded when it changes.

    Raises:
        InvalidArgumentError: ``tls_server`` names a certificate or key that cannot be loaded;
            ``acl_enable`` without ``acl_file``.
        AclError: the ACL file is missing or malformed.

    Attributes:
        routes: the route table (inspect it in tests).
        address: ``"ip:port"`` once started, else None.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock = SYSTEM_CLOCK,
        broker_expiry_s: float = 120.0,
        scan_interval_s: float = 5.0,
        limits: ServerLimits | None = None,
        tls_server: TlsServerConfig | None = None,
        acl_enable: bool = False,
        acl_file: str | None = None,
    ) -> None:
        self._clock = clock
        self._scan_interval_s = scan_interval_s
        self.routes = RouteTable(default_timeout_ms=int(broker_expiry_s * 1000))
        self._kv: dict[str, dict[str, str]] = {}
        self._router = Router()
        self._register_handlers()
        #: the ACL rules when ``acl_enable`` (None otherwise)
        self.acl: PlainPermissionManager | None = None
        if acl_enable:
            if not acl_file:
                raise InvalidArgumentError("acl_enable needs acl_file")
            self.acl = PlainPermissionManager(acl_file, admin_codes=NAMESRV_ADMIN_CODES)
            self._router.guard = self._acl_guard
        self._server = RemotingServer(self._router, host, port, limits=limits, tls=tls_server)
        self._server.add_close_callback(self._on_connection_closed)
        self._runner: asyncio.Task[None] | None = None
        self._scan_wakeup = asyncio.Event()
        self._closed = False
        self.address: str | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> str:
        """Listen and start the expiry scan loop; return once ready.

        Returns:
            ``"ip:port"`` of the name server.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: already started or closed.
        """
        if self._runner is not None or self._closed:
            raise RuntimeError("NameServer already started or closed")
        self.address = await self._server.start()
        self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"rocketpipe-namesrv-{self.address}")
        log.info("name server started addr=%s", self.address)
        return self.address

    async def close(self) -> None:
        """Stop the scan loop, stop listening and close every connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
            try:
                await self._runner
            except asyncio.CancelledError:
                if (task := asyncio.current_task()) is not None and task.cancelling():
                    raise
        await self._server.close()
        log.info("name server closed addr=%s", self.address)

    async def __aenter__(self) -> NameServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connections(self) -> set[Connection]:
        """Open connections accepted by this name server."""
        return self._server.connections

    def scan_now(self) -> None:
        """Wake the scan loop for an immediate expiry scan (tests, admin)."""
        self._scan_wakeup.set()

    async def _run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._scan_loop(), name="rocketpipe-namesrv-scan")

    async def _scan_loop(self) -> None:
        """Every ``scan_interval_s``: drop brokers not registered within their timeout."""
        while True:
            try:
                async with asyncio.timeout(self._scan_interval_s):
                    await self._scan_wakeup.wait()
            except TimeoutError:
                pass
            self._scan_wakeup.clear()
            try:
                removed = self.routes.scan_expired(self._clock.now_ms())
                if removed:
                    log.info("expired brokers removed addrs=%s", ",".join(removed))
            except Exception:
                log.exception("broker expiry scan failed")

    def _acl_guard(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """Router guard: admin-only requests are checked, the others pass (one set lookup)."""
        if cmd.code not in NAMESRV_ADMIN_CODES or self.acl is None:
            return None
        return self.acl.guard(cmd, conn)

    def _on_connection_closed(self, conn: Connection) -> None:
        removed = self.routes.on_channel_closed(conn)
        if removed:
            log.info("brokers removed on channel close addrs=%s", ",".join(removed))

    # ------------------------------------------------------------------ processors

    def _register_handlers(self) -> None:
        r = self._router
        r.register(RequestCode.REGISTER_BROKER, self._register_broker)
        r.register(RequestCode.UNREGISTER_BROKER, self._unregister_broker)
        r.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._get_route)
        r.register(RequestCode.GET_BROKER_CLUSTER_INFO, self._get_cluster_info)
        r.register(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, self._get_all_topics)
        r.register(RequestCode.GET_TOPICS_BY_CLUSTER, self._get_topics_by_cluster)
        r.register(RequestCode.DELETE_TOPIC_IN_NAMESRV, self._delete_topic)
        r.register(RequestCode.QUERY_DATA_VERSION, self._query_data_version)
        r.register(RequestCode.PUT_KV_CONFIG, self._put_kv)
        r.register(RequestCode.GET_KV_CONFIG, self._get_kv)
        r.register(RequestCode.DELETE_KV_CONFIG, self._delete_kv)
        r.register(RequestCode.GET_KVLIST_BY_NAMESPACE, self._get_kv_list)

    async def _register_broker(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """REGISTER_BROKER (103). Mirrors ``DefaultRequestProcessor.registerBroker``.

        Raises:
            HeaderError: a required header field is missing (answered SYSTEM_ERROR).
            ProtocolError: the body cannot be decoded (answered SYSTEM_ERROR).
        """
        h = RegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.body_crc32 and java_crc32(cmd.body) != h.body_crc32:
            log.warning("register crc32 mismatch broker=%s addr=%s", h.broker_name, h.broker_addr)
            return cmd.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        filter_servers: list[str] = []
        if not cmd.body:
            wrapper = TopicConfigSerializeWrapper(data_version=DataVersion(0, 0, 0))
        elif cmd.version >= _V3_0_11:
            body = RegisterBrokerBody.decode(cmd.body, bool(h.compressed), cmd.version)
            wrapper = body.topic_config_serialize_wrapper
            filter_servers = body.filter_server_list
        else:
            wrapper = TopicConfigSerializeWrapper.decode(cmd.body)
        result = self.routes.register_broker(
            cluster_name=h.cluster_name or "",
            broker_addr=h.broker_addr or "",
            broker_name=h.broker_name or "",
            broker_id=h.broker_id or 0,
            ha_server_addr=h.ha_server_addr or "",
            topic_config_wrapper=wrapper,
            now_ms=self._clock.now_ms(),
            zone_name=h.zone_name,
            timeout_ms=h.heartbeat_timeout_millis,
            enable_acting_master=h.enable_acting_master,
            filter_server_list=filter_servers,
            channel=conn,
        )
        if result is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "register broker failed")
        resp_header = RegisterBrokerResponseHeader(ha_server_addr=result.ha_server_addr, master_addr=result.master_addr)
        order_conf = self._kv.get(NAMESPACE_ORDER_TOPIC_CONFIG)
        return cmd.response(
            ext_fields=resp_header.to_ext_fields(),
            body=KVTable(dict(order_conf)).encode() if order_conf else b"",
        )

    async def _unregister_broker(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """UNREGISTER_BROKER (104)."""
        h = UnRegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.unregister_broker(h.cluster_name or "", h.broker_addr or "", h.broker_name or "", h.broker_id or 0)
        return cmd.response()

    async def _get_route(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_ROUTEINFO_BY_TOPIC (105). Mirrors ``ClientRequestProcessor.getRouteInfoByTopic``."""
        h = GetRouteInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        topic = h.topic or ""
        route = self.routes.route(topic)
        if route is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, _NO_ROUTE + topic + _FAQ_SUFFIX)
        standard = cmd.version >= VERSION_STANDARD_JSON_ROUTE or bool(h.accept_standard_json_only)
        return cmd.response(body=route.encode(standard_json=standard))

    async def _get_cluster_info(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_BROKER_CLUSTER_INFO (106): always fastjson's bare-key form, as Java."""
        return cmd.response(body=self.routes.cluster_info().encode(standard_json=False))

    async def _get_all_topics(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)."""
        return cmd.response(body=self.routes.topic_list().encode())

    async def _get_topics_by_cluster(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_TOPICS_BY_CLUSTER (224)."""
        h = GetTopicsByClusterRequestHeader.from_ext_fields(cmd.ext_fields)
        return cmd.response(body=self.routes.topics_by_cluster(h.cluster or "").encode())

    async def _delete_topic(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """DELETE_TOPIC_IN_NAMESRV (216): ``clusterName`` given → that cluster's brokers only."""
        h = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.delete_topic(h.topic or "", h.cluster_name)
        return cmd.response()

    async def _query_data_version(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """QUERY_DATA_VERSION (322): ``changed`` + the name server's copy; refreshes liveness."""
        h = QueryDataVersionRequestHeader.from_ext_fields(cmd.ext_fields)
        cluster, addr = h.cluster_name or "", h.broker_addr or ""
        dv = DataVersion.decode(cmd.body) if cmd.body else DataVersion(0, 0, 0)
        changed = self.routes.is_broker_topic_config_changed(cluster, addr, dv)
        self.routes.refresh_broker(cluster, addr, self._clock.now_ms())
        known = self.routes.query_broker_data_version(cluster, addr)
        return cmd.response(
            ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext_fields(),
            body=known.encode() if known is not None else b"",
        )

    async def _put_kv(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """PUT_KV_CONFIG (100), in memory."""
        h = PutKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self._kv.setdefault(h.namespace or "", {})[h.key or ""] = h.value or ""
        return cmd.response()

    async def _get_kv(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_KV_CONFIG (101): QUERY_NOT_FOUND when absent."""
        h = GetKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        value = self._kv.get(h.namespace or "", {}).get(h.key or "")
        if value is None:
            return cmd.response(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {h.namespace} Key: {h.key}",
            )
        return cmd.response(ext_fields=GetKVConfigResponseHeader(value=value).to_ext_fields())

    async def _delete_kv(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """DELETE_KV_CONFIG (102)."""
        h = DeleteKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        ns = self._kv.get(h.namespace or "")
        if ns is not None:
            ns.pop(h.key or "", None)
            if not ns:
                del self._kv[h.namespace or ""]
        return cmd.response()

    async def _get_kv_list(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_KVLIST_BY_NAMESPACE (219): QUERY_NOT_FOUND when the namespace is empty."""
        h = GetKVListByNamespaceRequestHeader.from_ext_fields(cmd.ext_fields)
        table = self._kv.get(h.namespace or "")
        if not table:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}")
        return cmd.response(body=KVTable(dict(table)).encode())
