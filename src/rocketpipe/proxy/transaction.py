"""Transactional messages through the gRPC endpoint: what the endpoint remembers of each half
message, EndTransaction as a remoting END_TRANSACTION, and the brokers' check-backs forwarded to
an SDK producer over Telemetry.

The SDKs' producer group is the topic (Java's proxy: "use topicName as producerGroup for
transactional checker"): a half message carries ``PGROUP=<topic>``. The flow, as Java 5.3.3's
proxy in cluster mode:

1. SendMessage of a TRANSACTION message stores a half message; on SEND_OK the endpoint keeps a
   :class:`TransactionData` (broker, ``tranStateTableOffset`` = queue offset, ``commitLogOffset``
   from the offset msg id) under ``<topic>@<transactionId>`` (``ProducerProcessor.fillTransactionData``).
2. EndTransaction takes that data back (the newest that has not expired) and sends END_TRANSACTION
   oneway to the broker's master (``TransactionProcessor.endTransaction``,
   ``AbstractTransactionService.genEndTransactionRequestHeader``).
3. A producer whose Telemetry settings publish to a TRANSACTION topic makes the endpoint's
   remoting client heartbeat with that producer group (``ClusterTransactionService``'s
   transaction heartbeats), so a broker's CHECK_TRANSACTION_STATE for the group reaches the
   endpoint (``ProxyClientRemotingProcessor.checkTransactionState``); the endpoint keeps a
   :class:`TransactionData` for the asked half (``AbstractProxyRelayService.processCheckTransactionState``)
   and writes a ``RecoverOrphanedTransactionCommand`` to a live Telemetry stream of a producer of
   the group (``GrpcClientChannel.processCheckTransaction``). The SDK's ``TransactionChecker``
   answers with EndTransaction(source=SERVER_CHECK), which is step 2.

Differences from Java: the group rides in the heartbeats of the endpoint's own remoting client
(client id of its producer, every ``heartbeat_broker_interval``, plus one at once when a group is
added) instead of a separate ``rmq-proxy-producer-client`` heartbeat every 20 s; expired data is
swept when data is added (at most every ``transactionDataExpireScanPeriodMillis``) instead of by
a thread; END_TRANSACTION after a check-back goes to the address of the broker that asked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Final

from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from ..broker.topics import validate_topic
from ..client import rpc
from ..client.rpc import SendResult
from ..client.runtime import ClientRuntime
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import RequestTimeoutError, RocketMQError
from ..protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from ..protocol.message import MessageExt, decode_offset_msg_id
from ..protocol.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from ..ratelog import RateLimitedLog
from .auth import CALLER
from .channel import ChannelManager
from .convert import GrpcError, to_grpc_message

if TYPE_CHECKING:
    from ..transport.connection import Connection

log = logging.getLogger(__name__)

#: ProxyConfig defaults (5.3.3): transactionDataExpireMillis, transactionDataMaxNum,
#: transactionDataExpireScanPeriodMillis.
TRANSACTION_DATA_EXPIRE_MS: Final = 30_000
TRANSACTION_DATA_MAX_NUM: Final = 15
TRANSACTION_DATA_EXPIRE_SCAN_PERIOD_MS: Final = 10_000

#: ``TransactionResolution`` → END_TRANSACTION's ``commitOrRollback`` (``buildCommitOrRollback``);
#: anything else is TRANSACTION_NOT_TYPE (0, "unknown": the broker asks again later).
_COMMIT_OR_ROLLBACK: Final[dict[int, int]] = {
    pb.TransactionResolution.COMMIT: TRANSACTION_COMMIT_TYPE,
    pb.TransactionResolution.ROLLBACK: TRANSACTION_ROLLBACK_TYPE,
}


def commit_or_rollback(resolution: int) -> int:
    """END_TRANSACTION's ``commitOrRollback`` of a ``TransactionResolution``: COMMIT → 8,
    ROLLBACK → 12, anything else → 0 (Java ``TransactionProcessor.buildCommitOrRollback``)."""
    return _COMMIT_OR_ROLLBACK.get(resolution, TRANSACTION_NOT_TYPE)


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionData:
    """What the endpoint needs to end one half message (Java ``TransactionData``).

    Attributes:
        broker_name: the broker group holding the half ("" when unknown: ``broker_addr`` is set).
        topic: the half's topic.
        tran_state_table_offset: the half's queue offset.
        commit_log_offset: the half's commit-log offset.
        transaction_id: the broker's ``transactionId`` (the message's ``UNIQ_KEY``).
        check_timestamp: ms since the epoch when the data was made.
        expire_ms: ms the data is kept (``transactionDataExpireMillis``).
        broker_addr: the address of the broker that asked in a check-back (None after a send:
            the master of ``broker_name`` is used).
    """

    broker_name: str
    topic: str
    tran_state_table_offset: int
    commit_log_offset: int
    transaction_id: str
    check_timestamp: int
    expire_ms: int
    broker_addr: str | None = None

    @property
    def expire_time(self) -> int:
        """ms since the epoch after which the data is no longer used."""
        return self.check_timestamp + self.expire_ms

    def sort_key(self) -> tuple[int, str, int, int, str]:
        """Java's ``compareTo`` order: expire time, broker, commit-log offset, queue offset, id."""
        return (
            self.expire_time,
            self.broker_name,
            self.commit_log_offset,
            self.tran_state_table_offset,
            self.transaction_id,
        )


class TransactionDataManager:
    """``<producerGroup>@<transactionId>`` → its :class:`TransactionData`, oldest expiry first
    (Java ``TransactionDataManager``). Not thread-safe (one event loop).

    Args:
        max_num: entries kept per key; adding one more drops the one expiring first
            (``transactionDataMaxNum``, 15).
        scan_period_ms: at most this often an :meth:`add` sweeps expired entries of every key
            (``transactionDataExpireScanPeriodMillis``, 10 000).
    """

    def __init__(
        self, max_num: int = TRANSACTION_DATA_MAX_NUM, scan_period_ms: int = TRANSACTION_DATA_EXPIRE_SCAN_PERIOD_MS
    ) -> None:
        self.max_num = max_num
        self.scan_period_ms = scan_period_ms
        self._data: dict[str, list[TransactionData]] = {}
        self._last_scan_ms = 0

    @staticmethod
    def key(producer_group: str, transaction_id: str) -> str:
        """``buildKey``: ``<producerGroup>@<transactionId>``."""
        return f"{producer_group}@{transaction_id}"

    def __len__(self) -> int:
        """Entries kept, every key together."""
        return sum(len(v) for v in self._data.values())

    def add(self, producer_group: str, transaction_id: str, data: TransactionData, now_ms: int) -> None:
        """Keep ``data`` (an equal entry is kept once); sweep expired entries when the last sweep
        is ``scan_period_ms`` old (``now_ms``: ms since the epoch)."""
        if now_ms - self._last_scan_ms >= self.scan_period_ms:
            self.clean_expired(now_ms)
        entries = self._data.setdefault(self.key(producer_group, transaction_id), [])
        if data in entries:
            return
        entries.append(data)
        entries.sort(key=TransactionData.sort_key)
        if len(entries) > self.max_num:
            del entries[0]

    def poll_no_expire(self, producer_group: str, transaction_id: str, now_ms: int) -> TransactionData | None:
        """Remove and return the entry of the key expiring last, skipping (and dropping) expired
        ones; None when there is none (``pollNoExpireTransactionData``)."""
        key = self.key(producer_group, transaction_id)
        entries = self._data.get(key)
        found = None
        while entries:
            data = entries.pop()
            if data.expire_time >= now_ms:
                found = data
                break
        if entries is not None and not entries:
            del self._data[key]
        return found

    def remove(self, producer_group: str, transaction_id: str, data: TransactionData) -> None:
        """Forget ``data`` (``removeTransactionData``: a check-back could not be forwarded)."""
        key = self.key(producer_group, transaction_id)
        entries = self._data.get(key)
        if entries is None:
            return
        if data in entries:
            entries.remove(data)
        if not entries:
            del self._data[key]

    def clean_expired(self, now_ms: int) -> None:
        """Drop every entry whose expire time is before ``now_ms`` (``cleanExpireTransactionData``)."""
        self._last_scan_ms = now_ms
        for key in list(self._data):
            kept = [d for d in self._data[key] if d.expire_time >= now_ms]
            if kept:
                self._data[key] = kept
            else:
                del self._data[key]


class _GroupMember:
    """The endpoint's stand-in, in its remoting client, for the SDK producers of one group: the
    runtime heartbeats the group and hands this member the brokers' CHECK_TRANSACTION_STATE
    (``ClientRuntime._on_check_transaction_state`` finds it by the half's ``PGROUP``)."""

    def __init__(self, service: TransactionService, producer_group: str) -> None:
        self.service = service
        self.producer_group = producer_group

    async def check_transaction_state(
        self, conn: Connection, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        await self.service.check_transaction_state(self.producer_group, conn, msg, header)


class TransactionService:
    """The endpoint's transactional side over one remoting client runtime (Java
    ``ClusterTransactionService`` with ``TransactionProcessor`` and the check-back relay).

    Args:
        runtime: the runtime of the endpoint's remoting producer (its heartbeats carry the SDK
            producer groups; its router receives the brokers' check-backs).
        channels: the SDK clients' Telemetry channels and producer groups.
        request_timeout: seconds to write an END_TRANSACTION.
        expire_ms: how long the data of a half message is kept (``transactionDataExpireMillis``).
        clock: wall clock (ms timestamps of the data).
    """

    def __init__(
        self,
        runtime: ClientRuntime,
        channels: ChannelManager,
        *,
        request_timeout: float = 3.0,
        expire_ms: int = TRANSACTION_DATA_EXPIRE_MS,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.runtime = runtime
        self.channels = channels
        self.request_timeout = request_timeout
        self.expire_ms = expire_ms
        self.clock = clock
        self.data = TransactionDataManager()
        self._members: dict[str, _GroupMember] = {}
        self._log = RateLimitedLog(log, 60.0)

    # ------------------------------------------------------------------ subscriptions

    def transaction_groups(self) -> list[str]:
        """The producer groups the endpoint heartbeats for (sorted)."""
        return sorted(self._members)

    def add_transaction_subscription(self, producer_group: str, topic: str) -> None:
        """Heartbeat ``producer_group`` to the brokers (``addTransactionSubscription``): register
        it with the runtime, keep ``topic``'s route fresh and, in the background, fetch the route
        and send a heartbeat to every known master at once. Idempotent per group."""
        if producer_group in self._members:
            return
        member = _GroupMember(self, producer_group)
        self._members[producer_group] = member
        self.runtime.register_producer(producer_group, member)
        self.runtime.add_route_topic(topic)
        if self.runtime.tasks.running:
            self.runtime.tasks.spawn(self._announce(topic), f"grpc-tx-announce-{producer_group}")

    async def _announce(self, topic: str) -> None:
        CALLER.set(None)  # the endpoint's own requests, not the SDK call's that spawned this task
        try:
            await self.runtime.route(topic)
        except RocketMQError as exc:
            log.warning("no route of transactional topic %s: %s", topic, exc)
        await self.runtime.send_heartbeat_to_all_brokers()

    def remove_group(self, producer_group: str) -> None:
        """Stop heartbeating ``producer_group`` (no SDK producer of it is left: Java's heartbeat
        scan drops groups that are not ``groupOnline``)."""
        member = self._members.pop(producer_group, None)
        if member is not None:
            self.runtime.unregister_producer(producer_group, member)

    # ------------------------------------------------------------------ send / end

    def on_half_sent(self, producer_group: str, topic: str, result: SendResult) -> None:
        """Keep the data to end a half message just stored with SEND_OK and a ``transactionId``
        (``ProducerProcessor.fillTransactionData``); a result whose ids do not decode is logged."""
        if not result.transaction_id:
            return
        try:
            _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
        except RocketMQError as exc:
            log.warning("fillTransactionData failed: result=%s: %s", result, exc)
            return
        now = self.clock.now_ms()
        data = TransactionData(
            broker_name=result.message_queue.broker_name,
            topic=topic,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            transaction_id=result.transaction_id,
            check_timestamp=now,
            expire_ms=self.expire_ms,
        )
        self.data.add(producer_group, result.transaction_id, data, now)

    async def end_transaction(self, request: spb.EndTransactionRequest) -> None:
        """EndTransaction → END_TRANSACTION oneway to the broker of the half message
        (``EndTransactionActivity`` → ``TransactionProcessor.endTransaction``). The producer group
        is the topic; ``fromTransactionCheck`` is the SERVER_CHECK source; ``msgId`` the
        request's message id; the offsets come from the kept :class:`TransactionData`.

        Raises:
            GrpcError: ILLEGAL_TOPIC; INVALID_TRANSACTION_ID (blank id); INTERNAL_SERVER_ERROR
                "cannot found transaction data" (unknown, expired or already ended, as Java's
                TRANSACTION_DATA_NOT_FOUND maps).
            RequestTimeoutError: not written within ``request_timeout`` (PROXY_TIMEOUT).
            RocketMQError: the broker's address is unknown, or the request could not be written.
        """
        topic = request.topic.name
        problem = validate_topic(topic)
        if problem is not None:
            raise GrpcError(pb.Code.ILLEGAL_TOPIC, problem)
        transaction_id = request.transaction_id
        if not transaction_id.strip():
            raise GrpcError(pb.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        data = self.data.poll_no_expire(topic, transaction_id, self.clock.now_ms())
        if data is None:
            raise GrpcError(pb.Code.INTERNAL_SERVER_ERROR, "cannot found transaction data")
        header = EndTransactionRequestHeader(
            topic=topic,
            producer_group=topic,
            tran_state_table_offset=data.tran_state_table_offset,
            commit_log_offset=data.commit_log_offset,
            commit_or_rollback=commit_or_rollback(request.resolution),
            from_transaction_check=request.source == pb.TransactionSource.SOURCE_SERVER_CHECK,
            msg_id=request.message_id,
            transaction_id=transaction_id,
        )
        rt = self.runtime
        addr = data.broker_addr or rt.find_broker_addr(data.broker_name)
        if addr is None:
            addr = await rt.find_master_addr(data.broker_name, data.topic)
        try:
            async with asyncio.timeout(self.request_timeout):
                await rpc.end_transaction_oneway(rt.pool, addr, header)
        except TimeoutError:
            raise RequestTimeoutError(f"END_TRANSACTION to {addr} not written in {self.request_timeout}s") from None

    # ------------------------------------------------------------------ check-back

    async def check_transaction_state(
        self, producer_group: str, conn: Connection, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """Forward a broker's CHECK_TRANSACTION_STATE for half message ``msg`` to a live
        Telemetry stream of a producer of ``producer_group`` as a ``RecoverOrphanedTransactionCommand``
        (transaction id of the check, the half as the SDKs receive messages), keeping the data
        its EndTransaction will need. Without a live producer the check is logged (one line per
        group per minute) and dropped: the broker asks again. Never raises."""
        channel = self.channels.available_channel(producer_group)
        if channel is None:
            self._log.log(
                logging.WARNING,
                f"no-channel-{producer_group}",
                "check transaction failed, channel is empty. groupId=%s msgId=%s",
                producer_group,
                header.msg_id,
            )
            return
        now = self.clock.now_ms()
        transaction_id = header.transaction_id or msg.msg_id
        data = TransactionData(
            broker_name=header.bname or "",
            topic=msg.topic,
            tran_state_table_offset=int(header.tran_state_table_offset or 0),
            commit_log_offset=int(header.commit_log_offset or 0),
            transaction_id=transaction_id,
            check_timestamp=now,
            expire_ms=self.expire_ms,
            broker_addr=conn.remote_address,
        )
        self.data.add(producer_group, transaction_id, data, now)
        command = spb.TelemetryCommand(
            recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
                transaction_id=transaction_id, message=to_grpc_message(msg, now)
            )
        )
        if not channel.write(command):  # closed meanwhile: onSendCheckTransactionStateFailed
            self.data.remove(producer_group, transaction_id, data)


__all__ = [
    "TRANSACTION_DATA_EXPIRE_MS",
    "TRANSACTION_DATA_MAX_NUM",
    "TransactionData",
    "TransactionDataManager",
    "TransactionService",
    "commit_or_rollback",
]
