"""Serve the console with uvicorn inside a running event loop (console).

:func:`start_console` is what ``rocketpipe console`` and ``rocketpipe serve --console-port``
use: it starts a ``uvicorn.Server`` as a task of the current loop and returns a
:class:`ConsoleHandle` once the socket listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn

from ..client import SessionCredentials
from .app import create_app
from .service import ConsoleSettings


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the process that embeds the console
    (``rocketpipe console``, ``rocketpipe serve``) owns SIGINT / SIGTERM."""

    def capture_signals(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]
        return contextlib.nullcontext()


class ConsoleHandle:
    """A running console: its address and a way to stop it.

    Attributes:
        address: ``"host:port"`` it listens on (the real port when 0 was asked).
        url: ``http://host:port``.
    """

    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], address: str) -> None:
        self._server = server
        self._task = task
        self.address = address
        self.url = f"http://{address}"

    async def close(self) -> None:
        """Stop accepting, finish open requests, close the admin client; idempotent."""
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def wait_closed(self) -> None:
        """Wait until the server stops (after :meth:`close`, or a failure)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def start_console(
    host: str,
    port: int,
    namesrv_addr: str,
    *,
    allow_writes: bool = False,
    credentials: SessionCredentials | None = None,
    log_level: str = "warning",
) -> ConsoleHandle:
    """Start the web console on ``host:port`` for the cluster of ``namesrv_addr``.

    Args:
        host: address to listen on (``127.0.0.1`` keeps it local).
        port: TCP port; 0 picks a free one (see :attr:`ConsoleHandle.address`).
        namesrv_addr: ``;``-separated name servers.
        allow_writes: allow create / delete topic, reset offset and DLQ resend.
        credentials: ACL access key / secret key for a cluster with ACL enabled.
        log_level: uvicorn's log level.

    Returns:
        A :class:`ConsoleHandle`; ``await handle.close()`` stops it.

    Raises:
        OSError: the port cannot be bound.
    """
    settings = ConsoleSettings(namesrv_addr, allow_writes=allow_writes, credentials=credentials)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    # log_config=None: uvicorn leaves the process's logging set-up alone (its records propagate)
    config = uvicorn.Config(create_app(settings), log_config=None, log_level=log_level, lifespan="on", access_log=False)
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="rocketpipe-console")
    while not server.started:
        if task.done():
            sock.close()
            task.result()
            raise OSError("the console stopped while starting")
        await asyncio.sleep(0.01)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return ConsoleHandle(server, task, f"{shown}:{bound_port}")
