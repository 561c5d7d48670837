"""Transactional messages on the broker (L3): half messages, END_TRANSACTION, check-back.

* :mod:`.bridge` — how half, committed, op and discarded messages are built (pure);
* :mod:`.check` — one check pass: which halves to ask their producer about or discard;
* :mod:`.service` — :class:`TransactionService`: END_TRANSACTION, the check loop, the
  CHECK_TRANSACTION_STATE call to a producer.
"""

from __future__ import annotations

from .service import TransactionService

__all__ = ["TransactionService"]
