"""TCP remoting server (L2): :class:`RemotingServer`.

Accepts connections with ``loop.create_server`` and serves each one as a
:class:`~.connection.Connection` (the socket's asyncio protocol) whose inbound requests go to a
shared :class:`~.router.Router`.
A connection that sends a malformed frame is closed alone; the server keeps serving the others.

Limits (:class:`~.limits.ServerLimits`): a connection past ``server_max_connections`` is closed
right after accept; one periodic sweep per server closes connections with no traffic either way
for ``server_channel_max_idle_time_seconds`` (Netty ``IdleStateHandler`` ``ALL_IDLE``); the
bytes held for incomplete frames are capped per connection and in total
(:class:`~.limits.PendingBytes`). Every limit hit is a warning line, at most one per cause per
``server_warning_interval_seconds``, with the count of what it stands for.
Mirrors ``NettyRemotingServer`` (and its ``NettyConnectManageHandler`` idle close).

TLS (:class:`~.tls.TlsServerConfig`): with ``mode="disabled"`` (or no config) the server is
``loop.create_server`` as before, at no cost. In ``permissive`` and ``enforcing`` modes the
server accepts on its own socket, waits until the new connection's first byte arrives, peeks at
it (``MSG_PEEK``: nothing is consumed) and only then builds the asyncio transport: TLS
(``loop.connect_accepted_socket(ssl=...)``) when the byte is ``0x16``, plain otherwise, as
Java's ``TlsModeHandler``. A plain connection is the same transport as in ``disabled`` mode,
so plain clients keep their speed; the look costs one readiness wait per connection. In
``enforcing`` mode a plain connection's requests are answered ``SYSTEM_ERROR`` (remark: TLS
required) and the connection closes. Failed handshakes are rate-limited warnings (cause
``tls-handshake``); the server keeps serving.

Imports: stdlib asyncio/socket/ssl, :mod:`rocketpipe.ratelog`, :mod:`rocketpipe.protocol`,
:mod:`.connection`, :mod:`.dispatch`, :mod:`.limits`, :mod:`.periodic`, :mod:`.router`,
:mod:`.tls`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Final

from ..protocol.codes import ResponseCode
from ..protocol.command import RemotingCommand
from ..ratelog import RateLimitedLog
from .connection import Connection, format_address
from .dispatch import Dispatcher, answer
from .limits import PendingBytes, ServerLimits
from .periodic import periodic
from .router import Router
from .tls import HANDSHAKE_MAGIC_CODE, TlsServerConfig

__all__ = ["RemotingServer"]

log = logging.getLogger(__name__)

#: Idle sweeps per idle timeout (a silent connection closes within 1.25 timeouts).
_SWEEPS_PER_IDLE: Final = 4
#: Bounds of the sweep period, seconds.
_SWEEP_MIN_S: Final = 0.05
_SWEEP_MAX_S: Final = 5.0
#: Seconds a new connection may stay silent before its first byte (TLS modes), when the idle
#: timeout is off.
_FIRST_BYTE_TIMEOUT_S: Final = 120.0
#: Seconds allowed for a TLS handshake (asyncio's default).
_HANDSHAKE_TIMEOUT_S: Final = 60.0
#: Seconds the accept loop pauses after an accept error (e.g. out of file descriptors).
_ACCEPT_ERROR_PAUSE_S: Final = 0.1
#: The remark a plain request gets from a server in ``enforcing`` mode.
TLS_REQUIRED_REMARK: Final = (
    "this server accepts TLS connections only (tls.server.mode=enforcing); "
    "connect with TLS (rocketpipe: ClientConfig(use_tls=True); Java: -Dtls.enable=true)"
)


class _TlsRequired:
    """Dispatcher of a plain connection to an ``enforcing`` server: say why, then close."""

    __slots__ = ()

    def dispatch_inline(self, cmd: RemotingCommand, conn: Connection) -> bool:
        answer(cmd, conn, cmd.response(ResponseCode.SYSTEM_ERROR, TLS_REQUIRED_REMARK))
        conn.close_now("plain connection to a TLS enforcing server")
        return True

    async def dispatch(self, cmd: RemotingCommand, conn: Connection) -> None:  # pragma: no cover - inline
        self.dispatch_inline(cmd, conn)


_TLS_REQUIRED: Final[Dispatcher[Connection]] = _TlsRequired()


class RemotingServer:
    """A listening socket plus the connections accepted on it.

    Args:
        router: handlers for every inbound request.
        host: interface to bind (``"127.0.0.1"`` by default).
        port: TCP port (0 = any free port).
        limits: connection limits (default :class:`ServerLimits` ``()``, the broker's defaults).
        warnings: where rate-limited warnings go (default: this module's logger, one line per
            cause per ``limits.server_warning_interval_seconds``); tests inject a fake clock here.
        tls: TLS settings (None or ``mode="disabled"``: plain only). The certificate files are
            read here.

    Raises:
        InvalidArgumentError: ``tls`` names a certificate or key that cannot be loaded.

    Attributes:
        connections: the open connections accepted by this server.
        address: ``"host:port"`` once started (None before).
        limits: as given.
        warnings: the rate-limited log shared by the server and its connections (its ``counts``
            say how many events of each cause happened).
        pending_bytes: the account of bytes held for incomplete frames (``pending_bytes.total``).
        idle_closed: connections closed by the idle timeout.
        refused: connections closed at accept because ``server_max_connections`` were open.
        tls_mode: ``"disabled"``, ``"permissive"`` or ``"enforcing"``.
        tls_connections: connections accepted with TLS (permissive/enforcing modes).
        plain_refused: plain connections refused by an ``enforcing`` server.
    """

    def __init__(
        self,
        router: Router,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        limits: ServerLimits | None = None,
        warnings: RateLimitedLog | None = None,
        tls: TlsServerConfig | None = None,
    ) -> None:
        self._ssl: ssl.SSLContext | None = None if tls is None else tls.server_context()
        self.tls_mode = "disabled" if tls is None or self._ssl is None else tls.mode
        self.tls_connections = 0
        self.plain_refused = 0
        self._listen_sock: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._detecting: set[asyncio.Task[None]] = set()
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
        if self._server is not None or self._listen_sock is not None:
            raise RuntimeError("RemotingServer already started")
        if self._ssl is None:
            self._server = await asyncio.get_running_loop().create_server(
                self._new_connection, self._host, self._port, reuse_address=True
            )
            sockname = self._server.sockets[0].getsockname()
        else:
            sock = self._listen_sock = self._bind()
            sockname = sock.getsockname()
            self._acceptor = asyncio.get_running_loop().create_task(
                self._accept_loop(sock), name=f"rocketpipe-tls-accept-{self._host}:{self._port}"
            )
        host, port = sockname[:2]
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
        log.info("remoting server listening addr=%s tls.server.mode=%s", self.address, self.tls_mode)
        return self.address

    # ------------------------------------------------------------------ TLS modes

    def _bind(self) -> socket.socket:
        """The listening socket of the TLS modes (``loop.create_server``'s choices)."""
        infos = socket.getaddrinfo(self._host or None, self._port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, type_, proto, _, sockaddr = infos[0]
        sock = socket.socket(family, type_, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
            sock.listen(100)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    async def _accept_loop(self, listen: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            try:
                sock, _ = await loop.sock_accept(listen)
            except OSError as err:
                if self._closing:
                    return
                self.warnings.warning("accept", "accept failed: %s", err)
                await asyncio.sleep(_ACCEPT_ERROR_PAUSE_S)
                continue
            cap = self.limits.server_max_connections
            if len(self.connections) + len(self._detecting) >= cap:
                self.refused += 1
                self.warnings.warning(
                    "max-connections", "connection refused: %d connections open or starting, server_max_connections=%d",
                    len(self.connections) + len(self._detecting), cap,
                )  # fmt: skip
                sock.close()
                continue
            sock.setblocking(False)
            task = loop.create_task(self._detect(sock))
            self._detecting.add(task)
            task.add_done_callback(self._detecting.discard)

    async def _detect(self, sock: socket.socket) -> None:
        """Peek at the first byte, then serve the socket as TLS (0x16) or plain."""
        handed = False
        peer = "?"
        try:
            peer = format_address(sock.getpeername())
            idle = self.limits.server_channel_max_idle_time_seconds
            first = await _peek_first_byte(sock, idle if idle > 0 else _FIRST_BYTE_TIMEOUT_S)
            if first is None:
                return
            loop = asyncio.get_running_loop()
            if first == HANDSHAKE_MAGIC_CODE:
                handed = True
                try:
                    await loop.connect_accepted_socket(
                        self._new_connection, sock, ssl=self._ssl, ssl_handshake_timeout=_HANDSHAKE_TIMEOUT_S
                    )
                except (OSError, TimeoutError) as err:
                    self.warnings.warning(
                        "tls-handshake", "TLS handshake failed remote=%s reason=%s", peer, err or type(err).__name__
                    )
                    return
                self.tls_connections += 1
                return
            handed = True
            if self.tls_mode == "enforcing":
                self.plain_refused += 1
                self.warnings.warning(
                    "tls-plain-refused", "plain connection refused, tls.server.mode=enforcing remote=%s", peer
                )
                await loop.connect_accepted_socket(lambda: self._new_connection(_TLS_REQUIRED), sock)
                return
            await loop.connect_accepted_socket(self._new_connection, sock)
        except OSError as err:
            log.debug("connection lost before its first byte remote=%s error=%s", peer, err)
        finally:
            if not handed:
                sock.close()

    def add_close_callback(self, fn: Callable[[Connection], None]) -> None:
        """Call ``fn(conn)`` for every accepted connection when it closes.

        Exceptions raised by ``fn`` are logged and ignored.
        """
        self._close_callbacks.append(fn)

    def _new_connection(self, router: Dispatcher[Connection] | None = None) -> Connection:
        """The protocol of an accepted socket (``_accept`` runs once its transport is made)."""
        return Connection(
            router=router or self._router, warnings=self.warnings, pending=self.pending_bytes, on_open=self._accept
        )

    def _accept(self, conn: Connection) -> None:
        """Register a new connection, or close it at once (server closing, or over the cap)."""
        if self._closing:
            conn.close_now("server closing", abort=True)
            return
        cap = self.limits.server_max_connections
        if len(self.connections) >= cap:
            self.refused += 1
            self.warnings.warning(
                "max-connections", "connection refused: %d connections open, server_max_connections=%d remote=%s",
                len(self.connections), cap, conn.remote_address,
            )  # fmt: skip
            conn.close_now("refused: server_max_connections", abort=True)
            return
        self.connections.add(conn)
        conn.add_close_callback(self._on_closed)
        log.debug("connection accepted remote=%s local=%s", conn.remote_address, conn.local_address)

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
        waits: list[asyncio.Task[None]] = list(self._detecting)
        if self._acceptor is not None:
            waits.append(self._acceptor)
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        if self._listen_sock is not None:
            self._listen_sock.close()
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


async def _peek_first_byte(sock: socket.socket, timeout: float) -> int | None:
    """Wait (at most ``timeout`` seconds) for ``sock``'s first byte and return it unconsumed.

    Returns:
        The byte, or None when the peer closed first, the socket failed or the time ran out.
    """
    loop = asyncio.get_running_loop()
    fd = sock.fileno()
    try:
        async with asyncio.timeout(timeout):
            while True:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_reader(fd, _wake, ready)
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
                try:
                    data = sock.recv(1, socket.MSG_PEEK)
                except (BlockingIOError, InterruptedError):
                    continue
                return data[0] if data else None
    except TimeoutError:
        return None


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
