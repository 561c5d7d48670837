"""LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42) headers (L1, sans-IO).

Both carry only the 5.x base keys (4.x sends no header); the content is the JSON body
``LockBatchRequestBody`` / ``UnlockBatchRequestBody`` (:mod:`rocketpipe.protocol.bodies.consumer`).
Mirrors Java ``LockBatchMqRequestHeader`` and ``UnlockBatchMqRequestHeader``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import RpcRequestHeader

__all__ = ["LockBatchMqRequestHeader", "UnlockBatchMqRequestHeader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LockBatchMqRequestHeader(RpcRequestHeader):
    """LOCK_BATCH_MQ (41) header: base keys only (Java ``LockBatchMqRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.LOCK_BATCH_MQ


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockBatchMqRequestHeader(RpcRequestHeader):
    """UNLOCK_BATCH_MQ (42) header: base keys only (Java ``UnlockBatchMqRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.UNLOCK_BATCH_MQ
