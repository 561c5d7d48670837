"""Connections by peer address (L2): :class:`ConnectionPool`.

One long-lived connection per ``"host:port"``, opened lazily; concurrent callers asking for the
same address share one connect attempt (single flight); a closed connection is evicted and the
next caller reconnects. Mirrors ``NettyRemotingClient.channelTables`` / ``getAndCreateChannel``.

Imports: stdlib asyncio, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`, :mod:`.connection`,
:mod:`.router`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

from ..errors import ClientClosedError, RequestTimeoutError
from ..protocol.command import RemotingCommand
from .connection import Connection
from .router import Router

__all__ = ["ConnectionPool"]

log = logging.getLogger(__name__)


class ConnectionPool:
    """Lazily connected, single-flight pool of :class:`Connection` keyed by address.

    Args:
        router: handlers for requests that peers send on pooled connections (for example
            ``NOTIFY_CONSUMER_IDS_CHANGED`` from a broker).
        connect_timeout: seconds allowed for one TCP connect.
        request_hook: called with every request sent on the pool's connections before it is
            encoded (the client's ACL signing, Java's ``RPCHook.doBeforeRequest``); installed
            as :attr:`Connection.request_hook` on each new connection.
        ssl_context: every connection speaks TLS with this context (Java's
            ``NettyClientConfig.useTLS``); None: plain TCP.
    """

    def __init__(
        self,
        router: Router | None = None,
        connect_timeout: float = 3.0,
        request_hook: Callable[[RemotingCommand], None] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._ssl_context = ssl_context
        self._router = router
        self._connect_timeout = connect_timeout
        self._request_hook = request_hook
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}
        self._closed = False

    @property
    def connections(self) -> dict[str, Connection]:
        """A snapshot of the open connections by address."""
        return {a: c for a, c in self._conns.items() if not c.is_closed}

    def open_connection(self, addr: str) -> Connection | None:
        """Return the open connection to ``addr`` without connecting (None when there is none).

        Hot paths use it to skip the connect machinery of :meth:`get` and :meth:`request`.
        """
        conn = self._conns.get(addr)
        if conn is None or conn.is_closed:
            return None
        return conn

    async def get(self, addr: str) -> Connection:
        """Return the open connection to ``addr``, connecting if needed.

        Concurrent calls for the same address share one connect attempt; cancelling one caller
        does not cancel the attempt for the others.

        Args:
            addr: ``"host:port"``.

        Returns:
            An open connection.

        Raises:
            ConnectionClosedError: the connect failed or timed out (retriable).
            ClientClosedError: the pool is closed.
            InvalidArgumentError: ``addr`` is not ``host:port``.
        """
        if self._closed:
            raise ClientClosedError("connection pool is closed")
        conn = self._conns.get(addr)
        if conn is not None and not conn.is_closed:
            return conn
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(addr), name=f"rocketpipe-connect-{addr}")
            task.add_done_callback(_retrieve)
            self._connecting[addr] = task
        return await asyncio.shield(task)

    async def _connect(self, addr: str) -> Connection:
        try:
            conn = await Connection.connect(
                addr, router=self._router, connect_timeout=self._connect_timeout, ssl_context=self._ssl_context
            )
        finally:
            if self._connecting.get(addr) is asyncio.current_task():
                del self._connecting[addr]
        if self._closed:
            await conn.close()
            raise ClientClosedError("connection pool is closed")
        conn.request_hook = self._request_hook
        old = self._conns.get(addr)
        self._conns[addr] = conn
        conn.add_close_callback(lambda c: self._evict(addr, c))
        if old is not None and not old.is_closed:  # pragma: no cover - single flight prevents it
            await old.close()
        return conn

    def _evict(self, addr: str, conn: Connection) -> None:
        if self._conns.get(addr) is conn:
            del self._conns[addr]
            log.debug("connection evicted addr=%s", addr)

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float | None) -> RemotingCommand:
        """Send request ``cmd`` to ``addr`` and wait for the response.

        ``timeout`` covers the connect (when one is needed) and the request together, as
        ``NettyRemotingClient.invokeSync`` does.

        Args:
            addr: ``"host:port"``.
            cmd: the request.
            timeout: seconds for connect + response (None = no limit beyond the connect
                timeout).

        Returns:
            The response, whatever its code.

        Raises:
            RequestTimeoutError: no response in time (retriable).
            ConnectionClosedError: connect failed or the connection closed (retriable).
            ClientClosedError: the pool is closed.
        """
        if timeout is None:
            conn = await self.get(addr)
            return await conn.request(cmd, None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        cached = self._conns.get(addr)
        if cached is not None and not cached.is_closed:
            conn = cached
        else:
            try:
                async with asyncio.timeout(timeout):
                    conn = await self.get(addr)
            except TimeoutError:
                raise RequestTimeoutError(f"connect to {addr} not done within {timeout}s") from None
        return await conn.request(cmd, max(deadline - loop.time(), 0.0))

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send ``cmd`` to ``addr`` as a oneway request.

        Raises:
            ConnectionClosedError: connect failed or the connection is closed (retriable).
            ClientClosedError: the pool is closed.
        """
        conn = await self.get(addr)
        await conn.oneway(cmd)

    async def evict(self, addr: str) -> None:
        """Close and forget the connection to ``addr`` (the next call reconnects)."""
        conn = self._conns.pop(addr, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        """Close every connection and abandon connects in progress; idempotent.

        Later calls to :meth:`get` raise :class:`ClientClosedError`.
        """
        self._closed = True
        tasks = list(self._connecting.values())
        for task in tasks:
            task.cancel()
        conns = list(self._conns.values())
        self._conns.clear()
        await asyncio.gather(*tasks, *(c.close() for c in conns), return_exceptions=True)


def _retrieve(task: asyncio.Task[Connection]) -> None:
    """Mark a connect task's exception as retrieved when every waiter has gone away."""
    if not task.cancelled():
        task.exception()
