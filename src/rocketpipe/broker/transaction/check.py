"""The transaction check pass (L3): which half messages to ask their producer about, which to
discard, and how far the check service has got (``TransactionalMessageServiceImpl.check``).

One pass walks each queue of ``RMQ_SYS_TRANS_HALF_TOPIC`` from the committed offset of
``CID_SYS_RMQ_TRANS``, with the op messages read from that group's offset on the same queue of
``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (see :mod:`.bridge`). For every half that no op message has
finished, in Java's order:

* checked ``transaction_check_max`` times already, or older than the store's
  ``fileReservedTime`` → discarded (a copy goes to ``TRANS_CHECK_MAX_TIME_TOPIC``);
* stored after the pass began → the pass ends;
* younger than its immunity time (``CHECK_IMMUNITY_TIME_IN_SECONDS``, else
  ``transaction_timeout``) → with the property: re-appended once with
  ``TRAN_PREPARED_QUEUE_OFFSET`` so it waits its turn (or finished, if the original's op has
  arrived); without it: the pass ends (every later half is younger);
* otherwise, unless op messages newer than the pass may still finish it → re-appended to the
  half queue with ``TRANSACTION_CHECK_TIMES`` + 1 and the producer is asked
  (CHECK_TRANSACTION_STATE, sent by the caller's ``send_check``).

Then the group's offsets move past what was handled: the half offset to the first half not
handled, the op offset past the op messages whose halves were all seen. The pass yields to the
event loop every :data:`YIELD_EVERY` steps, stops after :data:`MAX_PROCESS_TIME_LIMIT_MS`, and a
failed re-append ends it (Java retries in a loop; the next pass retries here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

from ...protocol import message as pm
from ...store import GetStatus, MessageInner, PutResult
from ..topics import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from . import bridge

__all__ = ["CheckDeps", "TransactionCheck"]

log = logging.getLogger("rocketpipe.broker.transaction")

#: ``MAX_PROCESS_TIME_LIMIT``: one queue's pass ends after this long, ms.
MAX_PROCESS_TIME_LIMIT_MS: Final = 60_000
#: ``OP_MSG_PULL_NUMS``: op messages read per step.
OP_MSG_PULL_NUMS: Final = 32
#: ``SLEEP_WHILE_NO_OP``: wait for op messages that may still finish a half, seconds.
SLEEP_WHILE_NO_OP_S: Final = 1.0
#: ``MAX_RETRY_COUNT_WHEN_HALF_NULL``: empty half reads before the pass ends.
MAX_RETRY_COUNT_WHEN_HALF_NULL: Final = 1
#: handle this many halves between yields to the event loop.
YIELD_EVERY: Final = 64


class CheckDeps(Protocol):
    """What a pass needs from the broker (``TransactionalMessageBridge``)."""

    def now_ms(self) -> int:
        """Wall clock, ms."""
        ...

    def get_message(
        self, topic: str, queue_id: int, offset: int, max_nums: int
    ) -> tuple[GetStatus, int, list[pm.MessageExt]]:
        """Read up to ``max_nums`` records: (status, next begin offset, decoded messages)."""
        ...

    def query_offset(self, topic: str, queue_id: int) -> int:
        """``CID_SYS_RMQ_TRANS``'s offset, or the queue's min offset when it has none."""
        ...

    def commit_offset(self, topic: str, queue_id: int, offset: int) -> None:
        """Store ``CID_SYS_RMQ_TRANS``'s offset."""
        ...

    def put(self, inner: MessageInner) -> PutResult:
        """Append a message."""
        ...

    def send_check(self, half: pm.MessageExt) -> None:
        """Ask the producer group of ``half`` (oneway, in the background)."""
        ...

    def discard(self, half: pm.MessageExt) -> None:
        """Move ``half`` to ``TRANS_CHECK_MAX_TIME_TOPIC``."""
        ...


@dataclass(slots=True)
class _Pull:
    """A ``PullResult`` of the half or op queue (``msgs`` None unless FOUND)."""

    status: str
    next_begin: int
    msgs: list[pm.MessageExt] | None


def _pull_status(status: GetStatus) -> str:
    """``TransactionalMessageBridge.getMessage``: a store status as a pull status."""
    if status is GetStatus.FOUND:
        return "FOUND"
    if status is GetStatus.NO_MATCHED_MESSAGE:
        return "NO_MATCHED_MSG"
    if status in (GetStatus.NO_MESSAGE_IN_QUEUE, GetStatus.OFFSET_OVERFLOW_ONE):
        return "NO_NEW_MSG"
    return "OFFSET_ILLEGAL"


@dataclass(slots=True)
class _OpState:
    """Op messages read so far: half offset → op offset, op offset → its unfinished halves,
    and the op offsets whose halves were all seen."""

    remove: dict[int, int] = field(default_factory=dict)
    pending: dict[int, set[int]] = field(default_factory=dict)
    done: list[int] = field(default_factory=list)

    def seen(self, half_offset: int) -> bool:
        """Forget ``half_offset`` when an op finished it; return whether one did."""
        op = self.remove.pop(half_offset, None)
        if op is None:
            return False
        halves = self.pending.get(op)
        if halves is not None:
            halves.discard(half_offset)
            if not halves:
                del self.pending[op]
                self.done.append(op)
        return True


def next_op_offset(done: list[int], old: int) -> int:
    """``calculateOpOffset``: move past the consecutive finished op offsets from ``old``."""
    offset = old
    for o in sorted(done):
        if o != offset:
            break
        offset += 1
    return offset


class TransactionCheck:
    """One check pass over the half queues.

    Args:
        deps: store access, offsets, re-append and the producer call.
        transaction_timeout_ms: ``transactionTimeOut``.
        transaction_check_max: ``transactionCheckMax``.
        file_reserved_time_h: the store's ``fileReservedTime`` (older halves are discarded).
        sleep: the wait used while op messages may still arrive (injected for tests).
    """

    def __init__(
        self,
        deps: CheckDeps,
        *,
        transaction_timeout_ms: int,
        transaction_check_max: int,
        file_reserved_time_h: int,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.deps = deps
        self.timeout_ms = transaction_timeout_ms
        self.check_max = transaction_check_max
        self.reserved_ms = file_reserved_time_h * 3_600_000
        self._sleep = sleep
        #: what the last pass did: checks sent, halves discarded, halves finished by ops
        self.checked = self.discarded = self.finished = 0

    def _pull(self, topic: str, queue_id: int, offset: int, nums: int) -> _Pull:
        status, next_begin, msgs = self.deps.get_message(topic, queue_id, offset, nums)
        name = _pull_status(status)
        return _Pull(name, next_begin, msgs if name == "FOUND" else None)

    def _fill(self, ops: _OpState, queue_id: int, op_offset: int, min_half: int) -> _Pull:
        """``fillOpRemoveMap``: read op messages from ``op_offset`` into ``ops``."""
        pull = self._pull(TRANS_OP_HALF_TOPIC, queue_id, op_offset, OP_MSG_PULL_NUMS)
        if pull.status in ("OFFSET_ILLEGAL", "NO_MATCHED_MSG"):
            log.warning("transaction op queue %d: offset %d is %s", queue_id, op_offset, pull.status)
            self.deps.commit_offset(TRANS_OP_HALF_TOPIC, queue_id, pull.next_begin)
            return pull
        for op in pull.msgs or ():
            if not op.body:
                ops.done.append(op.queue_offset)
                continue
            halves: set[int] = set()
            if op.tags == bridge.REMOVE_TAG:
                for off in bridge.op_offsets(op.body):
                    if off >= min_half:
                        ops.remove[off] = op.queue_offset
                        halves.add(off)
            else:
                log.error("transaction op message with tag %r at offset %d ignored", op.tags, op.queue_offset)
            if halves:
                ops.pending[op.queue_offset] = halves
            else:
                ops.done.append(op.queue_offset)
        return pull

    def _count_check(self, half: pm.MessageExt) -> bool:
        """``needDiscard``: True when checked ``check_max`` times; else count this check in
        the half's ``TRANSACTION_CHECK_TIMES``."""
        value = half.properties.get(bridge.PROPERTY_TRANSACTION_CHECK_TIMES)
        times = 1
        if value is not None:
            try:
                times = int(value)
            except ValueError:
                times = -1
            if times >= self.check_max:
                return True
            times += 1
        half.properties[bridge.PROPERTY_TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _put_back(self, half: pm.MessageExt) -> bool:
        """``putBackHalfMsgQueue``: append a copy; ``half`` then describes the copy."""
        result = self.deps.put(bridge.renewed_half(half, half.properties))
        if not result.is_ok:
            log.error("transaction check: re-appending half %s failed: %s", half.msg_id, result.status)
            return False
        half.queue_offset = result.queue_offset
        half.commit_log_offset = result.wrote_offset
        half.offset_msg_id = result.msg_ids[0]
        return True

    def _immune(self, ops: _OpState, half: pm.MessageExt) -> bool:
        """``checkPrepareQueueOffset``: True when the half is handled (finished by its
        original's op, or re-appended to wait out its immunity)."""
        original = half.properties.get(bridge.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
        if original is not None:
            try:
                offset = int(original)
            except ValueError:
                return False
            if offset == -1:
                return False
            op = ops.remove.pop(offset, None)
            if op is not None:
                ops.done.append(op)
                return True
        props = dict(half.properties)
        props[bridge.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] = original or str(half.queue_offset)
        return self.deps.put(bridge.renewed_half(half, props)).is_ok

    def _half(self, queue_id: int, offset: int) -> tuple[pm.MessageExt | None, _Pull]:
        pull = self._pull(TRANS_HALF_TOPIC, queue_id, offset, 1)
        return (pull.msgs[0] if pull.msgs else None), pull

    async def run_queue(self, queue_id: int) -> None:
        """One pass over half queue ``queue_id`` (see the module docstring)."""
        deps = self.deps
        start = deps.now_ms()
        half_offset = deps.query_offset(TRANS_HALF_TOPIC, queue_id)
        op_offset = deps.query_offset(TRANS_OP_HALF_TOPIC, queue_id)
        if half_offset < 0 or op_offset < 0:
            log.error(
                "transaction check: illegal offsets half=%d op=%d, queue %d skipped", half_offset, op_offset, queue_id
            )
            return
        ops = _OpState()
        pull = self._fill(ops, queue_id, op_offset, half_offset)
        nulls = 1
        i = new_offset = half_offset
        next_op = pull.next_begin
        steps = 0
        while deps.now_ms() - start <= MAX_PROCESS_TIME_LIMIT_MS:
            steps += 1
            if steps % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if ops.seen(i):
                self.finished += 1
            else:
                half, got = self._half(queue_id, i)
                if half is None:
                    nulls += 1
                    if nulls - 1 > MAX_RETRY_COUNT_WHEN_HALF_NULL or got.status == "NO_NEW_MSG":
                        break
                    i = new_offset = got.next_begin
                    continue
                now = deps.now_ms()
                if self._count_check(half) or now - half.born_timestamp > self.reserved_ms:
                    deps.discard(half)
                    self.discarded += 1
                    i = new_offset = i + 1
                    continue
                if half.store_timestamp >= start:
                    break
                age = now - half.born_timestamp
                immunity_prop = half.properties.get(bridge.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
                immunity = bridge.immunity_time_ms(immunity_prop, self.timeout_ms)
                if immunity_prop is not None:
                    if age < immunity and self._immune(ops, half):
                        i = new_offset = i + 1
                        continue
                elif 0 <= age < immunity:
                    break
                op_msgs = pull.msgs
                need_check = (
                    (op_msgs is None and age > immunity)
                    or (op_msgs is not None and op_msgs[-1].born_timestamp - start > self.timeout_ms)
                    or age <= -1
                )
                if need_check:
                    if not self._put_back(half):
                        break
                    deps.send_check(half)
                    self.checked += 1
                else:
                    next_op = pull.next_begin
                    pull = self._fill(ops, queue_id, next_op, half_offset)
                    if pull.status != "FOUND":
                        await self._sleep(SLEEP_WHILE_NO_OP_S)
                    continue
            i = new_offset = i + 1
        if new_offset != half_offset:
            deps.commit_offset(TRANS_HALF_TOPIC, queue_id, new_offset)
        new_op = next_op_offset(ops.done, op_offset)
        if new_op != op_offset:
            deps.commit_offset(TRANS_OP_HALF_TOPIC, queue_id, new_op)
