"""Producer (L3): :class:`Producer`, :class:`SendResult`, :class:`SendStatus`, and transactional
messages (:class:`TransactionProducer`, :class:`TransactionListener`,
:class:`LocalTransactionState`, :class:`TransactionSendResult`)."""

from __future__ import annotations

from ..rpc import SendResult, SendStatus
from .producer import Producer
from .selectors import MessageQueueSelector, select_by_hash, select_by_random
from .transaction import LocalTransactionState, TransactionListener, TransactionProducer, TransactionSendResult

__all__ = [
    "LocalTransactionState",
    "MessageQueueSelector",
    "Producer",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "select_by_hash",
    "select_by_random",
]
