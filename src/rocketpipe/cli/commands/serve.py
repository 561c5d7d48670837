"""``rocketpipe serve``: run a name server and/or a broker in the foreground (L4, cli).

By default both run in this process, the broker registered with the name server. Stops on
SIGINT/SIGTERM, closing the broker (which flushes its store) before the name server.

Imports: the public API of :mod:`rocketpipe.broker` and :mod:`rocketpipe.namesrv`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..errors import EXIT_CONNECTION, EXIT_USAGE, fail, handle_errors

console = Console(highlight=False, soft_wrap=True)

#: Default ports of Apache RocketMQ (NamesrvConfig.listenPort, BrokerConfig.listenPort).
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911


class FlushMode(StrEnum):
    """Broker flush mode (``flushDiskType``)."""

    ASYNC = "async"
    SYNC = "sync"


async def _wait_for_stop_signal() -> None:
    """Return when SIGINT or SIGTERM arrives."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


async def run_servers(
    *,
    host: str,
    namesrv_port: int | None,
    broker_port: int | None,
    namesrv_addr: str | None,
    data_dir: Path,
    flush_mode: FlushMode,
    broker_name: str,
    cluster_name: str,
    auto_create_topic: bool,
) -> None:
    """Start the requested servers, print their addresses, run until a stop signal.

    Args:
        host: address to listen on and advertise.
        namesrv_port: name-server port (0 = any free port), or None for no name server.
        broker_port: broker port (0 = any free port), or None for no broker.
        namesrv_addr: name server(s) the broker registers with when no name server runs here.
        data_dir: broker store root.
        flush_mode: broker flush mode.
        broker_name: ``brokerName``.
        cluster_name: ``brokerClusterName``.
        auto_create_topic: whether sends to unknown topics create them.

    Raises:
        RocketMQError: a server failed to start.
        OSError: a port is in use.
    """
    async with contextlib.AsyncExitStack() as stack:
        if namesrv_port is not None:
            from rocketpipe.namesrv import NameServer

            namesrv = NameServer(host=host, port=namesrv_port)
            namesrv_addr = await namesrv.start()
            stack.push_async_callback(namesrv.close)
            console.print(f"rocketpipe: name server listening on {namesrv_addr}")
        if broker_port is not None:
            from rocketpipe.broker import Broker, BrokerConfig

            config = BrokerConfig(
                broker_name=broker_name,
                broker_cluster_name=cluster_name,
                host=host,
                listen_port=broker_port,
                namesrv_addr=namesrv_addr,
                store_dir=data_dir,
                flush_disk_type="SYNC_FLUSH" if flush_mode is FlushMode.SYNC else "ASYNC_FLUSH",
                auto_create_topic_enable=auto_create_topic,
            )
            broker = Broker(config)
            broker_addr = await broker.start()
            stack.push_async_callback(broker.close)
            console.print(
                f"rocketpipe: broker {broker_name} listening on {broker_addr} "
                f"(store {data_dir}, {config.flush_disk_type}, name server {namesrv_addr})"
            )
        console.print("rocketpipe: ready; Ctrl-C stops")
        await _wait_for_stop_signal()
        console.print("rocketpipe: stopping")
    console.print("rocketpipe: stopped")


@handle_errors
def serve(
    namesrv_only: Annotated[bool, typer.Option("--namesrv-only", help="Run only a name server.")] = False,
    broker_only: Annotated[bool, typer.Option("--broker-only", help="Run only a broker (needs --namesrv).")] = False,
    namesrv: Annotated[
        str | None,
        typer.Option("--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s) for --broker-only, 'host:port[;host:port]'."),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on and advertise.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Broker port (0 = any free port).")] = DEFAULT_BROKER_PORT,
    namesrv_port: Annotated[int, typer.Option(help="Name-server port (0 = any free port).")] = DEFAULT_NAMESRV_PORT,
    data_dir: Annotated[Path, typer.Option("--data-dir", "-d", help="Broker store directory.")] = Path(".rocketpipe/store"),
    flush: Annotated[FlushMode, typer.Option("--flush", help="Flush mode: async (ASYNC_FLUSH) or sync (SYNC_FLUSH, fsync before ack).")] = FlushMode.ASYNC,
    broker_name: Annotated[str, typer.Option(help="brokerName.")] = "broker-a",
    cluster_name: Annotated[str, typer.Option(help="brokerClusterName.")] = "DefaultCluster",
    auto_create_topic: Annotated[bool, typer.Option(help="Create unknown topics on first send.")] = True,
) -> None:
    """Run a name server and a broker (both by default) until Ctrl-C or SIGTERM."""
    if namesrv_only and broker_only:
        raise fail("--namesrv-only and --broker-only exclude each other", EXIT_USAGE)
    if broker_only and not namesrv:
        raise fail("--broker-only needs --namesrv ADDR (or NAMESRV_ADDR)", EXIT_USAGE)
    for name, value in (("--port", port), ("--namesrv-port", namesrv_port)):
        if not 0 <= value <= 65535:
            raise fail(f"{name} must be 0..65535, not {value}", EXIT_USAGE)
    try:
        asyncio.run(
            run_servers(
                host=host,
                namesrv_port=None if broker_only else namesrv_port,
                broker_port=None if namesrv_only else port,
                namesrv_addr=namesrv if broker_only else None,
                data_dir=data_dir,
                flush_mode=flush,
                broker_name=broker_name,
                cluster_name=cluster_name,
                auto_create_topic=auto_create_topic,
            )
        )
    except OSError as exc:
        raise fail(f"cannot listen: {exc}", EXIT_CONNECTION) from None
