"""POP consumption for the embedded broker (L3): POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME and the revive of unacknowledged messages.

Plug-in entry point::

    pop = install(broker)      # registers the four request codes on broker.router; sets broker.pop
    await pop.start()          # after the store is loaded: reads popCheckpoint.json, starts loops
    ...
    await pop.close()          # before the store closes: stops loops, writes popCheckpoint.json

Modules: :mod:`.checkpoint` (pure bookkeeping and revive rules), :mod:`.processor` (handlers),
:mod:`.revive` (expired messages → pop retry topic / DLQ), :mod:`.service` (lifecycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .checkpoint import Checkpoint, CheckpointTable, ReviveDecision, decide_revive
from .service import CHECKPOINT_FILE, PopConfig, PopService

if TYPE_CHECKING:
    from ..broker import Broker

__all__ = [
    "CHECKPOINT_FILE",
    "Checkpoint",
    "CheckpointTable",
    "PopConfig",
    "PopService",
    "ReviveDecision",
    "decide_revive",
    "install",
]


def install(broker: Broker, config: PopConfig | None = None) -> PopService:
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
