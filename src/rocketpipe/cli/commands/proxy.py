"""``rocketpipe proxy``: the RocketMQ 5 SDKs' gRPC endpoint in front of a remoting cluster, until
Ctrl-C / SIGTERM (L4, cli).

Serves ``apache.rocketmq.v2.MessagingService`` (:class:`rocketpipe.proxy.ProxyServer`) on
``--host``/``--port`` for the cluster of ``--namesrv`` — Apache RocketMQ 4.9/5.x brokers or
rocketpipe's — turning each gRPC call into remoting calls, as Apache's proxy does in cluster mode
(``ProxyStartup`` with ``proxyMode=cluster``; its ``grpcServerPort`` default is 8081).
``--access-key`` / ``--secret-key`` sign the endpoint's remoting requests for a cluster with ACL.

Imports: :mod:`rocketpipe.proxy` (the ``grpc`` extra) and the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from rocketpipe import eventloop

from ..errors import EXIT_CONNECTION, EXIT_USAGE, fail, handle_errors
from ..logging_setup import LogLevel, configure_logging
from .acl_options import AccessKeyOption, SecretKeyOption, credentials_from
from .console import is_loopback

if TYPE_CHECKING:
    from rocketpipe.client.config import SessionCredentials

out = Console(highlight=False, soft_wrap=True)
log = logging.getLogger("rocketpipe.cli.proxy")

#: ProxyConfig.grpcServerPort (Apache 5.3.3).
DEFAULT_GRPC_PORT = 8081


async def run_proxy(namesrv: str, host: str, port: int, credentials: SessionCredentials | None) -> None:
    """Serve the endpoint until SIGINT or SIGTERM, then stop it (running calls get 1 s).

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
    server = ProxyServer(namesrv, host, port, config=config)
    await server.start()
    try:
        out.print(f"rocketpipe proxy: gRPC endpoint (RocketMQ 5 SDKs) on {server.address} for name server {namesrv}")
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
    configure_logging(log_level)
    if not is_loopback(host):
        log.warning("listening on %s: any client that can reach it may send and consume through it", host)
    try:
        eventloop.run(run_proxy(namesrv, host, port, credentials))
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}", EXIT_CONNECTION) from None
