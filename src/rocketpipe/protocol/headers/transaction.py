"""Transaction headers (L1, sans-IO): END_TRANSACTION (37), CHECK_TRANSACTION_STATE (39).

Mirrors Java ``EndTransactionRequestHeader`` and ``CheckTransactionStateRequestHeader``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import RpcRequestHeader, wire

__all__ = ["CheckTransactionStateRequestHeader", "EndTransactionRequestHeader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader(RpcRequestHeader):
    """END_TRANSACTION (37) request, usually oneway (Java ``EndTransactionRequestHeader``).

    Attributes:
        topic: 5.x topic.
        producer_group: must equal the half message's ``PGROUP`` (required).
        tran_state_table_offset: the half message's queue offset (required).
        commit_log_offset: the half message's commit-log offset (required).
        commit_or_rollback: 0 unknown, 8 commit, 12 rollback (required).
        from_transaction_check: True when answering a check.
        msg_id: UNIQ_KEY (required).
        transaction_id: transaction id.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.END_TRANSACTION

    topic: str | None = wire("topic")
    producer_group: str | None = wire("producerGroup", required=True)
    tran_state_table_offset: int | None = wire("tranStateTableOffset", required=True)
    commit_log_offset: int | None = wire("commitLogOffset", required=True)
    commit_or_rollback: int | None = wire("commitOrRollback", required=True)
    from_transaction_check: bool | None = wire("fromTransactionCheck", False)
    msg_id: str | None = wire("msgId", required=True)
    transaction_id: str | None = wire("transactionId")


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(RpcRequestHeader):
    """CHECK_TRANSACTION_STATE (39, broker to producer, oneway) request
    (Java ``CheckTransactionStateRequestHeader``).

    Attributes:
        topic: 5.x: stored topic of the half message.
        tran_state_table_offset: queue offset of the half message (required).
        commit_log_offset: commit-log offset of the half message (required).
        msg_id: UNIQ_KEY.
        transaction_id: transaction id.
        offset_msg_id: offset msg id of the half message.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.CHECK_TRANSACTION_STATE

    topic: str | None = wire("topic")
    tran_state_table_offset: int | None = wire("tranStateTableOffset", required=True)
    commit_log_offset: int | None = wire("commitLogOffset", required=True)
    msg_id: str | None = wire("msgId")
    transaction_id: str | None = wire("transactionId")
    offset_msg_id: str | None = wire("offsetMsgId")
