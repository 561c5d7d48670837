"""Producer (L3): :class:`Producer`, :class:`SendResult`, :class:`SendStatus`."""

from __future__ import annotations

from ..rpc import SendResult, SendStatus
from .producer import Producer

__all__ = ["Producer", "SendResult", "SendStatus"]
