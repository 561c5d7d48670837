"""Embedded RocketMQ broker (L3): :class:`Broker` and :class:`BrokerConfig`.

Imports L0–L2 only (``errors``, ``clock``, ``protocol``, ``transport``, ``store``); never
``client`` or ``namesrv``.
"""

from __future__ import annotations

from .broker import Broker
from .config import BrokerConfig

__all__ = ["Broker", "BrokerConfig"]
