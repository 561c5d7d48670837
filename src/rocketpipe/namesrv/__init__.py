"""Embedded RocketMQ name server (L3).

* :class:`NameServer` — ``async with NameServer() as ns: ns.address``;
* :class:`RouteTable` — the pure route table behind it (``routes.py``).

Imports: L0–L2 except ``store``; never ``client`` or ``broker``.
"""

from __future__ import annotations

from .routes import BrokerLiveInfo, RegisterResult, RouteTable
from .server import NameServer

__all__ = ["BrokerLiveInfo", "NameServer", "RegisterResult", "RouteTable"]
