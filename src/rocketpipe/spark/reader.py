"""Batch and streaming readers of the ``rocketmq`` Spark source (L4 spark).

Where code runs (see ``spark-python-datasource.md`` §1.2-1.3):

* **Driver** (planner / streaming-runner Python processes): :class:`RocketMQStreamReader`'s
  ``initialOffset``, ``latestOffset``, ``partitions``, ``commit`` and
  :class:`RocketMQBatchReader`'s ``partitions``. They talk to the name server and brokers
  through a lazily created admin client (``SyncAdmin``) that is **never pickled**
  (``__getstate__`` drops it) and is safe to abandon (Spark does not reliably call ``stop()``).
* **Executors**: ``read(partition)`` runs :func:`read_partition`, which opens its own client
  (an async ``Admin`` on a private event-loop thread, :class:`_LoopPuller`), pulls exactly the
  partition's ``[start, end)`` ranges with ``pull_raw`` (no consumer group, no rebalance, no
  offset commit) keeping ``pullConcurrency`` pulls in flight across the ranges, decodes the
  pull bodies column-wise into Arrow record batches (:mod:`rocketpipe.spark.decode`, imported
  there only: the driver processes never load numpy's and Arrow's compute modules) and closes
  the client. Everything it needs travels in the :class:`RocketMQInputPartition`.

Spark's checkpoint is the only source of truth for progress; ``commit()`` does nothing.

Imports: pyspark, pyarrow, :mod:`rocketpipe.client` (public API), :mod:`rocketpipe.errors`,
:mod:`rocketpipe.protocol` and the other ``rocketpipe.spark`` modules.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final, Protocol, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ..errors import (
    InvalidArgumentError,
    ProtocolError,
    RocketMQError,
    RouteNotFoundError,
    TopicNotExistError,
    TransportError,
)
from ..protocol.message import MessageQueue
from ..protocol.names import is_system_topic
from .offsets import (
    Offsets,
    QueueRange,
    cap_offsets,
    json_queues,
    kafka_ranges,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
    queue_key,
    resolve_offsets,
    resolve_timestamps,
    split_ranges,
)
from .options import ConnectionOptions, SourceOptions
from .pushdown import PushedFilters, narrow, push_filters, tag_expression

log = logging.getLogger(__name__)
T = TypeVar("T")

#: A read() batch is flushed once it holds this many messages or raw bytes.
BATCH_TARGET_ROWS: Final = 16_384
BATCH_TARGET_BYTES: Final = 8 * 1024 * 1024
#: Pulls answered NO_NEW_MSG / NO_MATCHED_MSG below the queue head before giving up.
MAX_EMPTY_PULLS: Final = 20

_QUEUE_OFFSET = struct.Struct(">q")


class DataLossError(RocketMQError):
    """Messages the query must read are gone from the broker (``failOnDataLoss=true``)."""


class SourceError(RocketMQError):
    """The source cannot reach or describe a topic (wraps the client error)."""


class AdminClient(Protocol):
    """What the source needs from an admin client (``rocketpipe.client.SyncAdmin``)."""

    def topic_queues(self, topic: str) -> list[MessageQueue]: ...
    def fetch_all_topic_list(self) -> set[str]: ...
    def max_offset(self, mq: MessageQueue) -> int: ...
    def min_offset(self, mq: MessageQueue) -> int: ...
    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...
    def pull_raw(self, mq: MessageQueue, offset: int, max_nums: int, *, timeout: float = ...) -> Any: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """How executors reach the cluster and pull (picklable).

    Attributes:
        name_server: name-server address list.
        client_factory: ``module:callable`` overriding the client (tests): a ``SyncAdmin``-like
            object used on the driver and, through a thread pool, on executors; ``None`` for
            ``SyncAdmin`` on the driver and an async ``Admin`` on executors.
        pull_batch_size: messages asked per pull.
        pull_timeout_s: timeout of one pull, seconds.
        pull_concurrency: pulls kept in flight per task.
        fail_on_data_loss: raise :class:`DataLossError` (``True``) or skip lost messages.
        columns: the columns each batch keeps, in order (``None`` = all of :data:`~rocketpipe.spark.decode.ARROW_SCHEMA`).
        connection: ACL credentials and TLS settings of the clients (not used by a
            ``client_factory`` client); its ``repr`` hides the secrets.
        tags: a pushed ``tags = / IN`` filter (:mod:`rocketpipe.spark.pushdown`): the pulls carry
            this tag subscription (a ``client_factory`` client pulls everything) and only rows
            whose tag is one of these are returned; ``None``: every row.
    """

    name_server: str
    client_factory: str | None
    pull_batch_size: int
    pull_timeout_s: float
    pull_concurrency: int
    fail_on_data_loss: bool
    columns: tuple[str, ...] | None = None
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    tags: frozenset[str] | None = None

    @classmethod
    def from_options(cls, options: SourceOptions) -> ClientSpec:
        """Take the executor-side settings from the source options."""
        return cls(
            options.name_server,
            options.client_factory,
            options.pull_batch_size,
            options.pull_timeout_s,
            options.pull_concurrency,
            options.fail_on_data_loss,
            options.columns,
            options.connection,
        )


def make_admin(spec: ClientSpec) -> AdminClient:
    """Create the admin client named by ``spec`` (``SyncAdmin`` unless a factory is given).

    Raises:
        InvalidArgumentError: the client factory cannot be imported.
    """
    if spec.client_factory:
        module, _, attr = spec.client_factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise InvalidArgumentError(f"clientFactory {spec.client_factory!r} cannot be loaded: {exc}") from None
        client: AdminClient = factory(spec.name_server)
        return client
    from ..client import SyncAdmin

    admin: AdminClient = SyncAdmin(config=spec.connection.client_config(spec.name_server))
    return admin


def _close_quietly(admin: AdminClient | None) -> None:
    if admin is None:
        return
    try:
        admin.close()
    except Exception:
        log.debug("closing the admin client failed", exc_info=True)


@dataclass(frozen=True)
class RocketMQInputPartition(InputPartition):
    """One Spark task's work: queue ranges to read plus how to reach the cluster.

    Attributes:
        index: partition number within the batch.
        ranges: ``[start, end)`` ranges, possibly of several queues.
        client: connection and pull settings.
    """

    index: int
    ranges: tuple[QueueRange, ...]
    client: ClientSpec


# ---------------------------------------------------------------------------------------------
# Executor side


def _lost(spec: ClientSpec, rng: QueueRange, lo: int, hi: int, why: str) -> None:
    """Report messages ``[lo, hi)`` of ``rng``'s queue as lost (raise or log)."""
    if hi <= lo:
        return
    if rng.from_earliest:
        log.info("queue %s:%s/%d starts at %d; skipping [%d, %d)", rng.topic, rng.broker_name, rng.queue_id, hi, lo, hi)
        return
    text = (
        f"messages [{lo}, {hi}) of topic {rng.topic} queue {rng.broker_name}:{rng.queue_id} are no longer available "
        f"({why}); set option failOnDataLoss=false to skip lost messages"
    )
    if spec.fail_on_data_loss:
        raise DataLossError(text)
    log.warning("data loss: %s", text)


class _Puller:
    """Issues pull requests, inline or on a thread pool (the admin client is thread-safe).

    Used with a ``clientFactory`` client, which only has ``SyncAdmin``'s blocking methods;
    the default client is :class:`_LoopPuller`.
    """

    def __init__(self, admin: AdminClient, spec: ClientSpec, pool: ThreadPoolExecutor | None) -> None:
        self._admin = admin
        self._timeout = spec.pull_timeout_s
        self._pool = pool
        self.concurrency = spec.pull_concurrency if pool is not None else 1

    def submit(self, mq: MessageQueue, offset: int, n: int) -> Future[Any]:
        if self._pool is not None:
            return self._pool.submit(self._admin.pull_raw, mq, offset, n, timeout=self._timeout)
        fut: Future[Any] = Future()
        try:
            fut.set_result(self._admin.pull_raw(mq, offset, n, timeout=self._timeout))
        except Exception as exc:
            fut.set_exception(exc)
        return fut

    def close(self) -> None:
        """Stop the pool (pulls not started are dropped) and close the client."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        _close_quietly(self._admin)


class _LoopPuller:
    """Issues pull requests as coroutines of an async ``Admin`` on a private event-loop thread.

    A pull in flight is a task on that loop, not a pool thread blocked on it: each answer wakes
    the reading thread once, and cancelling the returned future cancels the pull. Connections
    open on the first pull and close in :meth:`close`; nothing here is pickled.

    Raises:
        InvalidArgumentError: the name-server address is empty.
    """

    def __init__(self, spec: ClientSpec) -> None:
        from ..client import Admin
        from ..eventloop import new_event_loop

        self._timeout = spec.pull_timeout_s
        self.concurrency = spec.pull_concurrency
        self._subscription = None if spec.tags is None else tag_expression(spec.tags)
        self._pulls: set[asyncio.Task[Any]] = set()  # touched on the loop thread only
        self._loop = loop = new_event_loop()
        self._thread = threading.Thread(target=self._run, name="rocketmq-pull-loop", daemon=True)
        self._thread.start()

        config = spec.connection.client_config(spec.name_server)

        async def make() -> Admin:
            return Admin(config=config)

        try:
            self._admin = asyncio.run_coroutine_threadsafe(make(), loop).result()
        except BaseException:
            self._stop()
            raise

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, mq: MessageQueue, offset: int, n: int) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(self._pull(mq, offset, n), self._loop)

    async def _pull(self, mq: MessageQueue, offset: int, n: int) -> Any:
        task = asyncio.current_task()
        assert task is not None
        self._pulls.add(task)
        try:
            if self._subscription is None:
                return await self._admin.pull_raw(mq, offset, n, timeout=self._timeout)
            return await _pull_by_tags(self._admin, mq, offset, n, self._subscription, self._timeout)
        finally:
            self._pulls.discard(task)

    async def _shutdown(self) -> None:
        """Cancel the pulls still running, then close the client's connections."""
        pulls = list(self._pulls)
        for t in pulls:
            t.cancel()
        await asyncio.gather(*pulls, return_exceptions=True)
        await self._admin.close()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def close(self) -> None:
        """Cancel what is in flight, close the connections, then stop and close the loop."""
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(self._timeout)
        except Exception:
            log.debug("closing the pull client failed", exc_info=True)
        finally:
            self._stop()


async def _pull_by_tags(admin: Any, mq: MessageQueue, offset: int, n: int, subscription: str, timeout: float) -> Any:
    """``Admin.pull_raw`` with a TAG subscription instead of ``*``: PULL_MESSAGE (11) as group
    ``TOOLS_CONSUMER``, no suspend, no offset commit, ``subscription`` (``"a||b"``) with
    FLAG_SUBSCRIPTION, to the queue's master (``timeout`` in seconds). The broker hands out only
    the messages whose tags hash code matches, scanning past the others, and answers
    ``next_begin_offset`` after the scanned entries.

    Uses ``client.rpc`` until ``Admin.pull_raw`` takes a subscription.

    Raises:
        BrokerError / TransportError / RocketMQError: as ``Admin.pull_raw``.
    """
    from ..client import rpc
    from ..client.admin import TOOLS_CONSUMER_GROUP
    from ..protocol.sysflag import build_pull_sys_flag

    runtime = admin.runtime
    addr = await runtime.find_master_addr(mq.broker_name, mq.topic)
    return await rpc.pull_message(
        runtime.pool,
        addr,
        consumer_group=TOOLS_CONSUMER_GROUP,
        mq=mq,
        queue_offset=offset,
        max_msg_nums=n,
        sys_flag=build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True),
        commit_offset=0,
        suspend_timeout=0.0,
        subscription=subscription,
        sub_version=0,
        expression_type="TAG",
        timeout=timeout,
    )


def open_puller(spec: ClientSpec) -> _Puller | _LoopPuller:
    """The executor's pull issuer: :class:`_LoopPuller` over rocketpipe's async ``Admin``, or a
    :class:`_Puller` (thread pool when ``pull_concurrency > 1``) over a ``clientFactory`` client.

    Raises:
        InvalidArgumentError: the client factory cannot be imported.
    """
    if not spec.client_factory:
        return _LoopPuller(spec)
    admin = make_admin(spec)
    pool = (
        ThreadPoolExecutor(spec.pull_concurrency, thread_name_prefix="rocketmq-pull")
        if spec.pull_concurrency > 1
        else None
    )
    return _Puller(admin, spec, pool)


class _StepHints:
    """What a partition's reads learned about the broker's per-pull cap, shared by its ranges.

    ``steps[topic]`` is the window size to ask for: the count a capped (short) answer returned,
    or ``pull_batch_size`` after a full answer to a full-size pull. A range that finds a hint
    opens its whole pull window at once instead of first learning the cap with a single pull.
    """

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}


class _RangeRead:
    """State of one range's read: the pull window, the cursor and undecoded bodies.

    Offsets are queue offsets (messages). ``cursor``: every message below it is read or
    reported lost; ``next_issue``: where the next new pull starts; ``inflight``: ``(offset,
    count, future)`` of the pulls issued, oldest first; ``pending``: pull bodies not decoded yet
    (``pending_rows`` messages, ``pending_bytes`` bytes).
    """

    def __init__(
        self, rng: QueueRange, spec: ClientSpec, puller: _Puller | _LoopPuller, hints: _StepHints | None = None
    ) -> None:
        self.rng = rng
        self.spec = spec
        self.puller = puller
        self.mq = rng.message_queue
        self.hints = hints or _StepHints()
        self.inflight: deque[tuple[int, int, Future[Any]]] = deque()
        hint = self.hints.steps.get(rng.topic)
        self.learned = hint is not None  # step = what the broker returns per pull
        self.guessed = hint is not None  # step taken from another range, not yet confirmed here
        self.step = min(hint or spec.pull_batch_size, spec.pull_batch_size, rng.size)
        self.next_issue = self.cursor = rng.start
        self.pending: list[bytes] = []
        self.pending_rows = self.pending_bytes = 0
        self.empty_pulls = 0
        #: pulls filtered by tags: offsets without a matching message are skipped (not lost), one
        #: pull at a time, each from where the previous one's scan ended (``next_begin_offset``)
        self.filtered = spec.tags is not None

    @property
    def issued_all(self) -> bool:
        """Every offset of the range has been asked for (or the range is done)."""
        return max(self.next_issue, self.cursor) >= self.rng.end

    def push_front(self, off: int, n: int) -> None:
        """Pull ``[off, off + n)`` next (a remainder of the window just answered)."""
        self.inflight.appendleft((off, n, self.puller.submit(self.mq, off, n)))

    def push_remainder(self, off: int, n: int) -> None:
        """Pull the remainder ``[off, off + n)`` of a short answer next, cut into step-sized
        windows (while the window has room; the last one takes the rest) so that a capped
        first answer does not turn the rest of its window into one round trip after another."""
        room = max(1, self.puller.concurrency - len(self.inflight))
        cuts = [off + i * self.step for i in range(min(room, -(-n // self.step)))] + [off + n]
        pulls = [(lo, hi - lo, self.puller.submit(self.mq, lo, hi - lo)) for lo, hi in pairwise(cuts)]
        self.inflight.extendleft(reversed(pulls))

    def fill(self, budget: int | None = None) -> int:
        """Issue new pulls up to the concurrency (one until the step is learned), the range end
        and ``budget`` new pulls; return how many were issued."""
        limit = self.puller.concurrency if self.learned and not self.filtered else 1
        if budget is not None:
            limit = min(limit, len(self.inflight) + budget)
        end = self.rng.end
        self.next_issue = max(self.next_issue, self.cursor)
        issued = 0
        while len(self.inflight) < limit and self.next_issue < end:
            n = min(self.step, end - self.next_issue)
            self.inflight.append((self.next_issue, n, self.puller.submit(self.mq, self.next_issue, n)))
            self.next_issue += n
            issued += 1
        return issued

    def behind(self, off: int, n: int) -> None:
        """A pull of ``[off, off + n)`` answered with ``off`` below the cursor (data loss skipped
        over it): drop it, or re-pull the part at and above the cursor."""
        if off + n > self.cursor:
            self.push_front(self.cursor, off + n - self.cursor)

    def on_result(self, off: int, n: int, res: Any) -> bool:
        """Handle the answer to the pull of ``[off, off + n)`` (``off`` = cursor); True = stop.

        Raises:
            DataLossError: see :func:`_lost`.
            ProtocolError: the broker makes no progress.
        """
        status = getattr(res.status, "name", str(res.status))
        if status == "FOUND" and res.body:
            self._found(off, n, res)
            return False
        if status == "OFFSET_ILLEGAL":
            return self._offset_illegal(off, n, res)
        return self._nothing_found(off, n, res, status)  # NO_NEW_MSG, NO_MATCHED_MSG, or FOUND with an empty body

    def _learn(self, n: int, got: int) -> None:
        """Set the step from the first answer and share it with the partition's other ranges.

        ``got`` of the ``n`` messages asked for came back. Once learned, the step only grows
        (answers capped by bytes vary with message sizes); a step guessed from a hint is
        replaced by this range's first capped answer.
        """
        if self.guessed:
            self.guessed = False
            if got < n:
                self.step = max(1, got)
            return
        if self.learned:
            self.step = max(self.step, got)
            return
        self.step = max(1, got)
        self.learned = True
        if got < n:  # capped by the broker: its cap is the window to ask for
            self.hints.steps[self.rng.topic] = self.step
        elif n >= self.spec.pull_batch_size:  # a full-size pull came back whole
            self.hints.steps.setdefault(self.rng.topic, self.spec.pull_batch_size)

    def _found(self, off: int, n: int, res: Any) -> None:
        """Keep a FOUND body; learn the step; re-pull the rest of a short answer."""
        rng = self.rng
        self.empty_pulls = 0
        body = res.body
        if self.filtered:
            self._found_filtered(off, res)
            return
        (first,) = _QUEUE_OFFSET.unpack_from(body, 20)
        if first > off:
            _lost(self.spec, rng, off, min(first, rng.end), f"the broker returned offset {first} first")
        nxt = min(int(res.next_begin_offset), off + n)
        if nxt <= off:
            raise ProtocolError(f"pull of {self.mq} at {off} made no progress (next offset {res.next_begin_offset})")
        self._learn(n, nxt - off)
        self.pending.append(body)
        self.pending_rows += nxt - off
        self.pending_bytes += len(body)
        self.cursor = nxt
        if nxt < off + n:
            self.push_remainder(nxt, off + n - nxt)

    def _found_filtered(self, off: int, res: Any) -> None:
        """Keep the body of a tag-filtered pull at ``off`` and go on where the broker's scan
        ended: the offsets it skipped hold no matching message (not data loss).

        Raises:
            ProtocolError: the broker makes no progress.
        """
        nxt = int(res.next_begin_offset)
        if nxt <= off:
            raise ProtocolError(f"pull of {self.mq} at {off} made no progress (next offset {res.next_begin_offset})")
        self.pending.append(res.body)
        self.pending_rows += min(nxt, self.rng.end) - off
        self.pending_bytes += len(res.body)
        self.cursor = self.next_issue = nxt

    def _offset_illegal(self, off: int, n: int, res: Any) -> bool:
        """OFFSET_ILLEGAL: skip what fell below the queue's min offset; stop past its max."""
        rng = self.rng
        lo_q, hi_q = int(res.min_offset), int(res.max_offset)
        if off < lo_q:
            self.cursor = min(lo_q, rng.end)
            _lost(self.spec, rng, off, self.cursor, f"the queue's min offset is now {lo_q}")
            if self.cursor < off + n:
                self.push_front(self.cursor, off + n - self.cursor)
            return False
        if off >= hi_q:
            _lost(self.spec, rng, off, rng.end, f"the queue's max offset is now {hi_q}")
            return True
        raise ProtocolError(f"broker rejected offset {off} of {self.mq} within [{lo_q}, {hi_q})")

    def _nothing_found(self, off: int, n: int, res: Any, status: str) -> bool:
        """No messages: stop at the queue head, move past filtered-out entries, or retry."""
        nxt, hi_q = int(res.next_begin_offset), int(res.max_offset)
        if status == "NO_NEW_MSG" and off >= hi_q:
            _lost(self.spec, self.rng, off, self.rng.end, f"the queue's max offset is now {hi_q}")
            return True
        if self.filtered and nxt > off:  # no matching message in the scanned entries
            self.empty_pulls = 0
            self.cursor = self.next_issue = nxt
            return False
        if off < nxt < off + n:
            self.cursor = nxt
            self.push_front(nxt, off + n - nxt)
        elif nxt >= off + n:
            self.cursor = off + n
        else:
            self.empty_pulls += 1
            if self.empty_pulls > MAX_EMPTY_PULLS:
                raise ProtocolError(f"pull of {self.mq} at {off} keeps answering {status} below max offset {hi_q}")
            self.push_front(off, n)
        return False

    def batch_due(self) -> bool:
        """The pending bodies reach :data:`BATCH_TARGET_ROWS` or :data:`BATCH_TARGET_BYTES`."""
        return self.pending_rows >= BATCH_TARGET_ROWS or self.pending_bytes >= BATCH_TARGET_BYTES

    def take_batch(self) -> pa.RecordBatch:
        """Decode the pending bodies into one batch of the range's rows and start anew."""
        from .decode import decode_bodies_to_batch  # numpy/pyarrow.compute: executors only

        rng = self.rng
        batch = decode_bodies_to_batch(
            self.pending,
            broker_name=rng.broker_name,
            start_offset=rng.start,
            end_offset=rng.end,
            columns=self.spec.columns,
        )
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        # a pushed tags filter names the column, so the rows read have it
        return batch if self.spec.tags is None else _with_tags(batch, self.spec.tags)

    def cancel(self) -> None:
        """Drop the pulls still in flight (their answers are not needed)."""
        for _, _, fut in self.inflight:
            fut.cancel()
        self.inflight.clear()


def _with_tags(batch: pa.RecordBatch, tags: frozenset[str]) -> pa.RecordBatch:
    """The rows of ``batch`` whose ``tags`` is one of ``tags`` (null tags never match), as Java's
    ``PullAPIWrapper.processPullResult`` re-checks the tag strings after the broker's hash-code
    filter."""
    import pyarrow.compute as pc  # executors only

    from .decode import tag_set

    return batch.filter(pc.is_in(batch.column("tags"), value_set=tag_set(tags), skip_nulls=True))


def _top_up(reads: list[_RangeRead], i: int, limit: int) -> None:
    """Keep up to ``limit`` pulls in flight over ``reads[i:]``, in range order: once range ``i``
    has asked for all its offsets, the next ranges' first pulls start while its answers come in.

    Only ``reads[i]`` has answers consumed, so each later range that holds pulls holds at least
    one: at most ``limit`` ranges after ``i`` can hold any.
    """
    budget = limit - sum(len(r.inflight) for r in reads[i : i + limit + 1])
    for r in reads[i:]:
        if budget <= 0:
            return
        budget -= r.fill(budget)
        if not r.issued_all:
            return


def _read_ranges(reads: list[_RangeRead], limit: int) -> Iterator[pa.RecordBatch]:
    """Read ``reads`` one after the other (batches never mix ranges), pulls pipelined across them."""
    for i, r in enumerate(reads):
        _top_up(reads, i, limit)
        while r.inflight:
            off, n, fut = r.inflight.popleft()
            res = fut.result()
            if off < r.cursor:  # skipped over (data loss with failOnDataLoss=false)
                r.behind(off, n)
            elif r.on_result(off, n, res):
                break
            _top_up(reads, i, limit)
            if r.batch_due():
                yield r.take_batch()
        r.cancel()
        if r.pending:
            yield r.take_batch()


def read_range(
    admin: AdminClient, rng: QueueRange, spec: ClientSpec, puller: _Puller | None = None
) -> Iterator[pa.RecordBatch]:
    """Pull exactly ``[rng.start, rng.end)`` of one queue and yield Arrow batches in offset order.

    Up to ``pull_concurrency`` pulls are kept in flight: the first pull learns how many messages
    the broker returns per pull (brokers cap it), then windows of that size are requested ahead;
    the remainder of a short answer is requested next, cut into windows of that size. Stops at
    ``rng.end`` even when the queue holds more messages. The per-answer decisions are
    :class:`_RangeRead`'s.

    Raises:
        DataLossError: messages of the range are gone and ``failOnDataLoss`` is true.
        ProtocolError: a pull body is malformed or the broker makes no progress.
        RocketMQError: the pull itself failed (timeouts, broker errors).
    """
    if rng.start >= rng.end:
        return
    puller = puller or _Puller(admin, spec, None)
    yield from _read_ranges([_RangeRead(rng, spec, puller)], puller.concurrency)


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Read every range of ``partition`` with a client opened and closed here (executor side).

    The ranges are read in order with one pull window for the whole partition: the next range's
    first pulls start while the current one's last answers are outstanding, and the per-pull cap
    learned on one range is reused by the next ranges of the same topic.

    Raises:
        DataLossError, ProtocolError, RocketMQError: see :func:`read_range`.
    """
    if not isinstance(partition, RocketMQInputPartition) or not partition.ranges:
        return
    spec = partition.client
    puller = open_puller(spec)
    try:
        hints = _StepHints()
        reads = [_RangeRead(rng, spec, puller, hints) for rng in partition.ranges if rng.end > rng.start]
        yield from _read_ranges(reads, puller.concurrency)
    finally:
        puller.close()


def _monotonic_ms() -> float:
    """The monotonic clock in ms (the stream reader's trigger delay; replaced in tests)."""
    return time.monotonic() * 1000


def make_partitions(
    ranges: list[QueueRange], options: SourceOptions, tags: frozenset[str] | None = None
) -> list[RocketMQInputPartition]:
    """Group ranges into input partitions: Kafka's planning (one per queue range, split by
    ``minPartitions`` / ``maxRecordsPerPartition``) or, with ``numPartitions``, by row count;
    ``tags``: a pushed tag filter (:attr:`ClientSpec.tags`)."""
    if options.num_partitions is not None:
        groups = split_ranges(ranges, options.num_partitions)
    else:
        groups = kafka_ranges(ranges, options.min_partitions, options.max_records_per_partition)
    client = ClientSpec.from_options(options)
    if tags is not None:
        client = dataclasses.replace(client, tags=tags)
    return [RocketMQInputPartition(i, group, client) for i, group in enumerate(groups)]


# ---------------------------------------------------------------------------------------------
# Driver side


class _DriverClient:
    """Lazily created admin client plus the queue/offset look-ups the drivers need.

    Not picklable by design: owners drop it in ``__getstate__``.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._spec = ClientSpec.from_options(options)
        self._admin: AdminClient | None = None

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = make_admin(self._spec)
        return self._admin

    def close(self) -> None:
        admin, self._admin = self._admin, None
        _close_quietly(admin)

    def _retried(self, ask: Callable[[], T]) -> T:
        """``ask()``, tried again ``fetchOffset.numRetries`` times after a transport error (a
        stalled or restarting broker or name server), ``fetchOffset.retryIntervalMs`` apart, as
        Kafka's source retries its offset fetches; the last error is raised."""
        opts = self._options
        for attempt in range(opts.fetch_offset_num_retries + 1):
            try:
                return ask()
            except TransportError as exc:
                if attempt == opts.fetch_offset_num_retries:
                    raise
                log.warning(
                    "driver look-up failed (%s); try %d of %d in %d ms",
                    exc, attempt + 2, opts.fetch_offset_num_retries + 1, opts.fetch_offset_retry_interval_ms,
                )  # fmt: skip
                time.sleep(opts.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The broker's search by store time for ``mq`` (retried as :meth:`_retried`)."""
        return self._retried(lambda: self.admin().search_offset(mq, timestamp_ms))

    def _topics(self) -> tuple[str, ...]:
        """The topics to read: the options', or (``subscribePattern``) the name server's topics
        that match the pattern in full, system topics (``%RETRY%``, ``%DLQ%``, ``TBW102``,
        ``rmq_sys_``…) left out — asked again at every call, so new topics join the stream.

        Raises:
            SourceError: the name server cannot be reached.
        """
        opts = self._options
        if opts.topic_pattern is None:
            return opts.topics
        pattern = re.compile(opts.topic_pattern)
        try:
            listed = self._retried(lambda: self.admin().fetch_all_topic_list())
        except RocketMQError as exc:
            raise SourceError(
                f"cannot list the topics of name server {opts.name_server} for subscribePattern ({exc})"
            ) from exc
        return tuple(sorted(t for t in listed if pattern.fullmatch(t) and not is_system_topic(t)))

    def queues(self) -> list[MessageQueue]:
        """Readable queues of every topic (only the ``assign``-ed ones with that option), sorted.

        Raises:
            SourceError: a topic cannot be resolved; an assigned queue is not in its topic's
                route (names it).
        """
        out: list[MessageQueue] = []
        opts = self._options
        ns = opts.name_server
        for topic in self._topics():
            try:
                out.extend(self._retried(lambda: self.admin().topic_queues(topic)))  # noqa: B023
            except (TopicNotExistError, RouteNotFoundError) as exc:
                raise SourceError(
                    f"topic {topic!r} does not exist: name server {ns} has no route for it ({exc}); "
                    "create the topic or fix option topic"
                ) from exc
            except TransportError as exc:
                raise SourceError(
                    f"name server {ns} is unreachable ({exc}; {self._options.fetch_offset_num_retries + 1} tries, see "
                    "fetchOffset.numRetries); check option nameServer and that it is running"
                ) from exc
            except RocketMQError as exc:
                raise SourceError(f"cannot list the queues of topic {topic!r} via name server {ns}: {exc}") from exc
        if opts.assigned is not None:
            unknown = opts.assigned - set(out)
            if unknown:
                names = ", ".join(sorted(f"{q.topic} {queue_key(q)}" for q in unknown))
                raise SourceError(
                    f"option assign names queue(s) {names} that the route of their topic does not have (its queues: "
                    f"{', '.join(sorted(queue_key(q) for q in out))})"
                )
            out = [mq for mq in out if mq in opts.assigned]
        return sorted(set(out))

    def max_offsets(self, queues: list[MessageQueue]) -> Offsets:
        """Each queue's max offset.

        Raises:
            SourceError: a broker is unreachable or failed (names it).
        """
        return self._per_queue(queues, lambda mq: self.admin().max_offset(mq))

    def min_offsets(self, queues: list[MessageQueue]) -> Offsets:
        """Each queue's min offset. Raises as :meth:`max_offsets`."""
        return self._per_queue(queues, lambda mq: self.admin().min_offset(mq))

    def _per_queue(self, queues: list[MessageQueue], ask: Callable[[MessageQueue], int]) -> Offsets:
        out: Offsets = {}
        tries = self._options.fetch_offset_num_retries + 1
        for mq in queues:
            try:
                out[mq] = int(self._retried(lambda: ask(mq)))  # noqa: B023
            except TransportError as exc:
                raise SourceError(
                    f"broker {mq.broker_name} (queue {mq.queue_id} of {mq.topic}) is unreachable ({exc}; {tries} "
                    "tries, see fetchOffset.numRetries); check that the broker is running and reachable from the "
                    "Spark driver"
                ) from exc
            except RocketMQError as exc:
                raise SourceError(
                    f"broker {mq.broker_name} failed for queue {mq.queue_id} of {mq.topic}: {exc}"
                ) from exc
        return out

    def start_offsets(self, queues: list[MessageQueue], mins: Offsets, maxs: Offsets) -> Offsets:
        """Where a new batch read or query starts: by timestamp when asked (it wins, as in
        Kafka), else ``startingOffsets``, checked against the queues' bounds.

        Raises:
            DataLossError / InvalidArgumentError: as :func:`_check_start`; an unknown queue; a
                queue with no message at or after its timestamp (strategy ``error``).
        """
        opts = self._options
        if opts.starting_timestamps is not None:
            return resolve_timestamps(
                opts.starting_timestamps, queues, mins, maxs, self.search_offset,
                ending=False, no_match=opts.starting_timestamp_strategy,
            )  # fmt: skip
        start = resolve_offsets(opts.starting_offsets, queues, mins, maxs, default="earliest")
        return _check_start(start, mins, maxs, json_queues(opts.starting_offsets), opts.fail_on_data_loss)


def _check_start(
    start: Offsets,
    mins: Mapping[MessageQueue, int],
    maxs: Mapping[MessageQueue, int],
    explicit: set[MessageQueue],
    fail: bool,
) -> Offsets:
    """Validate explicit start offsets against the queue bounds (data loss below min)."""
    out = dict(start)
    for mq, off in start.items():
        if mq not in explicit:
            continue
        if off < mins[mq]:
            text = (
                f"startingOffsets asks for offset {off} of {mq.topic} {mq.broker_name}:{mq.queue_id} but its min offset "
                f"is {mins[mq]}; set failOnDataLoss=false to start at the min offset"
            )
            if fail:
                raise DataLossError(text)
            log.warning("data loss: %s", text)
            out[mq] = mins[mq]
        elif off > maxs[mq]:
            raise InvalidArgumentError(
                f"startingOffsets asks for offset {off} of {mq.topic} {mq.broker_name}:{mq.queue_id} beyond its max "
                f"offset {maxs[mq]}; use at most {maxs[mq]} or 'latest'"
            )
    return out


class RocketMQBatchReader(DataSourceReader):
    """Batch reader over ``[startingOffsets, endingOffsets)``.

    Args:
        options: validated source options.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> list[RocketMQInputPartition]:
        """Resolve offsets on the driver and plan partitions by row count.

        Raises:
            DataLossError: an explicit start is below a queue's min offset (failOnDataLoss).
            InvalidArgumentError: a start is beyond a queue's end.
            SourceError: a topic cannot be resolved.
        """
        opts = self._options
        client = _DriverClient(opts)
        try:
            queues = client.queues()
            mins, maxs = client.min_offsets(queues), client.max_offsets(queues)
            start = client.start_offsets(queues, mins, maxs)
            if opts.ending_timestamps is not None:
                end = resolve_timestamps(
                    opts.ending_timestamps, queues, mins, maxs, client.search_offset,
                    ending=True, option="endingOffsetsByTimestamp",
                )  # fmt: skip
            elif opts.ending_offsets is None:
                end = dict(maxs)
            else:
                end = resolve_offsets(opts.ending_offsets, queues, mins, maxs, default="latest", option="endingOffsets")
            self._check_ends(queues, start, end, maxs)
            queues, start, end = self._narrow(queues, start, end, client)
        finally:
            client.close()
        ranges = plan_ranges(start, end)
        log.info("batch read of %d rows in %d ranges", sum(r.size for r in ranges), len(ranges))
        return make_partitions(ranges, opts, self._tags())

    def _tags(self) -> frozenset[str] | None:
        """A tag filter to pull with (none here; :class:`RocketMQPushdownBatchReader`'s pushed one)."""
        return None

    def _narrow(
        self, queues: list[MessageQueue], start: Offsets, end: Offsets, client: _DriverClient
    ) -> tuple[list[MessageQueue], Offsets, Offsets]:
        """The queues and offsets to read of the planned ``[start, end)`` (all of them here;
        :class:`RocketMQPushdownBatchReader` applies pushed filters)."""
        return queues, start, end

    @staticmethod
    def _check_ends(queues: list[MessageQueue], start: Offsets, end: Offsets, maxs: Offsets) -> None:
        """Raise InvalidArgumentError for an end beyond a queue's max offset or before its start."""
        for mq in queues:
            if end[mq] > maxs[mq]:
                raise InvalidArgumentError(
                    f"endingOffsets asks for offset {end[mq]} of {mq.topic} {mq.broker_name}:{mq.queue_id} beyond its "
                    f"max offset {maxs[mq]}; use at most {maxs[mq]} or 'latest'"
                )
            if start[mq] > end[mq]:
                raise InvalidArgumentError(
                    f"start offset {start[mq]} is after end offset {end[mq]} for {mq.topic} "
                    f"{mq.broker_name}:{mq.queue_id}; fix startingOffsets/endingOffsets"
                )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Pull the partition's ranges (executor side); yields Arrow record batches."""
        return read_partition(partition)


class RocketMQPushdownBatchReader(RocketMQBatchReader):
    """:class:`RocketMQBatchReader` that takes the filters Spark pushes down (option
    ``pushFilters=true``; Spark ≥ 4.1 calls :meth:`pushFilters` only with
    ``spark.sql.python.filterPushdown.enabled=true`` and refuses a reader that has the method
    when that is off, hence a separate class).

    What is pushed and how: :mod:`rocketpipe.spark.pushdown`.
    """

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self._pushed = PushedFilters()

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters that narrow the pulls; return those Spark must still evaluate."""
        self._pushed, remaining = push_filters(filters)
        return remaining

    def _tags(self) -> frozenset[str] | None:
        return self._pushed.tags

    def _narrow(
        self, queues: list[MessageQueue], start: Offsets, end: Offsets, client: _DriverClient
    ) -> tuple[list[MessageQueue], Offsets, Offsets]:
        pushed = self._pushed
        if not pushed.described:
            return queues, start, end
        lo, hi = narrow(pushed, queues, start, end, client.search_offset)
        kept = [mq for mq in queues if mq in lo]
        before, after = sum(end[mq] - start[mq] for mq in queues), sum(hi[mq] - lo[mq] for mq in kept)
        log.info(
            "pushed filters %s: %d of %d queues, %d of %d messages to pull",
            "; ".join(pushed.described), len(kept), len(queues), after, before,
        )  # fmt: skip
        return kept, lo, hi


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader with admission control and ``Trigger.AvailableNow``.

    Queue handling between batches: a queue that appears later starts at offset 0 (its earliest
    message, without counting messages below its min offset as lost); a queue that disappears
    from the route keeps its offset in the checkpoint and resumes when it comes back.

    Args:
        options: validated source options.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._client: _DriverClient | None = None
        self._latest: Offsets | None = None
        self._target: Offsets | None = None
        self._now_ms: Callable[[], float] = _monotonic_ms
        self._last_trigger_ms: float | None = None
        #: Kafka's lag metrics of the last planned batch (offsets behind latest over the queues)
        self.last_lag: dict[str, float] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    def _driver(self) -> _DriverClient:
        if self._client is None:
            self._client = _DriverClient(self._options)
        return self._client

    def _heads(self) -> Offsets:
        client = self._driver()
        return client.max_offsets(client.queues())

    def initialOffset(self) -> dict[str, dict[str, int]]:
        """Resolve ``startingOffsets`` for a new query.

        Raises:
            DataLossError: an explicit start is below a queue's min offset (failOnDataLoss).
            InvalidArgumentError: an explicit start is beyond a queue's max offset.
            SourceError: a topic cannot be resolved.
        """
        client = self._driver()
        queues = client.queues()
        mins, maxs = client.min_offsets(queues), client.max_offsets(queues)
        return offsets_to_json(client.start_offsets(queues, mins, maxs))

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxOffsetsPerTrigger)``, or ``ReadAllAvailable`` without the option."""
        n = self._options.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the current heads: an AvailableNow query reads up to them and stops."""
        self._target = self._heads()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        """Return the end offset of the next micro-batch, honouring ``limit``.

        ``ReadMaxRows(n)`` shares ``n`` rows over the queues in proportion to their backlog;
        any other limit (``ReadAllAvailable`` included) reads everything up to the heads (or up
        to the AvailableNow target). With ``minOffsetsPerTrigger`` (or a ``ReadMinRows(n)``
        limit) a trigger with fewer new rows returns ``start`` (no batch) until
        ``maxTriggerDelay`` has passed since the last batch, as Kafka's source does; never
        under AvailableNow, which must not wait.

        Raises:
            DataLossError: a queue's head fell below the start offset (messages were lost or the
                topic was recreated) and failOnDataLoss is true.
        """
        begin = offsets_from_json(start)
        heads = dict(self._target) if self._target is not None else self._heads()
        self._latest = dict(heads)
        for mq, head in heads.items():
            off = begin.get(mq)
            if off is not None and head < off:
                text = (
                    f"the max offset of {mq.topic} {mq.broker_name}:{mq.queue_id} is {head}, below the checkpointed "
                    f"offset {off}: messages were lost or the topic was recreated; set failOnDataLoss=false to "
                    f"continue from {head}"
                )
                if self._options.fail_on_data_loss:
                    raise DataLossError(text)
                log.warning("data loss: %s", text)
                begin[mq] = head
        lim: Any = limit  # ReadMaxRows / ReadMinRows / ReadAllAvailable, told apart by name as Spark's own code does
        cls = type(lim).__name__
        available = sum(max(0, head - begin.get(mq, 0)) for mq, head in heads.items())
        min_rows = int(lim.min_rows) if cls == "ReadMinRows" else self._options.min_offsets_per_trigger
        if min_rows is not None and self._target is None and self._delay_batch(available, min_rows):
            return offsets_to_json(offsets_from_json(start))
        end = cap_offsets(begin, heads, int(lim.max_rows) if cls == "ReadMaxRows" else 2**62)
        self._report_lag(heads, end)
        return offsets_to_json(end)

    def _report_lag(self, heads: Offsets, end: Offsets) -> None:
        """Log how far the batch's end stays behind the queue heads — Kafka's source metrics
        ``minOffsetsBehindLatest`` / ``avgOffsetsBehindLatest`` / ``maxOffsetsBehindLatest``,
        which the Python streaming API cannot put into the query's progress — and keep them in
        :attr:`last_lag` (the heads themselves are in the progress, see
        :meth:`reportLatestOffset`)."""
        behind = [max(0, head - end.get(mq, 0)) for mq, head in heads.items()]
        if not behind:
            return
        self.last_lag = {
            "minOffsetsBehindLatest": min(behind),
            "avgOffsetsBehindLatest": sum(behind) / len(behind),
            "maxOffsetsBehindLatest": max(behind),
        }
        log.info(
            "rocketmq source lag over %d queues: min %d, avg %.1f, max %d offsets behind latest",
            len(behind), min(behind), sum(behind) / len(behind), max(behind),
        )  # fmt: skip

    def _delay_batch(self, available: int, min_rows: int) -> bool:
        """Kafka's ``delayBatch``: skip this trigger while fewer than ``min_rows`` new rows are
        available and less than ``maxTriggerDelay`` has passed since the last batch ran."""
        now = self._now_ms()
        last = self._last_trigger_ms
        if last is not None and now - last < self._options.max_trigger_delay_ms and available < min_rows:
            log.debug("trigger skipped: %d new rows < minOffsetsPerTrigger %d", available, min_rows)
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        """The queue heads seen by the last ``latestOffset`` call (shows lag in progress)."""
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[RocketMQInputPartition]:
        """Plan the batch ``[start, end)`` by row count (pure; replays give the same plan)."""
        ranges = plan_ranges(offsets_from_json(start), offsets_from_json(end))
        return make_partitions(ranges, self._options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Pull the partition's ranges (executor side); yields Arrow record batches."""
        return read_partition(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the progress (commits lag and may be lost)."""

    def stop(self) -> None:
        """Close the driver-side client (Spark may never call this; the client is abandonable)."""
        if self._client is not None:
            self._client.close()
            self._client = None
