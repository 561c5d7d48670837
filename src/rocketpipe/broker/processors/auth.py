"""ACL 2.0 user and ACL management of Apache RocketMQ 5.3: AUTH_CREATE_USER (3001) … AUTH_LIST_ACL (3010).

Mirrors the matching handlers of Java 5.3's ``AdminBrokerProcessor``.
"""

from __future__ import annotations

from ...transport import Router
from ..context import BrokerContext


class AuthProcessor:
    """Handlers of the ACL 2.0 user and ACL requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
