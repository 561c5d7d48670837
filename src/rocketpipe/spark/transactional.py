"""Exactly-once delivery of the ``rocketmq`` Spark sink: half messages the driver ends (L4 spark).

With ``deliveryGuarantee=exactly-once`` every row is sent by its task as a RocketMQ transactional
*half* message (``TRAN_MSG=true``, ``PGROUP=<producerGroup>``, sysflag
``TRANSACTION_PREPARED_TYPE``): stored, invisible to consumers. The task returns the halves it
stored (:class:`Half`) in its commit message. Then:

* the driver's ``commit`` ends every half of the write (or micro-batch) with END_TRANSACTION
  COMMIT, sent **two-way** so each one is acknowledged (Apache's ``EndTransactionProcessor``
  answers a request that is not oneway: SUCCESS, or why it refused); a refusal or a timeout fails
  ``commit``, so Spark fails the job / the micro-batch instead of recording it;
* ``abort``, and a task that fails after storing halves, end them with ROLLBACK (best effort:
  a half nobody ends stays invisible, and the broker drops it after ``transactionCheckMax``
  check-backs that no producer of the group answers);
* a task attempt that dies (executor lost, worker killed) leaves halves no commit message names:
  they are never committed.

A second COMMIT of the same half stores the message again: neither Apache 5.3.3's
``EndTransactionProcessor`` nor rocketpipe's broker refuses it (``commitMessage`` looks the half
up by commit-log offset; the op message that ``deletePrepareMessage`` writes is only read by the
check service). So a driver that dies half-way through a micro-batch's commits must not simply
commit again after its restart. For streams, :class:`DecisionLog` keeps, under
``transactionLogDir``, per query and batch: the halves the driver decided to commit (written and
fsynced before the first COMMIT) and a ``done`` mark after the last. When Spark replays a batch
whose decision exists (the driver died before Spark recorded the batch as committed), the replay's
own halves are rolled back and the logged decision is finished: a logged half whose ``UNIQ_KEY``
is already visible in its topic (``QUERY_MESSAGE`` by unique key, :func:`visible_halves`) is not
committed again. Consumers see every row of the batch exactly once.

A batch write (``df.write``) has no replay: its driver-side guarantee is per ``save()`` (task
retries and failed jobs leave nothing visible; a driver that dies inside ``commit`` leaves the
halves it had committed visible and the rest invisible).

Imports :mod:`rocketpipe.client` (``Admin`` for routes, the connection pool and unique-key
queries), :mod:`rocketpipe.protocol` and the standard library.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import orjson

from ..client import Admin
from ..client.config import ClientConfig
from ..client.rpc import SendResult, end_transaction_command
from ..errors import RocketMQError, error_for_response
from ..protocol.codes import ResponseCode
from ..protocol.headers.transaction import EndTransactionRequestHeader
from ..protocol.message import decode_offset_msg_id
from ..protocol.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE

__all__ = [
    "BatchOutcome",
    "DecisionLog",
    "EndResult",
    "Half",
    "SinkCommitError",
    "end_halves",
    "finish_batch",
    "half_of",
    "roll_back",
    "visible_halves",
]

log = logging.getLogger(__name__)

#: END_TRANSACTION requests outstanding at once from the driver.
END_CONCURRENCY: Final = 64
#: Unique-key queries outstanding at once while a replayed batch is recovered.
QUERY_CONCURRENCY: Final = 16
#: Batches of a query whose decisions the log keeps (Spark's ``minBatchesToRetain`` default).
RETAINED_BATCHES: Final = 100


class SinkCommitError(RocketMQError):
    """The driver could not commit an exactly-once write or micro-batch (see the message)."""


@dataclass(frozen=True, slots=True)
class Half:
    """One stored half message, as END_TRANSACTION needs it.

    Attributes:
        topic: the message's real topic.
        broker_name: the broker holding the half.
        commit_log_offset: the half's physical offset, bytes (from the send's offset msg id).
        queue_offset: the half's offset in ``RMQ_SYS_TRANS_HALF_TOPIC`` (``tranStateTableOffset``).
        msg_id: the client's ``UNIQ_KEY``, which the committed message keeps.
        transaction_id: the send response's ``transactionId`` (None when the broker gave none).
    """

    topic: str
    broker_name: str
    commit_log_offset: int
    queue_offset: int
    msg_id: str
    transaction_id: str | None

    def to_json(self) -> list[object]:
        return [
            self.topic,
            self.broker_name,
            self.commit_log_offset,
            self.queue_offset,
            self.msg_id,
            self.transaction_id,
        ]

    @classmethod
    def from_json(cls, v: Sequence[object]) -> Half:
        topic, broker, clo, qo, msg_id, tx = v
        return cls(str(topic), str(broker), int(clo), int(qo), str(msg_id), None if tx is None else str(tx))  # type: ignore[call-overload]


def half_of(result: SendResult) -> Half:
    """The :class:`Half` of a stored half message's send result.

    Raises:
        InvalidArgumentError: the result's offset msg id does not decode.
    """
    _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
    mq = result.message_queue
    return Half(mq.topic, mq.broker_name, commit_log_offset, result.queue_offset, result.msg_id, result.transaction_id)


@dataclass(slots=True)
class EndResult:
    """Outcome of :func:`end_halves`.

    Attributes:
        ended: halves the broker acknowledged.
        failed: ``(half, reason)`` of those it refused or that got no answer in time.
    """

    ended: int = 0
    failed: list[tuple[Half, str]] = field(default_factory=list)


async def end_halves(
    admin: Admin, producer_group: str, halves: Sequence[Half], *, commit: bool, timeout: float
) -> EndResult:
    """End ``halves`` with two-way END_TRANSACTION, ``END_CONCURRENCY`` requests at a time.

    The header is the one ``DefaultMQProducerImpl.endTransaction`` sends (``commitOrRollback`` 8
    or 12, ``fromTransactionCheck`` false), sent to the master of the half's broker.

    Args:
        admin: connections and routes (its runtime's pool).
        producer_group: the halves' ``PGROUP``.
        halves: what to end.
        commit: COMMIT (True) or ROLLBACK (False).
        timeout: per request, seconds.

    Returns:
        Counts and the failures (never raises for one half's failure).
    """
    rt = admin.runtime
    state = TRANSACTION_COMMIT_TYPE if commit else TRANSACTION_ROLLBACK_TYPE
    sem = asyncio.Semaphore(END_CONCURRENCY)
    out = EndResult()

    async def one(h: Half) -> None:
        header = EndTransactionRequestHeader(
            topic=h.topic,
            producer_group=producer_group,
            tran_state_table_offset=h.queue_offset,
            commit_log_offset=h.commit_log_offset,
            commit_or_rollback=state,
            from_transaction_check=False,
            msg_id=h.msg_id,
            transaction_id=h.transaction_id,
            bname=h.broker_name,
        )
        async with sem:
            try:
                addr = rt.find_broker_addr(h.broker_name) or await rt.find_master_addr(h.broker_name, h.topic)
                resp = await rt.pool.request(addr, end_transaction_command(header), timeout)
                if resp.code != ResponseCode.SUCCESS:
                    raise error_for_response(resp.code, resp.remark)
            except (RocketMQError, OSError, TimeoutError) as exc:
                out.failed.append((h, f"{type(exc).__name__}: {exc}"))
                return
        out.ended += 1

    await asyncio.gather(*(one(h) for h in halves))
    return out


async def visible_halves(admin: Admin, halves: Sequence[Half]) -> set[str]:
    """The ``UNIQ_KEY`` of every half in ``halves`` already committed: a message with that
    unique key is stored in the half's topic (``queryMessageByUniqKey``, ``QUERY_MESSAGE`` with
    ``_UNIQUE_KEY_QUERY=true`` to every broker of the route).

    Raises:
        RocketMQError: a query failed (recovery cannot decide without the answer).
    """
    sem = asyncio.Semaphore(QUERY_CONCURRENCY)
    seen: set[str] = set()

    async def one(h: Half) -> None:
        async with sem:
            if await admin.query_message_by_unique_key(h.topic, h.msg_id, 1):
                seen.add(h.msg_id)

    await asyncio.gather(*(one(h) for h in halves))
    return seen


_QUERY_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class DecisionLog:
    """Per-query commit decisions of an exactly-once stream, as files under ``root``.

    ``<root>/<query id>/<batch id>.decision``: the halves the driver decided to commit (JSON,
    written to a temporary file, fsynced, renamed, directory fsynced) before the first COMMIT;
    ``<batch id>.done``: written after the last. The newest ``RETAINED_BATCHES`` batches are kept.

    Args:
        root: the ``transactionLogDir`` option (a path the restarted driver can read again).
        query_id: the streaming query's id (stable across restarts from a checkpoint).

    Raises:
        ValueError: ``query_id`` is not a plain identifier.
    """

    def __init__(self, root: str | os.PathLike[str], query_id: str) -> None:
        if not _QUERY_ID_RE.match(query_id):
            raise ValueError(f"query id {query_id!r} cannot name a directory")
        self.dir = Path(root) / query_id

    def decision(self, batch_id: int) -> list[Half] | None:
        """The logged halves of ``batch_id``, or None when no decision was logged."""
        try:
            raw = (self.dir / f"{batch_id}.decision").read_bytes()
        except FileNotFoundError:
            return None
        return [Half.from_json(v) for v in orjson.loads(raw)]

    def is_done(self, batch_id: int) -> bool:
        return (self.dir / f"{batch_id}.done").exists()

    def write_decision(self, batch_id: int, halves: Iterable[Half]) -> None:
        """Durably log the decision to commit ``halves`` (raises OSError when it cannot)."""
        self._write(f"{batch_id}.decision", orjson.dumps([h.to_json() for h in halves]))

    def mark_done(self, batch_id: int) -> None:
        """Log that every half of ``batch_id``'s decision is committed, and forget old batches."""
        self._write(f"{batch_id}.done", b"")
        for path in self.dir.iterdir():
            stem, _, kind = path.name.partition(".")
            if kind in ("decision", "done") and stem.isdigit() and int(stem) <= batch_id - RETAINED_BATCHES:
                path.unlink(missing_ok=True)

    def _write(self, name: str, data: bytes) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{name}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / name)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(slots=True)
class BatchOutcome:
    """What :func:`finish_batch` did, for the driver's log line and for tests.

    Attributes:
        committed: halves committed now.
        already_visible: logged halves found committed by an earlier driver (replays only).
        rolled_back: this run's halves rolled back because a logged decision won (replays only).
        replay: the batch had a logged decision before this commit.
    """

    committed: int = 0
    already_visible: int = 0
    rolled_back: int = 0
    replay: bool = False


async def finish_batch(
    config: ClientConfig,
    producer_group: str,
    halves: Sequence[Half],
    *,
    timeout: float,
    decisions: DecisionLog | None = None,
    batch_id: int | None = None,
) -> BatchOutcome:
    """Commit a write's or micro-batch's halves (the driver's ``commit``).

    Without ``decisions`` (batch writes): COMMIT every half. With them (streams): log the decision,
    COMMIT, mark done; or, when the batch's decision is already logged (a replay), ROLLBACK
    ``halves`` and COMMIT the logged halves not yet visible.

    Raises:
        SinkCommitError: some halves could not be committed (the batch must not be recorded as
            committed; a stream's replay finishes it), or the log could not be written/read.
    """
    out = BatchOutcome()
    async with Admin(config=config) as admin:
        todo: Sequence[Half] = halves
        if decisions is not None:
            assert batch_id is not None
            logged = decisions.decision(batch_id)
            if logged is not None:
                out.replay = True
                rb = await end_halves(admin, producer_group, halves, commit=False, timeout=timeout)
                out.rolled_back = rb.ended
                if rb.failed:
                    log.warning(
                        "rocketmq sink batch %d replay: %d of its own halves not rolled back (they stay invisible): %s",
                        batch_id,
                        len(rb.failed),
                        rb.failed[0][1],
                    )
                if decisions.is_done(batch_id):
                    todo = []
                    out.already_visible = len(logged)
                else:
                    seen = await visible_halves(admin, logged)
                    out.already_visible = len(seen)
                    todo = [h for h in logged if h.msg_id not in seen]
            else:
                try:
                    decisions.write_decision(batch_id, halves)
                except OSError as exc:
                    raise SinkCommitError(f"cannot log the commit decision of batch {batch_id}: {exc}") from exc
        res = await end_halves(admin, producer_group, todo, commit=True, timeout=timeout)
        out.committed = res.ended
        if res.failed:
            h, why = res.failed[0]
            raise SinkCommitError(
                f"{len(res.failed)} of {len(todo)} half messages could not be committed (first: topic {h.topic} "
                f"broker {h.broker_name} msgId {h.msg_id}: {why}); "
                + (
                    "the micro-batch is not recorded and its replay commits the rest"
                    if decisions is not None
                    else "the write failed with the others visible"
                )
            )
        if decisions is not None:
            assert batch_id is not None
            try:
                decisions.mark_done(batch_id)
            except OSError as exc:
                log.warning("rocketmq sink batch %d committed but its done mark failed: %s", batch_id, exc)
    return out


async def roll_back(config: ClientConfig, producer_group: str, halves: Sequence[Half], *, timeout: float) -> EndResult:
    """ROLLBACK ``halves`` (``abort``, a failed task); failures are returned, not raised."""
    async with Admin(config=config) as admin:
        return await end_halves(admin, producer_group, halves, commit=False, timeout=timeout)
