"""``rocketpipe proxy``: the RocketMQ 5 SDKs' gRPC endpoint in front of a remoting cluster, until
Ctrl-C / SIGTERM (L4, cli).

Serves ``apache.rocketmq.v2.MessagingService`` (:class:`rocketpipe.proxy.ProxyServer`) on
``--host``/``--port`` for the cluster of ``--namesrv`` — Apache RocketMQ 4.9/5.x brokers or
rocketpipe's — turning each gRPC call into remoting calls, as Apache's proxy does in cluster mode
(``ProxyStartup`` with ``proxyMode=cluster``; its ``grpcServerPort`` default is 8081).
``--access-key`` / ``--secret-key`` sign the endpoint's remoting requests for a cluster with ACL.
``--tls-server-*`` (as ``rocketpipe serve``'s; mode ``disabled`` or ``enforcing``) put TLS on the
gRPC port. ``--acl-file PATH`` (ACL 1.0 accounts) or ``--authentication-enabled`` (ACL 2.0 users,
read from the brokers with ``--access-key``) authenticate the SDKs' signatures, and the calls made
for them are signed with their credentials (:mod:`rocketpipe.proxy.auth`).

Imports: :mod:`rocketpipe.proxy` (the ``grpc`` extra) and the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from rocketpipe import eventloop

from ..errors import EXIT_CONNECTION, EXIT_USAGE, fail, handle_errors
from ..logging_setup import LogLevel, configure_logging
from .acl_options import AccessKeyOption, SecretKeyOption, credentials_from
from .console import is_loopback
from .serve import (
    ClientAuthChoice,
    TlsServerKeyPasswordOption,
    TlsServerModeChoice,
    TlsServerTrustCertOption,
    _check_tls_server,
)

if TYPE_CHECKING:
    from rocketpipe.client.config import SessionCredentials
    from rocketpipe.proxy.auth import CredentialSource
    from rocketpipe.transport import TlsServerConfig

out = Console(highlight=False, soft_wrap=True)
log = logging.getLogger("rocketpipe.cli.proxy")

#: ProxyConfig.grpcServerPort (Apache 5.3.3).
DEFAULT_GRPC_PORT = 8081


async def run_proxy(
    namesrv: str,
    host: str,
    port: int,
    credentials: SessionCredentials | None,
    tls_server: TlsServerConfig | None = None,
    auth: CredentialSource | Literal["brokers"] | None = None,
) -> None:
    """Serve the endpoint until SIGINT or SIGTERM, then stop it (running calls get 1 s).

    ``tls_server`` and ``auth`` are :class:`rocketpipe.proxy.ProxyServer`'s.

    Raises:
        InvalidArgumentError: the port cannot be bound.
    """
    from rocketpipe.client import ClientConfig
    from rocketpipe.proxy import ProxyServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before start: a signal during start-up stops cleanly
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    config = None if credentials is None else ClientConfig(namesrv, credentials=credentials)
    server = ProxyServer(namesrv, host, port, config=config, tls_server=tls_server, auth=auth)
    await server.start()
    try:
        out.print(
            f"rocketpipe proxy: gRPC endpoint (RocketMQ 5 SDKs) on {server.address} for name server {namesrv} "
            f"(tls={str(server.tls_enabled).lower()}, authentication={'off' if auth is None else 'on'})"
        )
        out.print("rocketpipe proxy: ready; Ctrl-C stops")
        await stop.wait()
        out.print("rocketpipe proxy: stopping")
    finally:
        await server.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    log.info("rocketpipe proxy stopped")
    out.print("rocketpipe proxy: stopped")


@handle_errors
def proxy(
    namesrv: Annotated[
        str,
        typer.Option(
            "--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s) of the cluster, 'host:port[;host:port]'."
        ),
    ],
    host: Annotated[str, typer.Option("--host", help="Address to listen on (the SDKs' endpoint).")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", "-p", min=0, max=65535, help="gRPC port (grpcServerPort; 0 = any free port)."),
    ] = DEFAULT_GRPC_PORT,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    acl_file: Annotated[
        Path | None,
        typer.Option(
            "--acl-file",
            metavar="PATH",
            help="Authenticate the SDKs' signatures against the accounts of this ACL 1.0 plain_acl.yml (the brokers' file); their calls are then signed with their own credentials.",
        ),
    ] = None,
    authentication_enabled: Annotated[
        bool,
        typer.Option(
            "--authentication-enabled",
            help="Authenticate the SDKs' signatures against the ACL 2.0 users of the brokers (read with --access-key, a Super user); their calls are then signed with their own credentials.",
        ),
    ] = False,
    tls_server_mode: Annotated[
        TlsServerModeChoice,
        typer.Option(
            "--tls-server-mode",
            case_sensitive=False,
            help="TLS on the gRPC port (tls.server.mode): disabled or enforcing (TLS only; the SDKs' tls_enable=True).",
        ),
    ] = TlsServerModeChoice.DISABLED,
    tls_server_cert: Annotated[
        Path | None,
        typer.Option("--tls-server-cert", metavar="PATH", help="PEM certificate chain (tls.server.certPath)."),
    ] = None,
    tls_server_key: Annotated[
        Path | None,
        typer.Option("--tls-server-key", metavar="PATH", help="PEM private key (tls.server.keyPath)."),
    ] = None,
    tls_server_key_password: TlsServerKeyPasswordOption = None,
    tls_server_trust_cert: TlsServerTrustCertOption = None,
    tls_server_need_client_auth: Annotated[
        ClientAuthChoice,
        typer.Option(
            "--tls-server-need-client-auth",
            case_sensitive=False,
            help="Client certificates (tls.server.need.client.auth): none or require (mutual TLS; needs --tls-server-trust-cert).",
        ),
    ] = ClientAuthChoice.NONE,
    log_level: Annotated[
        LogLevel, typer.Option("--log-level", case_sensitive=False, help="Lowest level logged.")
    ] = LogLevel.INFO,
) -> None:
    """Serve the RocketMQ 5 SDKs' gRPC endpoint (MessagingService) for the cluster of --namesrv."""
    credentials = credentials_from(access_key, secret_key)
    try:
        import rocketpipe.proxy  # noqa: F401
    except ImportError as exc:
        raise fail(f"the proxy needs the 'grpc' extra (pip install 'rocketpipe[grpc]'): {exc}", EXIT_USAGE) from None
    if tls_server_mode is TlsServerModeChoice.PERMISSIVE:  # as rocketpipe.proxy.tls.check_grpc_tls
        raise fail(
            "--tls-server-mode: the gRPC endpoint serves plain (disabled) or TLS (enforcing), not both", EXIT_USAGE
        )
    if tls_server_need_client_auth is ClientAuthChoice.OPTIONAL:
        raise fail("--tls-server-need-client-auth: the gRPC endpoint takes none or require, not optional", EXIT_USAGE)
    tls_server = _check_tls_server(
        tls_server_mode, tls_server_cert, tls_server_key, tls_server_key_password,
        tls_server_trust_cert, tls_server_need_client_auth,
    )  # fmt: skip
    from rocketpipe.proxy.auth import AclFileAccounts

    auth: CredentialSource | Literal["brokers"] | None = None
    if acl_file is not None and authentication_enabled:
        raise fail("--acl-file (ACL 1.0) and --authentication-enabled (ACL 2.0) exclude each other", EXIT_USAGE)
    if acl_file is not None:
        from rocketpipe.acl.errors import AclError

        try:
            auth = AclFileAccounts(acl_file)
        except AclError as exc:
            raise fail(f"--acl-file: {exc}", EXIT_USAGE) from None
    elif authentication_enabled:
        if credentials is None:
            raise fail(
                "--authentication-enabled needs --access-key/--secret-key (a Super user) to read the users", EXIT_USAGE
            )
        auth = "brokers"
    configure_logging(log_level)
    if not is_loopback(host) and auth is None:
        log.warning("listening on %s: any client that can reach it may send and consume through it", host)
    try:
        eventloop.run(run_proxy(namesrv, host, port, credentials, tls_server, auth))
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}", EXIT_CONNECTION) from None
