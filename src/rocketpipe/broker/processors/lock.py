"""Orderly consumption: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42).

Mirrors ``AdminBrokerProcessor.lockBatchMQ`` / ``unlockBatchMQ`` on a single broker (no
replica quorum): bodies are ``LockBatchRequestBody`` / ``UnlockBatchRequestBody``; the lock
answer lists the queues now held by the caller.
"""

from __future__ import annotations

from ...errors import ProtocolError
from ...protocol.bodies.consumer import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...transport import Connection, Router
from ..context import BrokerContext
from .common import error


class LockProcessor:
    """Handlers of the queue-lock requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.LOCK_BATCH_MQ, self.lock_batch_mq)
        router.register(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch_mq)

    async def lock_batch_mq(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Lock or renew queues for a client; body = the queues it holds afterwards."""
        try:
            body = LockBatchRequestBody.decode(bytes(cmd.body))
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad LockBatchRequestBody: {exc}")
        b = self.broker
        granted = b.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id, b.clock.now_ms())
        return cmd.response(ResponseCode.SUCCESS, None, None, LockBatchResponseBody(lock_ok_mq_set=granted).encode())

    async def unlock_batch_mq(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Release queues held by a client (usually sent oneway)."""
        try:
            body = UnlockBatchRequestBody.decode(bytes(cmd.body))
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad UnlockBatchRequestBody: {exc}")
        self.broker.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return cmd.response(ResponseCode.SUCCESS)
