"""END_TRANSACTION (37): a producer commits or rolls back a half message.

Mirrors ``EndTransactionProcessor`` (Apache RocketMQ 5.3.3): the decision is
:meth:`~rocketpipe.broker.transaction.service.TransactionService.end_transaction`'s. Producers
send it oneway, so the answer is normally dropped; a two-way request gets it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.codes import RequestCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.transaction import EndTransactionRequestHeader
from ...transport import Connection, Router
from .common import decode_header

if TYPE_CHECKING:
    from ..transaction.service import TransactionService


class EndTransactionProcessor:
    """Handler of END_TRANSACTION."""

    def __init__(self, service: TransactionService) -> None:
        self.service = service

    def register(self, router: Router) -> None:
        """Register the handler on ``router``."""
        router.register(RequestCode.END_TRANSACTION, self.end_transaction)

    async def end_transaction(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """Commit (store the real message + an op message) or roll back (op message only).

        Raises:
            ProtocolError: a required header field is missing (answered as an error by the router).
        """
        h = decode_header(EndTransactionRequestHeader, cmd)
        return self.service.end_transaction(cmd, h)
