"""``rocketpipe serve``: run a name server and/or a broker in the foreground (L4, cli).

By default both run in this process, the broker registered with the name server. Stops on
SIGINT/SIGTERM, closing the broker (which flushes its store) before the name server.

Logging: stdlib logging with timestamps, level and logger name, to stderr or a rotated
``--log-file`` (:mod:`..logging_setup`); one INFO line at start gives the addresses, the store,
the flush mode, the retention settings and the connection limits. Retention, connection and
metadata-recovery flags map to :class:`~rocketpipe.broker.BrokerConfig` fields (Java names in
``--help``); the idle timeout and connection cap apply to the name server too.
``--acl-enable --acl-file PATH`` turn on the broker's ACL 1.0 check (``aclEnable``, the file is
validated before anything starts); listening on a non-loopback ``--host`` without it logs one
warning line.
``--tls-server-mode {disabled,permissive,enforcing}`` with ``--tls-server-cert`` /
``--tls-server-key`` (``--tls-server-key-password``, ``--tls-server-trust-cert``,
``--tls-server-need-client-auth``) put TLS on the name server's and the broker's ports (Java's
``tls.server.*``; the files are loaded before anything starts, exit 2 when bad). The broker's
registrations go over TLS with ``--use-tls`` and the ``--tls-client-*`` options; when the name
server runs here in ``enforcing`` mode they use TLS on their own, without certificate checks
(the connection goes to an address of this machine and never leaves it).
``--namesrv-acl-enable`` makes the name server check its admin-only requests against
``--acl-file`` (rocketpipe only); the broker then signs its registrations with
``--inner-client-access-key`` / ``--inner-client-secret-key``.
``--authentication-enabled`` / ``--authorization-enabled`` turn on ACL 2.0 (Apache 5.3's users and
ACLs, ``authenticationEnabled`` / ``authorizationEnabled``; ACL 1.0's ``--acl-enable`` is then
ignored, as Apache 5.3 does), with ``--init-authentication-user JSON`` for the first Super user and
``--authentication-whitelist`` / ``--authorization-whitelist`` (request codes).

Imports: the public API of :mod:`rocketpipe.broker`, :mod:`rocketpipe.namesrv` and :mod:`rocketpipe.acl`,
:mod:`rocketpipe.store` (``StoreConfig`` checks ``--delete-when``), :mod:`rocketpipe.transport.limits`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import os
import signal
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from rocketpipe import eventloop
from rocketpipe.errors import InvalidArgumentError, RocketMQError
from rocketpipe.eventloop import event_loop_name
from rocketpipe.transport.limits import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IDLE_SECONDS, ServerLimits

from ..errors import EXIT_CONNECTION, EXIT_USAGE, fail, handle_errors
from ..logging_setup import DEFAULT_LOG_BACKUPS, DEFAULT_LOG_MAX_BYTES, LogLevel, configure_logging
from .acl_options import (
    TlsClientCertOption,
    TlsClientKeyOption,
    TlsClientKeyPasswordOption,
    TlsClientTrustCertOption,
    TlsTestModeOption,
    UseTlsOption,
    tls_from,
)

if TYPE_CHECKING:
    from rocketpipe.acl import SessionCredentials
    from rocketpipe.broker import Broker, BrokerConfig
    from rocketpipe.broker.config import TlsServerConfig
    from rocketpipe.client import ClientConfig
    from rocketpipe.client.config import TlsClientConfig
    from rocketpipe.namesrv import NameServer

console = Console(highlight=False, soft_wrap=True)
log = logging.getLogger("rocketpipe.cli.serve")

#: Default ports of Apache RocketMQ (NamesrvConfig.listenPort, BrokerConfig.listenPort).
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911


class TlsServerModeChoice(StrEnum):
    """``tls.server.mode``."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


#: ``--tls-server-key-password`` (``tls.server.keyPassword``), shared by ``serve`` and ``proxy``
TlsServerKeyPasswordOption = Annotated[
    str | None,
    typer.Option(
        "--tls-server-key-password",
        envvar="ROCKETMQ_TLS_SERVER_KEY_PASSWORD",
        metavar="PASSWORD",
        help="Password of an encrypted --tls-server-key (tls.server.keyPassword; prefer the environment variable).",
        show_envvar=True,
    ),
]
#: ``--tls-server-trust-cert`` (``tls.server.trustCertPath``), shared by ``serve`` and ``proxy``
TlsServerTrustCertOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-server-trust-cert",
        metavar="PATH",
        help="PEM CA certificates that client certificates must chain to (tls.server.trustCertPath).",
    ),
]


class ClientAuthChoice(StrEnum):
    """``tls.server.need.client.auth``."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


class FlushMode(StrEnum):
    """Broker flush mode (``flushDiskType``)."""

    ASYNC = "async"
    SYNC = "sync"


@contextlib.contextmanager
def _stop_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM, with the handlers installed for the block.

    Installed before anything starts, so a stop signal during start-up is a clean stop (the
    servers started so far are closed) rather than the default kill.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def _start_line(
    namesrv_addr: str | None,
    broker_addr: str | None,
    config: BrokerConfig | None,
    limits: ServerLimits,
    tls: TlsServerConfig | None = None,
) -> str:
    """The one line logged at start: addresses, store, flush mode, retention, connection limits."""
    fields = [f"namesrv={namesrv_addr or 'none'}", f"broker={broker_addr or 'none'}"]
    if config is not None:
        fields += [
            f"store={config.store_dir}",
            f"flushDiskType={config.flush_disk_type}",
            f"fileReservedTime={config.file_reserved_time}h",
            f"deleteWhen={config.delete_when}",
            f"diskMaxUsedSpaceRatio={config.disk_max_used_space_ratio}%",
            f"cleanFileForciblyEnable={str(config.clean_file_forcibly_enable).lower()}",
            f"maxTransferCountOnMessageInMemory={config.max_transfer_count_on_message_in_memory}",
            f"recoverMetadata={str(config.recover_metadata).lower()}",
            f"transactionCheckInterval={config.transaction_check_interval}",
            f"aclEnable={str(config.acl_enable).lower()}",
            f"authenticationEnabled={str(config.authentication_enabled).lower()}",
            f"authorizationEnabled={str(config.authorization_enabled).lower()}",
        ]
        if config.acl_enable:
            fields.append(f"aclFile={config.acl_file}")
    fields += [
        f"serverChannelMaxIdleTimeSeconds={limits.server_channel_max_idle_time_seconds}",
        f"maxConnections={limits.server_max_connections}",
        f"eventLoop={event_loop_name()}",
        f"tlsServerMode={'disabled' if tls is None else tls.mode}",
    ]
    if config is not None:
        fields.append(f"tlsEnable={str(config.tls_enable).lower()}")
    return "rocketpipe serve started " + " ".join(fields)


async def run_servers(
    *,
    host: str,
    namesrv_port: int | None,
    namesrv_addr: str | None,
    broker_config: BrokerConfig | None,
    limits: ServerLimits,
    metrics_port: int | None = None,
    tls_server: TlsServerConfig | None = None,
    namesrv_acl_file: str | None = None,
    console_port: int | None = None,
    console_allow_writes: bool = False,
    console_credentials: SessionCredentials | None = None,
    grpc_port: int | None = None,
    grpc_auth: str | None = None,
) -> None:
    """Start the requested servers, print and log their addresses, run until a stop signal.

    Args:
        host: address the name server listens on and advertises.
        namesrv_port: name-server port (0 = any free port), or None for no name server.
        namesrv_addr: name server(s) the broker registers with when no name server runs here.
        broker_config: the broker's configuration (its ``namesrv_addr`` is replaced by the
            name server started here, or ``namesrv_addr``), or None for no broker.
        limits: connection limits of the name server (the broker's come from its config).
        metrics_port: serve Prometheus metrics of the servers started here on
            ``http://host:metrics_port/metrics`` (0 = any free port), or None for none.
        tls_server: TLS of the name server's port (the broker's is in ``broker_config``), or
            None (plain).
        namesrv_acl_file: the name server checks its admin-only requests against this
            plain_acl.yml (None: no ACL on the name server).
        console_port: serve the web console for this cluster on ``http://host:console_port/``
            (0 = any free port), or None for none.
        console_allow_writes: the console may create/delete topics, reset offsets, resend.
        console_credentials: what the console signs its requests with (ACL), or None.
        grpc_port: serve the RocketMQ 5 SDKs' gRPC endpoint (``apache.rocketmq.v2.MessagingService``,
            :class:`rocketpipe.proxy.ProxyServer`) for this cluster on ``host:grpc_port``
            (0 = any free port; Apache's proxy uses 8081), or None for none. Its port has the TLS
            of ``tls_server`` (``enforcing``: TLS only); its remoting clients use the broker's
            client TLS (``tls_enable`` / ``tls_client``).
        grpc_auth: the endpoint authenticates the SDKs' signatures against the broker's ACL 1.0
            file (``"acl1"``) or ACL 2.0 users (``"acl2"``) and signs their calls with their
            credentials (:mod:`rocketpipe.proxy.auth`); None: no check.

    Raises:
        RocketMQError: a server failed to start.
        OSError: a port is in use.
    """
    with _stop_signals() as stop:  # before anything starts: a signal during start-up stops cleanly
        broker_addr = None
        async with contextlib.AsyncExitStack() as stack:
            if namesrv_port is not None:
                from rocketpipe.namesrv import NameServer

                namesrv = NameServer(
                    host=host, port=namesrv_port, limits=limits, tls_server=tls_server,
                    acl_enable=namesrv_acl_file is not None, acl_file=namesrv_acl_file,
                )  # fmt: skip
                namesrv_addr = await namesrv.start()
                stack.push_async_callback(namesrv.close)
                console.print(f"rocketpipe: name server listening on {namesrv_addr}")
            if broker_config is not None:
                from rocketpipe.broker import Broker

                broker_config = dataclasses.replace(broker_config, namesrv_addr=namesrv_addr)
                broker = Broker(broker_config)
                broker_addr = await broker.start()
                stack.push_async_callback(broker.close)
                console.print(
                    f"rocketpipe: broker {broker_config.broker_name} listening on {broker_addr} "
                    f"(store {broker_config.store_dir}, {broker_config.flush_disk_type}, name server {namesrv_addr})"
                )
            if metrics_port is not None:
                address = _start_metrics(
                    stack, host, metrics_port, namesrv if namesrv_port is not None else None,
                    broker if broker_config is not None else None,
                )  # fmt: skip
                console.print(f"rocketpipe: Prometheus metrics on http://{address}/metrics")
            if console_port is not None and namesrv_addr is not None:
                from rocketpipe.console import start_console

                web = await start_console(
                    host, console_port, namesrv_addr, allow_writes=console_allow_writes,
                    credentials=console_credentials,
                )  # fmt: skip
                stack.push_async_callback(web.close)
                console.print(f"rocketpipe: web console on {web.url}")
            if grpc_port is not None and namesrv_addr is not None:
                from rocketpipe.proxy import ProxyServer
                from rocketpipe.proxy.auth import AclFileAccounts

                # its remoting clients sign like the console (inner credentials) and use the broker's client TLS
                tls_client = (
                    broker_config.tls_client if broker_config is not None and broker_config.tls_enable else None
                )
                auth: AclFileAccounts | Literal["brokers"] | None = "brokers" if grpc_auth == "acl2" else None
                if grpc_auth == "acl1" and broker_config is not None and broker_config.acl_file is not None:
                    auth = AclFileAccounts(broker_config.acl_file)
                proxy = ProxyServer(
                    namesrv_addr, host, grpc_port, tls_server=tls_server, auth=auth,
                    config=_grpc_client_config(namesrv_addr, console_credentials, tls_client),
                )  # fmt: skip
                await proxy.start()
                stack.push_async_callback(proxy.close)
                console.print(
                    f"rocketpipe: gRPC endpoint (RocketMQ 5 SDKs) on {proxy.address} "
                    f"(tls={str(proxy.tls_enabled).lower()}, authentication={grpc_auth or 'off'})"
                )
            line = _start_line(namesrv_addr, broker_addr, broker_config, limits, tls_server)
            if namesrv_port is not None:
                line += f" namesrvAclEnable={str(namesrv_acl_file is not None).lower()}"
            log.info("%s", line)
            console.print("rocketpipe: ready; Ctrl-C stops")
            await stop.wait()
            console.print("rocketpipe: stopping")
            log.info("rocketpipe serve stopping")
        log.info("rocketpipe serve stopped")
        console.print("rocketpipe: stopped")


def _start_metrics(
    stack: contextlib.AsyncExitStack, host: str, port: int, namesrv: NameServer | None, broker: Broker | None
) -> str:
    """Serve the servers' Prometheus metrics (one registry of their collectors, the broker's RPC
    latency fed by its router's observer); the server stops with ``stack``. Returns host:port."""
    from prometheus_client import CollectorRegistry

    from rocketpipe.broker.metrics import BrokerCollector, MetricsServer
    from rocketpipe.namesrv.metrics import NamesrvCollector

    registry = CollectorRegistry()
    if namesrv is not None:
        registry.register(NamesrvCollector(namesrv))
    if broker is not None:
        collector = BrokerCollector(broker)  # built on the loop: scrapes hop onto it
        registry.register(collector)
        broker.router.observer = collector.rpc_latency.observe
    server = MetricsServer(host, port, registry)
    server.start()
    stack.push_async_callback(asyncio.to_thread, server.close)
    return server.address


def _is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_acl(
    acl_enable: bool,
    acl_file: Path | None,
    namesrv_only: bool,
    namesrv_acl_enable: bool = False,
    broker_only: bool = False,
) -> str | None:
    """Validate the ACL flags and the file (usage errors exit 2); return the file path or None."""
    if acl_file is not None and not acl_enable and not namesrv_acl_enable:
        raise fail("--acl-file needs --acl-enable (or --namesrv-acl-enable)", EXIT_USAGE)
    if not acl_enable and not namesrv_acl_enable:
        return None
    if acl_enable and namesrv_only:
        raise fail("--acl-enable applies to the broker; it cannot be used with --namesrv-only", EXIT_USAGE)
    if namesrv_acl_enable and broker_only:
        raise fail("--namesrv-acl-enable applies to the name server; it cannot be used with --broker-only", EXIT_USAGE)
    if acl_file is None:
        home = os.environ.get("ROCKETMQ_HOME")
        if not home:
            flag = "--acl-enable" if acl_enable else "--namesrv-acl-enable"
            raise fail(f"{flag} needs --acl-file PATH (or $ROCKETMQ_HOME/conf/plain_acl.yml)", EXIT_USAGE)
        acl_file = Path(home) / "conf" / "plain_acl.yml"
    from rocketpipe.acl import AclError, load_acl_file

    try:
        load_acl_file(acl_file)
    except AclError as exc:
        raise fail(f"--acl-file: {exc.remark}", EXIT_USAGE) from None
    return str(acl_file)


def _grpc_client_config(
    namesrv_addr: str, credentials: SessionCredentials | None, tls: TlsClientConfig | None
) -> ClientConfig:
    """The settings of the gRPC endpoint's remoting clients: ``credentials`` and ``tls``."""
    from rocketpipe.client import ClientConfig

    if tls is None:
        return ClientConfig(namesrv_addr, credentials=credentials)
    return ClientConfig(
        namesrv_addr, credentials=credentials, use_tls=True, tls_client_trust_cert_path=tls.trust_cert_path,
        tls_client_cert_path=tls.cert_path, tls_client_key_path=tls.key_path,
        tls_client_key_password=tls.key_password, tls_test_mode_enable=tls.test_mode_enable,
    )  # fmt: skip


def _check_grpc(tls_server: TlsServerConfig | None, auth2: bool, inner: SessionCredentials | None) -> None:
    """Usage errors of ``--grpc-port`` with the TLS and ACL 2.0 flags (exit code 2)."""
    try:
        from rocketpipe.proxy.tls import check_grpc_tls
    except ImportError as exc:
        raise fail(f"--grpc-port needs the 'grpc' extra (pip install 'rocketpipe[grpc]'): {exc}", EXIT_USAGE) from None
    try:
        check_grpc_tls(tls_server)
    except InvalidArgumentError as exc:
        raise fail(f"--grpc-port with --tls-server-*: {exc}", EXIT_USAGE) from None
    if auth2 and inner is None:
        raise fail(
            "--grpc-port with ACL 2.0 needs --inner-client-access-key/--inner-client-secret-key "
            "(a Super user): the gRPC endpoint reads the SDKs' users from the broker with them",
            EXIT_USAGE,
        )


def _check_tls_server(
    mode: TlsServerModeChoice,
    cert: Path | None,
    key: Path | None,
    key_password: str | None,
    trust_cert: Path | None,
    need_client_auth: ClientAuthChoice,
) -> TlsServerConfig | None:
    """Validate the ``--tls-server-*`` flags and load the files (usage errors exit 2)."""
    if mode is TlsServerModeChoice.DISABLED:
        if cert or key or trust_cert or need_client_auth is not ClientAuthChoice.NONE:
            raise fail("--tls-server-* options need --tls-server-mode permissive or enforcing", EXIT_USAGE)
        return None
    if cert is None:
        raise fail(
            f"--tls-server-mode {mode.value} needs --tls-server-cert PATH (and --tls-server-key PATH)", EXIT_USAGE
        )
    from rocketpipe.broker.config import TlsServerConfig

    try:
        tls = TlsServerConfig(
            mode=mode.value,  # type: ignore[arg-type]  # a TlsServerMode value
            cert_path=str(cert),
            key_path=None if key is None else str(key),
            key_password=key_password,
            trust_cert_path=None if trust_cert is None else str(trust_cert),
            need_client_auth=need_client_auth.value,
        )
        tls.server_context()
    except InvalidArgumentError as exc:
        raise fail(f"--tls-server-mode {mode.value}: {exc}", EXIT_USAGE) from None
    return tls


def _check_ranges(checks: list[tuple[str, int, int, int | None]]) -> None:
    """Fail with a usage error for the first ``(flag, value, low, high)`` out of ``low..high``."""
    for flag, value, low, high in checks:
        if value < low or (high is not None and value > high):
            span = f"{low}..{high}" if high is not None else f">= {low}"
            raise fail(f"{flag} must be {span}, not {value}", EXIT_USAGE)


@handle_errors
def serve(
    namesrv_only: Annotated[bool, typer.Option("--namesrv-only", help="Run only a name server.")] = False,
    broker_only: Annotated[bool, typer.Option("--broker-only", help="Run only a broker (needs --namesrv).")] = False,
    namesrv: Annotated[
        str | None,
        typer.Option(
            "--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s) for --broker-only, 'host:port[;host:port]'."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on and advertise.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Broker port (0 = any free port).")] = DEFAULT_BROKER_PORT,
    namesrv_port: Annotated[int, typer.Option(help="Name-server port (0 = any free port).")] = DEFAULT_NAMESRV_PORT,
    data_dir: Annotated[Path, typer.Option("--data-dir", "-d", help="Broker store directory.")] = Path(
        ".rocketpipe/store"
    ),
    flush: Annotated[
        FlushMode,
        typer.Option("--flush", help="Flush mode: async (ASYNC_FLUSH) or sync (SYNC_FLUSH, fsync before ack)."),
    ] = FlushMode.ASYNC,
    broker_name: Annotated[str, typer.Option(help="brokerName.")] = "broker-a",
    cluster_name: Annotated[str, typer.Option(help="brokerClusterName.")] = "DefaultCluster",
    auto_create_topic: Annotated[bool, typer.Option(help="Create unknown topics on first send.")] = True,
    file_reserved_time: Annotated[
        int,
        typer.Option(
            "--file-reserved-time",
            metavar="HOURS",
            help="Hours a commit-log file is kept after its last write (fileReservedTime).",
        ),
    ] = 72,
    delete_when: Annotated[
        str,
        typer.Option(
            "--delete-when",
            metavar="HH[;HH]",
            help="Hours of the day when expired files are deleted, e.g. '04' or '01;04' (deleteWhen).",
        ),
    ] = "04",
    disk_max_used_space_ratio: Annotated[
        int,
        typer.Option(
            "--disk-max-used-space-ratio",
            metavar="PCT",
            help="Disk use (percent) past which expired files are deleted at any hour (diskMaxUsedSpaceRatio; the store clamps it to 10..95).",
        ),
    ] = 75,
    max_transfer_count: Annotated[
        int,
        typer.Option(
            "--max-transfer-count",
            metavar="N",
            help="Most messages one pull returns (maxTransferCountOnMessageInMemory, 32 as Java; "
            "e.g. 1024 for Spark or batch readers).",
        ),
    ] = 32,
    max_transfer_bytes: Annotated[
        int,
        typer.Option(
            "--max-transfer-bytes",
            metavar="BYTES",
            help="Most bytes one pull returns (maxTransferBytesOnMessageInMemory, 262144 as Java).",
        ),
    ] = 256 * 1024,
    transaction_check_interval: Annotated[
        int,
        typer.Option(
            "--transaction-check-interval",
            metavar="MS",
            help="Milliseconds between checks of undecided transactional half messages (transactionCheckInterval, 30000 as 5.x).",
        ),
    ] = 30_000,
    transaction_timeout: Annotated[
        int,
        typer.Option(
            "--transaction-timeout",
            metavar="MS",
            help="Milliseconds a half message waits for its producer's decision before the broker asks it (transactionTimeOut).",
        ),
    ] = 6_000,
    transaction_check_max: Annotated[
        int,
        typer.Option(
            "--transaction-check-max",
            metavar="N",
            help="Checks of one half message before it is discarded to TRANS_CHECK_MAX_TIME_TOPIC (transactionCheckMax).",
        ),
    ] = 15,
    recall_message_enable: Annotated[
        bool,
        typer.Option(
            "--recall-message-enable",
            help="Serve RECALL_MESSAGE: producers may take back a timer message before its time (recallMessageEnable, off as Java).",
        ),
    ] = False,
    clean_file_forcibly: Annotated[
        bool,
        typer.Option(
            "--clean-file-forcibly/--no-clean-file-forcibly",
            help="Delete the oldest files, even unexpired, when the disk is nearly full (cleanFileForciblyEnable).",
        ),
    ] = True,
    max_idle_seconds: Annotated[
        int,
        typer.Option(
            "--max-idle-seconds",
            metavar="SECONDS",
            help="Close a connection of the broker or name server with no traffic for this long, 0 = never (serverChannelMaxIdleTimeSeconds).",
        ),
    ] = DEFAULT_MAX_IDLE_SECONDS,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="Connections the broker and the name server each accept at once; more are closed at accept.",
        ),
    ] = DEFAULT_MAX_CONNECTIONS,
    recover_metadata: Annotated[
        bool,
        typer.Option(
            "--recover-metadata",
            help="Start even when a metadata JSON (topics, offsets, ...) and its .bak are both unreadable; their state starts empty.",
        ),
    ] = False,
    console_port: Annotated[
        int | None,
        typer.Option(
            "--console-port",
            help="Serve the web console (cluster, topics, groups, messages, DLQ) on http://HOST:PORT/ (0 = any free port); read-only unless --console-allow-writes. Off when not given.",
        ),
    ] = None,
    console_allow_writes: Annotated[
        bool,
        typer.Option(
            "--console-allow-writes",
            help="Let the web console create/delete topics, send, reset offsets and resend DLQ messages (signed with --inner-client-access-key under ACL).",
        ),
    ] = False,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            help="Serve Prometheus metrics of the broker and name server on http://HOST:PORT/metrics (0 = any free port; Apache RocketMQ uses 5557). Off when not given.",
        ),
    ] = None,
    grpc_port: Annotated[
        int | None,
        typer.Option(
            "--grpc-port",
            help="Serve the gRPC endpoint of the RocketMQ 5 SDKs (apache.rocketmq.v2.MessagingService, as Apache's proxy) on HOST:PORT (0 = any free port; Apache's proxy uses 8081; needs the 'grpc' extra). Off when not given.",
        ),
    ] = None,
    acl_enable: Annotated[
        bool,
        typer.Option(
            "--acl-enable",
            help="Check every broker request against the ACL 1.0 rules of --acl-file (aclEnable); see docs/security.md.",
        ),
    ] = False,
    acl_file: Annotated[
        Path | None,
        typer.Option(
            "--acl-file",
            metavar="PATH",
            help="plain_acl.yml for --acl-enable, reloaded when it changes (default: $ROCKETMQ_HOME/conf/plain_acl.yml).",
        ),
    ] = None,
    tls_server_mode: Annotated[
        TlsServerModeChoice,
        typer.Option(
            "--tls-server-mode",
            case_sensitive=False,
            help="TLS on the name server's and broker's ports (tls.server.mode): disabled, permissive (plain and TLS on one port) or enforcing (TLS only); see docs/security.md.",
        ),
    ] = TlsServerModeChoice.DISABLED,
    tls_server_cert: Annotated[
        Path | None,
        typer.Option(
            "--tls-server-cert", metavar="PATH", help="PEM certificate chain of the servers (tls.server.certPath)."
        ),
    ] = None,
    tls_server_key: Annotated[
        Path | None,
        typer.Option(
            "--tls-server-key", metavar="PATH", help="PEM private key of --tls-server-cert (tls.server.keyPath)."
        ),
    ] = None,
    tls_server_key_password: TlsServerKeyPasswordOption = None,
    tls_server_trust_cert: TlsServerTrustCertOption = None,
    tls_server_need_client_auth: Annotated[
        ClientAuthChoice,
        typer.Option(
            "--tls-server-need-client-auth",
            case_sensitive=False,
            help="Client certificates (tls.server.need.client.auth): none, optional or require (mutual TLS; needs --tls-server-trust-cert).",
        ),
    ] = ClientAuthChoice.NONE,
    namesrv_acl_enable: Annotated[
        bool,
        typer.Option(
            "--namesrv-acl-enable",
            help="The name server refuses broker (un)registration, topic deletion and KV writes not signed by an admin account of --acl-file (rocketpipe only; Java's name server checks no ACL).",
        ),
    ] = False,
    inner_client_access_key: Annotated[
        str | None,
        typer.Option(
            "--inner-client-access-key",
            envvar="ROCKETMQ_INNER_ACCESS_KEY",
            metavar="AK",
            help="The broker signs its registrations with this admin accessKey (innerClientAuthenticationCredentials), for a name server with ACL.",
        ),
    ] = None,
    inner_client_secret_key: Annotated[
        str | None,
        typer.Option(
            "--inner-client-secret-key",
            envvar="ROCKETMQ_INNER_SECRET_KEY",
            metavar="SK",
            help="secretKey of --inner-client-access-key (prefer the environment variable).",
            show_envvar=True,
        ),
    ] = None,
    authentication_enabled: Annotated[
        bool,
        typer.Option(
            "--authentication-enabled",
            help="ACL 2.0 (authenticationEnabled): every broker request must be signed by a user created with createUser; see docs/security.md.",
        ),
    ] = False,
    authorization_enabled: Annotated[
        bool,
        typer.Option(
            "--authorization-enabled",
            help="ACL 2.0 (authorizationEnabled): every broker request is checked against the ACLs of its signer (Super users pass).",
        ),
    ] = False,
    init_authentication_user: Annotated[
        str | None,
        typer.Option(
            "--init-authentication-user",
            envvar="ROCKETMQ_INIT_AUTHENTICATION_USER",
            metavar="JSON",
            help='ACL 2.0 Super user created at start when missing (initAuthenticationUser), {"username":"...","password":"..."}.',
        ),
    ] = None,
    authentication_whitelist: Annotated[
        str | None,
        typer.Option(
            "--authentication-whitelist",
            metavar="CODES",
            help="Request codes, comma-separated, not authenticated (authenticationWhitelist).",
        ),
    ] = None,
    authorization_whitelist: Annotated[
        str | None,
        typer.Option(
            "--authorization-whitelist",
            metavar="CODES",
            help="Request codes, comma-separated, not authorized (authorizationWhitelist).",
        ),
    ] = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
    log_level: Annotated[
        LogLevel, typer.Option("--log-level", case_sensitive=False, help="Lowest level logged.")
    ] = LogLevel.INFO,
    log_file: Annotated[
        Path | None,
        typer.Option("--log-file", metavar="PATH", help="Log to this file, rotated by size (default: stderr)."),
    ] = None,
    log_max_bytes: Annotated[
        int, typer.Option("--log-max-bytes", help="Size at which --log-file is rotated, bytes.")
    ] = DEFAULT_LOG_MAX_BYTES,
    log_backups: Annotated[int, typer.Option("--log-backups", help="Rotated log files kept.")] = DEFAULT_LOG_BACKUPS,
) -> None:
    """Run a name server and a broker (both by default) until Ctrl-C or SIGTERM."""
    if namesrv_only and broker_only:
        raise fail("--namesrv-only and --broker-only exclude each other", EXIT_USAGE)
    if broker_only and not namesrv:
        raise fail("--broker-only needs --namesrv ADDR (or NAMESRV_ADDR)", EXIT_USAGE)
    _check_ranges([
        ("--port", port, 0, 65535),
        ("--namesrv-port", namesrv_port, 0, 65535),
        ("--file-reserved-time", file_reserved_time, 1, None),
        ("--disk-max-used-space-ratio", disk_max_used_space_ratio, 1, 100),
        ("--max-idle-seconds", max_idle_seconds, 0, None),
        ("--max-transfer-count", max_transfer_count, 1, None),
        ("--max-transfer-bytes", max_transfer_bytes, 1, None),
        ("--max-connections", max_connections, 1, None),
        ("--transaction-check-interval", transaction_check_interval, 1, None),
        ("--transaction-timeout", transaction_timeout, 0, None),
        ("--transaction-check-max", transaction_check_max, 1, None),
        ("--log-max-bytes", log_max_bytes, 1, None),
        ("--log-backups", log_backups, 1, None),
        ("--metrics-port", 0 if metrics_port is None else metrics_port, 0, 65535),
        ("--console-port", 0 if console_port is None else console_port, 0, 65535),
        ("--grpc-port", 0 if grpc_port is None else grpc_port, 0, 65535),
    ])  # fmt: skip
    from rocketpipe.broker import BrokerConfig
    from rocketpipe.store import StoreConfig

    try:
        StoreConfig(root_dir=data_dir, delete_when=delete_when)  # the store's own check of the hours
    except InvalidArgumentError as exc:
        raise fail(f"--delete-when: {exc}", EXIT_USAGE) from None

    acl_path = _check_acl(acl_enable, acl_file, namesrv_only, namesrv_acl_enable, broker_only)
    auth2 = authentication_enabled or authorization_enabled
    if (auth2 or init_authentication_user) and namesrv_only:
        raise fail("the ACL 2.0 options apply to the broker; not with --namesrv-only", EXIT_USAGE)
    if init_authentication_user is not None:
        from rocketpipe.broker.config import init_user_credentials

        try:
            init_user_credentials(init_authentication_user)
        except InvalidArgumentError as exc:
            raise fail(f"--init-authentication-user: {exc}", EXIT_USAGE) from None
    inner = None
    if inner_client_access_key or inner_client_secret_key:
        if not inner_client_access_key or not inner_client_secret_key:
            raise fail("--inner-client-access-key and --inner-client-secret-key go together", EXIT_USAGE)
        if namesrv_only:
            raise fail("--inner-client-access-key applies to the broker; not with --namesrv-only", EXIT_USAGE)
        from rocketpipe.acl import SessionCredentials

        inner = SessionCredentials(inner_client_access_key, inner_client_secret_key)
    elif namesrv_acl_enable and not namesrv_only:
        raise fail(
            "--namesrv-acl-enable with a broker here needs --inner-client-access-key/--inner-client-secret-key "
            "(an admin account of --acl-file) to sign its registrations",
            EXIT_USAGE,
        )
    tls_server = _check_tls_server(
        tls_server_mode, tls_server_cert, tls_server_key, tls_server_key_password,
        tls_server_trust_cert, tls_server_need_client_auth,
    )  # fmt: skip
    if use_tls and namesrv_only:
        raise fail("--use-tls applies to the broker's registrations; it cannot be used with --namesrv-only", EXIT_USAGE)
    tls_client = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    if tls_client is None and not broker_only and tls_server is not None and tls_server.mode == "enforcing":
        if tls_server.need_client_auth == "require":
            raise fail(
                "--tls-server-need-client-auth require with the broker and name server in one process needs "
                "--use-tls --tls-client-cert PATH --tls-client-key PATH for the broker's registrations",
                EXIT_USAGE,
            )
        from rocketpipe.client.config import TlsClientConfig

        # the name server is at an address of this machine: the registrations never leave it
        tls_client = TlsClientConfig(test_mode_enable=True)
    grpc_auth = None
    if grpc_port is not None:
        _check_grpc(tls_server, auth2, inner)
        grpc_auth = "acl2" if auth2 else "acl1" if acl_enable and not namesrv_only else None
    tls_extra: dict[str, object] = {}
    if inner is not None:
        tls_extra["inner_client_authentication_credentials"] = inner
    if tls_server is not None:
        tls_extra["tls_server"] = tls_server
    if tls_client is not None:
        tls_extra |= {"tls_enable": True, "tls_client": tls_client}
    limits = ServerLimits(server_channel_max_idle_time_seconds=max_idle_seconds, server_max_connections=max_connections)
    broker_config = None
    if not namesrv_only:
        broker_config = BrokerConfig(
            broker_name=broker_name,
            broker_cluster_name=cluster_name,
            host=host,
            listen_port=port,
            store_dir=data_dir,
            flush_disk_type="SYNC_FLUSH" if flush is FlushMode.SYNC else "ASYNC_FLUSH",
            auto_create_topic_enable=auto_create_topic,
            file_reserved_time=file_reserved_time,
            delete_when=delete_when,
            disk_max_used_space_ratio=disk_max_used_space_ratio,
            clean_file_forcibly_enable=clean_file_forcibly,
            max_transfer_count_on_message_in_memory=max_transfer_count,
            max_transfer_bytes_on_message_in_memory=max_transfer_bytes,
            server_channel_max_idle_time_seconds=max_idle_seconds,
            server_max_connections=max_connections,
            recover_metadata=recover_metadata,
            transaction_check_interval=transaction_check_interval,
            transaction_timeout=transaction_timeout,
            transaction_check_max=transaction_check_max,
            recall_message_enable=recall_message_enable,
            acl_enable=acl_enable,
            acl_file=acl_path if acl_enable else None,
            authentication_enabled=authentication_enabled,
            authorization_enabled=authorization_enabled,
            authentication_whitelist=authentication_whitelist,
            authorization_whitelist=authorization_whitelist,
            init_authentication_user=init_authentication_user,
            **tls_extra,  # type: ignore[arg-type]
        )
    try:
        configure_logging(log_level, log_file, max_bytes=log_max_bytes, backups=log_backups)
    except OSError as exc:
        raise fail(f"cannot open --log-file {log_file}: {exc}", EXIT_USAGE) from None
    if not acl_enable and not auth2 and not _is_loopback(host):
        log.warning(
            "listening on %s without --acl-enable: any client that can reach it may create or delete topics, "
            "rewrite offsets and change the broker (see docs/security.md)",
            host,
        )
    elif acl_enable and not namesrv_acl_enable and not broker_only and not _is_loopback(host):
        log.warning(
            "listening on %s with --acl-enable but without --namesrv-acl-enable: the broker checks every request, "
            "the name server none (any client that can reach it may unregister the broker or delete routes, "
            "as with Apache's name server; see docs/security.md)",
            host,
        )
    period_s = BrokerConfig.register_name_server_period_ms / 1000
    if 0 < max_idle_seconds <= period_s:
        log.warning(
            "--max-idle-seconds %d is not above the %gs period of broker registrations and client heartbeats: "
            "quiet peers will be disconnected between them (the name server drops a broker whose connection closes)",
            max_idle_seconds, period_s,
        )  # fmt: skip
    try:
        eventloop.run(
            run_servers(
                host=host,
                namesrv_port=None if broker_only else namesrv_port,
                namesrv_addr=namesrv if broker_only else None,
                broker_config=broker_config,
                limits=limits,
                metrics_port=metrics_port,
                tls_server=tls_server,
                namesrv_acl_file=acl_path if namesrv_acl_enable else None,
                console_port=console_port,
                console_allow_writes=console_allow_writes,
                console_credentials=inner,
                grpc_port=grpc_port,
                grpc_auth=grpc_auth,
            )
        )
    except OSError as exc:
        log.error("cannot listen: %s", exc)
        raise fail(f"cannot listen: {exc}", EXIT_CONNECTION) from None
    except Exception as exc:
        log.error(
            "rocketpipe serve failed: %s: %s", type(exc).__name__, exc, exc_info=not isinstance(exc, RocketMQError)
        )
        raise
