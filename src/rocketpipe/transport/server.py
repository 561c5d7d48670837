"""TCP remoting server (L2): :class:`RemotingServer`.

Accepts connections with ``asyncio.start_server`` and serves each one as a
:class:`~.connection.Connection` whose inbound requests go to a shared :class:`~.router.Router`.
A connection that sends a malformed frame is closed alone; the server keeps serving the others.

Limits (:class:`~.limits.ServerLimits`): a connection past ``server_max_connections`` is closed
right after accept; one periodic sweep per server closes connections with no traffic either way
for ``server_channel_max_idle_time_seconds`` (Netty ``IdleStateHandler`` ``ALL_IDLE``); the
bytes held for incomplete frames are capped per connection and in total
(:class:`~.limits.PendingBytes`). Every limit hit is a warning line, at most one per cause per
``server_warning_interval_seconds``, with the count of what it stands for.
Mirrors ``NettyRemotingServer`` (and its ``NettyConnectManageHandler`` idle close).

Imports: stdlib asyncio, :mod:`rocketpipe.ratelog`, :mod:`.connection`, :mod:`.limits`,
:mod:`.periodic`, :mod:`.router`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from ..ratelog import RateLimitedLog
from .connection import _STREAM_LIMIT, Connection, format_address
from .limits import PendingBytes, ServerLimits
from .periodic import periodic
from .router import Router

__all__ = ["RemotingServer"]

log = logging.getLogger(__name__)

#: Idle sweeps per idle timeout (a silent connection closes within 1.25 timeouts).
_SWEEPS_PER_IDLE: Final = 4
#: Bounds of the sweep period, seconds.
_SWEEP_MIN_S: Final = 0.05
_SWEEP_MAX_S: Final = 5.0


class RemotingServer:
    """A listening socket plus the connections accepted on it.

    Args:
        router: handlers for every inbound request.
        host: interface to bind (``"127.0.0.1"`` by default).
        port: TCP port (0 = any free port).
        limits: connection limits (default :class:`ServerLimits` ``()``, the broker's defaults).
        warnings: where rate-limited warnings go (default: this module's logger, one line per
            cause per ``limits.server_warning_interval_seconds``); tests inject a fake clock here.

    Attributes:
        connections: the open connections accepted by this server.
        address: ``"host:port"`` once started (None before).
        limits: as given.
        warnings: the rate-limited log shared by the server and its connections (its ``counts``
            say how many events of each cause happened).
        pending_bytes: the account of bytes held for incomplete frames (``pending_bytes.total``).
        idle_closed: connections closed by the idle timeout.
        refused: connections closed at accept because ``server_max_connections`` were open.
    """

    def __init__(
        self,
        router: Router,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        limits: ServerLimits | None = None,
        warnings: RateLimitedLog | None = None,
    ) -> None:
        self._router = router
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = False
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self.connections: set[Connection] = set()
        self.address: str | None = None
        self.limits = limits if limits is not None else ServerLimits()
        self.warnings = (
            warnings if warnings is not None else RateLimitedLog(log, self.limits.server_warning_interval_seconds)
        )
        self.pending_bytes = PendingBytes(self.limits, self.connections, self.warnings)
        self.idle_closed = 0
        self.refused = 0

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
        idle = self.limits.server_channel_max_idle_time_seconds
        if idle > 0:
            period = min(max(idle / _SWEEPS_PER_IDLE, _SWEEP_MIN_S), _SWEEP_MAX_S)
            self._sweeper = asyncio.get_running_loop().create_task(
                periodic("idle-sweep", period, self._sweep_idle, initial_delay=period, logger=log),
                name=f"rocketpipe-idle-sweep-{self.address}",
            )
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
        cap = self.limits.server_max_connections
        if len(self.connections) >= cap:
            self.refused += 1
            self.warnings.warning(
                "max-connections", "connection refused: %d connections open, server_max_connections=%d remote=%s",
                len(self.connections), cap, format_address(writer.get_extra_info("peername")),
            )  # fmt: skip
            writer.transport.abort()
            return
        conn = Connection(reader, writer, router=self._router, warnings=self.warnings, pending=self.pending_bytes)
        self.connections.add(conn)
        conn.add_close_callback(self._on_closed)
        conn.start()
        log.debug(
            "connection accepted remote=%s local=%s",
            conn.remote_address,
            format_address(writer.get_extra_info("sockname")),
        )

    async def _sweep_idle(self) -> None:
        """Close connections silent for the idle timeout; clear the others' activity marks.

        A connection seen active at a sweep counts as silent from that sweep on, so none is
        closed early; one is closed at most one sweep period late. O(connections) per sweep.
        """
        now = asyncio.get_running_loop().time()
        idle = self.limits.server_channel_max_idle_time_seconds
        for conn in list(self.connections):
            if conn.active:
                conn.active = False
                conn.quiet_since = now
            elif now - conn.quiet_since >= idle:
                self.idle_closed += 1
                self.warnings.warning(
                    "idle", "idle connection closed: no traffic for at least %.1fs, serverChannelMaxIdleTimeSeconds=%s remote=%s",
                    now - conn.quiet_since, idle, conn.remote_address,
                )  # fmt: skip
                conn.close_now("idle")

    def _on_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        for fn in self._close_callbacks:
            try:
                fn(conn)
            except Exception:
                log.exception("server close callback failed remote=%s", conn.remote_address)

    async def close(self) -> None:
        """Stop listening and close every connection; idempotent."""
        if self._closing:
            return
        self._closing = True
        server = self._server
        if server is not None:
            server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in list(self.connections)), return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        log.info("remoting server closed addr=%s", self.address)

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
