"""Asyncio transport (L2): the only package that touches sockets.

* :class:`Router` — request code → async handler, Java-style error responses;
* :class:`Connection` — one multiplexed TCP connection (opaque → future table, inbound
  requests);
* :class:`ConnectionPool` — one connection per address, single-flight connects;
* :class:`RemotingServer` — ``loop.create_server`` + Router;
* :class:`TlsServerConfig`, :class:`TlsClientConfig` — TLS settings (:mod:`.tls`);
* :mod:`.dispatch` — what a connection hands inbound requests to (a Router), so the connection
  never imports the router.

Imports: stdlib asyncio, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`. Never ``store``.
"""

from __future__ import annotations

from .connection import Connection, parse_address
from .limits import ServerLimits
from .pool import ConnectionPool
from .router import DEFER, Handler, InlineHandler, Router
from .server import RemotingServer
from .tls import TlsClientConfig, TlsServerConfig

__all__ = [
    "DEFER",
    "Connection",
    "ConnectionPool",
    "Handler",
    "InlineHandler",
    "RemotingServer",
    "Router",
    "ServerLimits",
    "TlsClientConfig",
    "TlsServerConfig",
    "parse_address",
]
