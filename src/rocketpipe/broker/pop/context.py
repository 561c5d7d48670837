"""What the POP handlers and the reviver see of the POP service (L3): :class:`PopContext`.

:class:`~.service.PopService` composes :class:`~.processor.PopProcessor` and
:class:`~.revive.Reviver` and passes itself; they depend on this interface instead of
``service.py``, so the service imports them and nothing imports the service back.
:class:`~.service.PopService` satisfies it structurally.
"""

from __future__ import annotations

from typing import Protocol

from ..context import BrokerContext
from .checkpoint import CheckpointTable
from .config import PopConfig

__all__ = ["PopContext"]


class PopContext(Protocol):
    """The POP state and long-polling services, as the handlers and the reviver use them.

    Attributes:
        broker: the broker's state tables and services.
        config: POP settings.
        table: checkpoints and pop offsets (read and written by the handlers and the reviver).
    """

    broker: BrokerContext
    config: PopConfig
    table: CheckpointTable

    def changed(self) -> None:
        """Note a change of the table (persisted within ``persist_interval``)."""
        ...

    def notify_message_arriving(self, topic: str) -> None:
        """Wake the POPs held on ``topic``."""
        ...

    async def wait_for_arrival(self, topic: str, timeout: float) -> None:
        """Wait up to ``timeout`` s for :meth:`notify_message_arriving` on ``topic``."""
        ...

    def polling_admit(self, key: tuple[str, str, int]) -> bool:
        """Count a held POP in (``key``: topic, group, queue id); False (POLLING_FULL) at a limit."""
        ...

    def polling_release(self, key: tuple[str, str, int]) -> None:
        """Count a held POP out."""
        ...
