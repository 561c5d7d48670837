"""TCP remoting server (L2): :class:`RemotingServer`.

Accepts connections with ``asyncio.start_server`` and serves each one as a
:class:`~.connection.Connection` whose inbound requests go to a shared :class:`~.router.Router`.
A connection that sends a malformed frame is closed alone; the server keeps serving the others.
Mirrors ``NettyRemotingServer``.

Imports: stdlib asyncio, :mod:`.connection`, :mod:`.router`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .connection import _STREAM_LIMIT, Connection, format_address
from .router import Router

__all__ = ["RemotingServer"]

log = logging.getLogger(__name__)


class RemotingServer:
    """A listening socket plus the connections accepted on it.

    Args:
        router: handlers for every inbound request.
        host: interface to bind (``"127.0.0.1"`` by default).
        port: TCP port (0 = any free port).

    Attributes:
        connections: the open connections accepted by this server.
        address: ``"host:port"`` once started (None before).
    """

    def __init__(self, router: Router, host: str = "127.0.0.1", port: int = 0) -> None:
        self._router = router
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._closing = False
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self.connections: set[Connection] = set()
        self.address: str | None = None

    async def start(self) -> str:
        """Bind and start accepting; return once listening.

        Returns:
            ``"ip:port"`` to connect to (``127.0.0.1`` when bound to a wildcard address).

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: already started.
        """
        if self._server is not None:
            raise RuntimeError("RemotingServer already started")
        self._server = await asyncio.start_server(
            self._accept, self._host, self._port, limit=_STREAM_LIMIT, reuse_address=True
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        self.address = f"{host}:{port}"
        log.info("remoting server listening addr=%s", self.address)
        return self.address

    def add_close_callback(self, fn: Callable[[Connection], None]) -> None:
        """Call ``fn(conn)`` for every accepted connection when it closes.

        Exceptions raised by ``fn`` are logged and ignored.
        """
        self._close_callbacks.append(fn)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.transport.abort()
            return
        conn = Connection(reader, writer, router=self._router)
        self.connections.add(conn)
        conn.add_close_callback(self._on_closed)
        conn.start()
        log.debug(
            "connection accepted remote=%s local=%s", conn.remote_address,
            format_address(writer.get_extra_info("sockname")),
        )

    def _on_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        for fn in self._close_callbacks:
            try:
                fn(conn)
            except Exception:  # noqa: BLE001 - a callback must not break closing
                log.exception("server close callback failed remote=%s", conn.remote_address)

    async def close(self) -> None:
        """Stop listening and close every connection; idempotent."""
        if self._closing:
            return
        self._closing = True
        server = self._server
        if server is not None:
            server.close()
        await asyncio.gather(*(c.close() for c in list(self.connections)), return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        log.info("remoting server closed addr=%s", self.address)

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
