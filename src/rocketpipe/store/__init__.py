"""Local persistence of the broker (L2): commit log, consume queues, checkpoint, JSON state.

Synchronous file I/O only — no asyncio, no ``transport``. May import ``errors``, ``clock`` and
``protocol``. The broker owns one :class:`MessageStore` and calls it from its event loop; only
:meth:`MessageStore.flush` is meant to run in a worker thread (see ``message_store``).
"""

from __future__ import annotations

from .api import GetResult, GetStatus, MessageBatch, MessageInner, PutResult, PutStatus, QueryResult
from .config import StoreConfig
from .json_file import load_json, save_json
from .message_store import SCHEDULE_TOPIC, MessageStore
from .segments import StoreFileError

__all__ = [
    "SCHEDULE_TOPIC",
    "GetResult",
    "GetStatus",
    "MessageBatch",
    "MessageInner",
    "MessageStore",
    "PutResult",
    "PutStatus",
    "QueryResult",
    "StoreConfig",
    "StoreFileError",
    "load_json",
    "save_json",
]
