"""``rocketpipe console``: the web console for a cluster, until Ctrl-C / SIGTERM (L4, cli).

Serves :mod:`rocketpipe.console` (Starlette + Jinja2 on uvicorn) for the cluster of
``--namesrv``, rocketpipe's or Apache RocketMQ's. Read-only unless ``--allow-writes``;
``--access-key`` / ``--secret-key`` sign every request for a cluster with ACL enabled.

Imports: :mod:`rocketpipe.console` and the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from rocketpipe import eventloop

from ..errors import EXIT_USAGE, fail
from .acl_options import AccessKeyOption, SecretKeyOption, credentials_from

if TYPE_CHECKING:
    from rocketpipe.client.config import SessionCredentials

out = Console(highlight=False, soft_wrap=True)

DEFAULT_NAMESRV = "127.0.0.1:9876"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_console(
    host: str, port: int, namesrv: str, allow_writes: bool, credentials: SessionCredentials | None
) -> None:
    """Serve the console until SIGINT or SIGTERM, then close it."""
    from rocketpipe.console import start_console

    handle = await start_console(host, port, namesrv, allow_writes=allow_writes, credentials=credentials)
    mode = "writes allowed" if allow_writes else "read-only"
    out.print(f"rocketpipe console for {namesrv} on [bold]{handle.url}[/] ({mode}); Ctrl-C stops it")
    if not is_loopback(host):
        out.print(
            f"[yellow]warning:[/] the console has no login and listens on {host}: anyone who can reach it "
            "sees the cluster" + (" and can change it" if allow_writes else "")
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(handle.wait_closed())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        await handle.close()


def console(
    namesrv: Annotated[
        str, typer.Option("--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s), 'host:port[;host:port]'.")
    ] = DEFAULT_NAMESRV,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="HTTP port (0 = any free).")] = 8080,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Allow writes: create / delete topics, send messages, reset offsets, set consume modes, "
            "make a DLQ readable, resend DLQ messages.",
        ),
    ] = False,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
) -> None:
    """Serve a web console (cluster, topics, groups, messages, DLQ) for the cluster of --namesrv."""
    credentials = credentials_from(access_key, secret_key)
    try:
        import rocketpipe.console  # noqa: F401
    except ImportError as exc:
        raise fail(
            f"the console needs the 'console' extra (pip install 'rocketpipe[console]'): {exc}", EXIT_USAGE
        ) from None
    try:
        eventloop.run(run_console(host, port, namesrv, allow_writes, credentials))
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}") from None
