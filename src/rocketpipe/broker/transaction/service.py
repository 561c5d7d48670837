"""Transactional messages on the broker (L3): END_TRANSACTION and the check service.

Mirrors ``EndTransactionProcessor``, ``TransactionalMessageServiceImpl`` (commit, rollback,
``deletePrepareMessage``), ``TransactionalMessageCheckService`` (a pass every
``transactionCheckInterval``) and ``AbstractTransactionalMessageCheckListener.sendCheckMessage``
(CHECK_TRANSACTION_STATE to one live channel of the half's producer group), Apache RocketMQ
5.3.3. Half messages are stored by the send processor (:func:`.bridge.half_message`); the
message shapes are :mod:`.bridge`'s, the pass is :mod:`.check`'s.

Differences from Java, none visible on the wire: an op message is written at once for every
ended transaction (5.x gathers them for up to ``transactionOpBatchInterval``; 4.9 writes at
once too), and a failed re-append ends a check pass instead of being retried in a loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ...errors import RocketMQError
from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from ...store import GetStatus, MessageInner, PutResult, PutStatus
from ..topics import TRANS_HALF_TOPIC
from . import bridge
from .check import TransactionCheck

if TYPE_CHECKING:
    from ...transport import Connection
    from ..context import BrokerContext

__all__ = ["TransactionService"]

log = logging.getLogger("rocketpipe.broker.transaction")

#: seconds a CHECK_TRANSACTION_STATE may wait for a slow producer's socket
_CHECK_SEND_TIMEOUT_S: Final = 3.0


def _final_put_response(cmd: RemotingCommand, result: PutResult, max_message_size: int) -> RemotingCommand:
    """``EndTransactionProcessor.sendFinalMessage``: the committed message's put status as a response."""
    status = result.status
    if result.is_ok:
        return cmd.response(ResponseCode.SUCCESS)
    if status is PutStatus.CREATE_MAPPED_FILE_FAILED:
        return cmd.response(ResponseCode.SYSTEM_ERROR, "Create mapped file failed.")
    if status in (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED):
        return cmd.response(
            ResponseCode.MESSAGE_ILLEGAL,
            "The message is illegal, maybe msg body or properties length not matched. "
            f"msg body length limit {max_message_size}B, msg properties length limit 32KB.",
        )
    if status is PutStatus.SERVICE_NOT_AVAILABLE:
        return cmd.response(ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now.")
    return cmd.response(ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR DEFAULT {status.name}")


class TransactionService:
    """The broker's transactional-message service.

    Args:
        broker: the broker's tables and store (its config's ``transaction_*`` fields).
        put: appends a message and wakes held pulls (``Broker.put_message``).
    """

    def __init__(self, broker: BrokerContext, put: Callable[[MessageInner], PutResult]) -> None:
        self.broker = broker
        self._put = put
        self._rr = itertools.count()
        self._sends: set[asyncio.Task[None]] = set()
        cfg = broker.config
        self.check = TransactionCheck(
            self,
            transaction_timeout_ms=cfg.transaction_timeout,
            transaction_check_max=cfg.transaction_check_max,
            file_reserved_time_h=cfg.file_reserved_time,
        )
        #: ended transactions: committed and rolled back
        self.committed = self.rolled_back = 0

    # ------------------------------------------------------------------ CheckDeps
    def now_ms(self) -> int:
        """Wall clock, ms."""
        return self.broker.clock.now_ms()

    def get_message(
        self, topic: str, queue_id: int, offset: int, max_nums: int
    ) -> tuple[GetStatus, int, list[pm.MessageExt]]:
        """Read and decode up to ``max_nums`` records of a system queue."""
        res = self.broker.store.get_message(topic, queue_id, offset, max_nums)
        msgs: list[pm.MessageExt] = []
        for buf in res.buffers:
            msgs.extend(pm.decode_records(buf, decompress_body=False))
        return res.status, res.next_begin_offset, msgs

    def query_offset(self, topic: str, queue_id: int) -> int:
        """``fetchConsumeOffset``: the group's offset, else the queue's min offset."""
        offset = self.broker.offsets.query(bridge.CID_SYS_RMQ_TRANS, topic, queue_id)
        return offset if offset >= 0 else self.broker.store.get_min_offset(topic, queue_id)

    def commit_offset(self, topic: str, queue_id: int, offset: int) -> None:
        """``updateConsumeOffset``."""
        self.broker.offsets.commit(bridge.CID_SYS_RMQ_TRANS, topic, queue_id, offset)

    def put(self, inner: MessageInner) -> PutResult:
        """Append a message (store host = this broker when it had none)."""
        return self._put(inner)

    def discard(self, half: pm.MessageExt) -> None:
        """``resolveDiscardMsg``: move a half checked too often to ``TRANS_CHECK_MAX_TIME_TOPIC``."""
        real = half.properties.get(pm.PROPERTY_REAL_TOPIC)
        result = self._put(bridge.discarded_message(half))
        if result.is_ok:
            log.warning(
                "transaction half discarded after %s checks: uniq=%s real topic=%s queue offset=%d -> TRANS_CHECK_MAX_TIME_TOPIC",
                half.properties.get(bridge.PROPERTY_TRANSACTION_CHECK_TIMES),
                half.properties.get(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                real,
                half.queue_offset,
            )
        else:
            log.error("transaction half %s could not be discarded: %s", half.msg_id, result.status)

    def send_check(self, half: pm.MessageExt) -> None:
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE to one live producer of the half's group."""
        cfg = self.broker.config
        uniq = half.properties.get(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            topic=half.topic,
            tran_state_table_offset=half.queue_offset,
            commit_log_offset=half.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=half.offset_msg_id,
            bname=cfg.broker_name,
        )
        group = half.properties.get(pm.PROPERTY_PRODUCER_GROUP) or ""
        conn = self._producer_channel(group)
        if conn is None:
            log.warning("transaction check not sent: no producer of group %s is connected (uniq=%s)", group, uniq)
            return
        body = pm.encode_message_ext(
            half,
            topic=half.properties.get(pm.PROPERTY_REAL_TOPIC) or half.topic,
            queue_id=int(half.properties.get(pm.PROPERTY_REAL_QUEUE_ID) or 0),
        )
        cmd = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), body)
        task = asyncio.get_running_loop().create_task(self._send(conn, cmd, group, uniq))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    def _producer_channel(self, group: str) -> Connection | None:
        """``ProducerManager.getAvailableChannel``: the next open channel of ``group``, round robin."""
        chans = [c.channel for c in self.broker.clients.producers.get(group, {}).values()]
        open_chans = [c for c in chans if not getattr(c, "is_closed", False)]
        if not open_chans:
            return None
        conn: Connection = open_chans[next(self._rr) % len(open_chans)]  # type: ignore[assignment]
        return conn

    async def _send(self, conn: Connection, cmd: RemotingCommand, group: str, uniq: str | None) -> None:
        try:
            async with asyncio.timeout(_CHECK_SEND_TIMEOUT_S):
                await conn.oneway(cmd)
        except (TimeoutError, RocketMQError, OSError) as exc:
            log.info("transaction check to group=%s uniq=%s failed: %s", group, uniq, exc)

    # ------------------------------------------------------------------ END_TRANSACTION
    def end_transaction(self, cmd: RemotingCommand, h: EndTransactionRequestHeader) -> RemotingCommand | None:
        """``EndTransactionProcessor.processRequest`` after the header is decoded.

        Returns:
            None for UNKNOW (0) or another value (no response, as Java); otherwise the result:
            SUCCESS; SYSTEM_ERROR "Find prepared transaction message failed" / "The producer
            group wrong" / "The transaction state table offset wrong" / "The commit log offset
            wrong"; ILLEGAL_OPERATION for a producer's own decision after the half's check
            immunity time; or the committed message's put failure.
        """
        kind = h.commit_or_rollback
        if kind not in (sf.TRANSACTION_COMMIT_TYPE, sf.TRANSACTION_ROLLBACK_TYPE):
            log.info(
                "END_TRANSACTION %s ignored: state %s (check=%s) uniq=%s remark=%s",
                "unknown" if kind == sf.TRANSACTION_NOT_TYPE else "bad",
                kind,
                h.from_transaction_check,
                h.msg_id,
                cmd.remark,
            )
            return None
        half = self._half_at(h.commit_log_offset or 0)
        if half is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if self._too_late(h, half):
            log.warning(
                "END_TRANSACTION refused: producer decision after the check immunity time, uniq=%s commitLogOffset=%s",
                h.msg_id,
                h.commit_log_offset,
            )
            return cmd.response(ResponseCode.ILLEGAL_OPERATION)
        wrong = self._mismatch(half, h)
        if wrong is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, wrong)
        if kind == sf.TRANSACTION_COMMIT_TYPE:
            result = self._put(bridge.committed_message(half))
            resp = _final_put_response(cmd, result, self.broker.config.max_message_size)
            if result.is_ok:
                self.committed += 1
                self._end(half)
            return resp
        self.rolled_back += 1
        self._end(half)
        return cmd.response(ResponseCode.SUCCESS)

    def _half_at(self, commit_log_offset: int) -> pm.MessageExt | None:
        """The half message stored at ``commit_log_offset`` (``lookMessageByOffset``), or None."""
        try:
            msg = self.broker.store.look_message_by_offset(commit_log_offset)
        except RocketMQError:
            return None
        return msg if msg is not None and msg.topic == TRANS_HALF_TOPIC else None

    def _too_late(self, h: EndTransactionRequestHeader, half: pm.MessageExt) -> bool:
        """``rejectCommitOrRollback``: a producer's own decision after the half's immunity time."""
        if h.from_transaction_check:
            return False
        value = half.properties.get(bridge.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
        if not value:
            return False
        limit = bridge.end_immunity_time_ms(value, self.broker.config.transaction_timeout)
        return self.now_ms() - half.born_timestamp > limit

    @staticmethod
    def _mismatch(half: pm.MessageExt, h: EndTransactionRequestHeader) -> str | None:
        """``checkPrepareMessage``: the remark when the request does not describe ``half``."""
        if half.properties.get(pm.PROPERTY_PRODUCER_GROUP) != h.producer_group:
            return "The producer group wrong"
        if half.queue_offset != h.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.commit_log_offset != h.commit_log_offset:
            return "The commit log offset wrong"
        return None

    def _end(self, half: pm.MessageExt) -> None:
        """``deletePrepareMessage``: the op message that finishes ``half``."""
        inner = bridge.op_message(
            half.queue_id,
            f"{half.queue_offset}{bridge.OFFSET_SEPARATOR}",
            self.broker.address or half.store_host,
            self.now_ms(),
            self.broker.unique_ids.next_id(),
        )
        result = self._put(inner)
        if not result.is_ok:  # the half stays unfinished: the check service will ask again
            log.error("transaction op message for half offset %d not stored: %s", half.queue_offset, result.status)

    # ------------------------------------------------------------------ check service
    async def check_once(self) -> None:
        """One check pass over every half queue (``TransactionalMessageCheckService.onWaitEnd``)."""
        for queue_id in self.broker.store.queue_ids(TRANS_HALF_TOPIC):
            await self.check.run_queue(queue_id)

    async def run(self) -> None:
        """Run a check pass every ``transaction_check_interval`` ms until cancelled."""
        interval = self.broker.config.transaction_check_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check_once()
            except Exception:  # a store error: logged; the next pass retries
                log.exception("transaction check pass failed")

    async def close(self) -> None:
        """Cancel the CHECK_TRANSACTION_STATE sends still in flight."""
        for task in list(self._sends):
            task.cancel()
        if self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)
