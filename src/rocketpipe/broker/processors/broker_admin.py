"""Broker-wide administration: UPDATE_BROKER_CONFIG (25), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
CLEAN_EXPIRED_CONSUMEQUEUE (306), VIEW_BROKER_STATS_DATA (315).

Mirrors the matching handlers of Java's ``AdminBrokerProcessor``.
"""

from __future__ import annotations

from ...transport import Router
from ..context import BrokerContext


class BrokerAdminProcessor:
    """Handlers of broker configuration and statistics requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
