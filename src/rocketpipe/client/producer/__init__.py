"""Producer (L3): :class:`Producer`, :class:`SendResult`, :class:`SendStatus`."""

from __future__ import annotations

from ..rpc import SendResult, SendStatus
from .producer import Producer
from .selectors import MessageQueueSelector, select_by_hash, select_by_random

__all__ = ["MessageQueueSelector", "Producer", "SendResult", "SendStatus", "select_by_hash", "select_by_random"]
