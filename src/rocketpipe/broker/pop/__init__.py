"""POP consumption for the embedded broker (L3): POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME and the revive of unacknowledged messages.

Plug-in entry point::

    pop = install(broker)      # registers the four request codes on broker.router; sets broker.pop
    await pop.start()          # after the store is loaded: reads popCheckpoint.json, starts loops
    ...
    await pop.close()          # before the store closes: stops loops, writes popCheckpoint.json

Modules: :mod:`.checkpoint` (pure bookkeeping and revive rules), :mod:`.processor` (handlers),
:mod:`.revive` (expired messages → pop retry topic / DLQ), :mod:`.service` (lifecycle),
:mod:`.config` (:class:`PopConfig`), :mod:`.context` (what the handlers and the reviver see of
the service). The package sees the broker as a :class:`PopHost`, never ``broker.py`` itself.
"""

from __future__ import annotations

from typing import Protocol

from ...transport import Router
from ..context import BrokerContext
from .checkpoint import Checkpoint, CheckpointTable, ReviveDecision, decide_revive
from .config import PopConfig
from .service import CHECKPOINT_FILE, PopService

__all__ = [
    "CHECKPOINT_FILE",
    "Checkpoint",
    "CheckpointTable",
    "PopConfig",
    "PopHost",
    "PopService",
    "ReviveDecision",
    "decide_revive",
    "install",
]


class PopHost(BrokerContext, Protocol):
    """A broker POP can be installed on: the processors' view plus its router and ``pop`` slot.

    Attributes:
        router: where the four POP request codes are registered.
        pop: the installed service (set by :func:`install`).
    """

    router: Router
    pop: PopService


def install(broker: PopHost, config: PopConfig | None = None) -> PopService:
    """Attach POP to ``broker``: register the handlers and return the (not yet started) service.

    Idempotent: a broker that already has a :class:`PopService` (attribute ``pop``) gets it back.
    The caller starts it (``await service.start()``) once the broker's store is loaded and closes
    it (``await service.close()``) before the store closes.

    Args:
        broker: the broker (started or not).
        config: POP settings; defaults follow Java.
    """
    existing = getattr(broker, "pop", None)
    if isinstance(existing, PopService):
        return existing
    service = PopService(broker, config)
    service.processor.register(broker.router)
    broker.pop = service
    return service
