"""Batch and streaming writers of the ``rocketmq`` Spark sink (L4 spark).

``df.write.format("rocketmq")`` and ``df.writeStream.format("rocketmq")`` send each row as one
RocketMQ message. The input contract mirrors Spark's Kafka sink:

================  =======================================  ==========================================
column            type                                     meaning
================  =======================================  ==========================================
``body``          binary or string (**required**)          the message body (strings as UTF-8); a null
                                                           or empty body fails the task
``topic``         string (optional)                        the row's topic; the ``topic`` *option*
                                                           overrides it (Kafka sink rule)
``tags``          string (optional)                        ``TAGS`` (one tag; null/empty = none)
``keys``          string or array<string> (optional)       ``KEYS`` (array elements joined by a space)
``properties``    map<string,string> (optional)            user properties; null values and RocketMQ
                                                           system names (``UNIQ_KEY``, ``TAGS``, ...)
                                                           are dropped
``queue_id``      tinyint/smallint/int/bigint (optional)   send to this queue; null = the producer
                                                           picks (round robin over writable queues)
``broker_name``   string (optional)                        with ``queue_id``: the queue's broker;
                                                           needed only when several brokers serve
                                                           the topic
================  =======================================  ==========================================

Kafka's sink columns are accepted under their names: ``value`` for ``body`` (when there is no
``body``), ``key`` (string or UTF-8 binary) for ``keys`` (when there is no ``keys``), and
``headers`` (``array<struct<key:string,value:binary>>``, values UTF-8) as user properties, under
a ``properties`` map that wins on equal names.

Other columns are ignored, so a DataFrame read with ``format("rocketmq")`` can be written back
(``msg_id``, offsets and timestamps are assigned anew). Schema problems raise
:class:`SinkSchemaError` when Spark plans the write (``save()`` / ``start()``), before any task.

Where code runs (``spark-python-datasource.md`` §1.5):

* **Driver** (planner process): ``RocketMQDataSource.writer`` / ``streamWriter`` validate the
  options and the schema into a :class:`ColumnPlan`; the writer object is pickled to executors.
  ``commit`` / ``abort`` run in yet another process on a *fresh* writer (for streams it is
  rebuilt for every commit): they hold no state; at-least-once they only log.
* **Executors**: ``write()`` opens a :class:`~rocketpipe.client.Producer` on a private event-loop
  thread, groups rows per (topic[, queue]) into ``SEND_BATCH_MESSAGE`` requests of at most
  ``batchSize`` messages / ``batchBytes`` encoded bytes (a message too big for a batch request
  is sent alone, zlib-compressed from 4 KiB like ``DefaultMQProducer``), keeps up to
  ``maxInFlight`` requests outstanding while it converts the next rows, waits for every answer
  and returns a :class:`RocketMQCommitMessage` with counts.

**Delivery is at-least-once by default.** A message is visible to consumers once its send succeeds; a task
or micro-batch that fails after some sends and is retried sends those rows again, and ``abort``
cannot take messages back. Streaming writes give every message a deterministic ``UNIQ_KEY``
(the client-side msgId) derived from (query id, batch id, partition id, row index)
(:func:`message_id_prefix`), so a replayed micro-batch re-sends the same msgIds and a consumer
can drop duplicates by msgId (provided the query's input partitioning is deterministic, as
for file, rate and rocketmq sources). Batch writes do the same from (a write id made once per
``save()`` on the driver, partition id, row index): a retried task re-sends the msgIds of its
first attempt, so its duplicates can be told apart.

**Exactly-once** (``deliveryGuarantee=exactly-once``, :mod:`rocketpipe.spark.transactional`):
tasks send every row as a transactional half message (one per request, ``HALF_CONCURRENCY``
outstanding) and return the halves in their commit message; a failed task rolls its own back.
The driver's ``commit`` ends them with acknowledged COMMITs (streams through the decision log of
``transactionLogDir``), ``abort`` with ROLLBACK: here ``commit`` / ``abort`` do I/O.

Imports: pyspark, pyarrow, :mod:`rocketpipe.client` (``Producer``: ``send_batch`` and, for an
explicit ``queue_id``, ``send(msg, queue=mq)`` / ``send_batch(msgs, queue=mq)``;
``client.routing.publish_queues`` to resolve the queue), :mod:`rocketpipe.protocol`,
:mod:`rocketpipe.errors` and :mod:`rocketpipe.spark.options`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, overload

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from ..client import MessageQueue, Producer, SendResult, SendStatus
from ..client.routing import publish_queues
from ..errors import InvalidArgumentError, RocketMQError
from ..eventloop import new_event_loop
from ..eventloop import run as eventloop_run
from ..protocol.message import (
    PROPERTY_KEYS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    SYSTEM_PROPERTY_NAMES,
    Message,
)
from .options import SinkOptionError, SinkOptions
from .transactional import DecisionLog, Half, SinkCommitError, end_halves, finish_batch, half_of, roll_back

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Rows handed to the sender at a time by the Row writer.
ROW_CHUNK: Final = 4096
#: Encoded size of a batch entry besides body and properties (total, magic, crc, flag, body
#: length: 4 bytes each; properties length: 2).
BATCH_ENTRY_OVERHEAD: Final = 22
#: Half messages outstanding per task with ``deliveryGuarantee=exactly-once`` (one per request).
HALF_CONCURRENCY: Final = 64
#: Local properties Spark sets on streaming tasks (MicroBatchExecution / StreamExecution).
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)


class SinkSchemaError(InvalidArgumentError):
    """The DataFrame written to ``format("rocketmq")`` lacks ``body`` or has a column of the wrong type."""


class SinkDataError(InvalidArgumentError):
    """A row cannot become a message (null/empty body, no topic, blank property, unknown queue)."""


class SinkError(RocketMQError):
    """Sending to the broker failed after the producer's retries (wraps the client error)."""


# ---------------------------------------------------------------------------------------------
# Planning (driver)


@dataclass(frozen=True, slots=True)
class ColumnPlan:
    """Positions of the sink's columns in the input schema (``None`` = column absent).

    Attributes:
        body: index of ``body``.
        topic, tags, keys, properties, queue_id, broker_name: indices of the optional columns.
        keys_is_array: ``keys`` is ``array<string>`` (else ``string``).
        width: number of input columns.
        keys_is_binary: the keys come from Kafka's ``key`` column as ``binary`` (UTF-8).
        headers: index of Kafka's ``headers`` column (``array<struct<key:string,value:binary>>``),
            whose entries become user properties (a ``properties`` map wins over them).
    """

    body: int
    topic: int | None
    tags: int | None
    keys: int | None
    keys_is_array: bool
    properties: int | None
    queue_id: int | None
    broker_name: int | None
    width: int
    keys_is_binary: bool = False
    headers: int | None = None

    @property
    def used(self) -> frozenset[int]:
        """Indices of the columns the sink reads (the others are never converted)."""
        cols = (
            self.body, self.topic, self.tags, self.keys, self.properties, self.queue_id, self.broker_name,
            self.headers,
        )  # fmt: skip
        return frozenset(i for i in cols if i is not None)


def _describe(dt: Any) -> str:
    return str(dt.simpleString())


def plan_columns(schema: StructType, options: SinkOptions) -> ColumnPlan:
    """Check the input schema against the sink's column contract (see the module docstring).

    Args:
        schema: the DataFrame's schema as Spark hands it to ``writer()``.
        options: the validated sink options (``topic`` decides whether a ``topic`` column is
            required).

    Returns:
        Where each column sits.

    Raises:
        SinkSchemaError: ``body`` is missing, or a known column has an unsupported type.
        SinkOptionError: there is neither a ``topic`` column nor a ``topic`` option.
    """
    index = {f.name: (i, f.dataType) for i, f in enumerate(schema.fields)}

    def col(name: str, allowed: tuple[type, ...], wanted: str) -> int | None:
        if name not in index:
            return None
        i, dt = index[name]
        if not isinstance(dt, allowed):
            raise SinkSchemaError(
                f"column {name} has type {_describe(dt)}; the rocketmq sink needs {wanted} — cast or rename it"
            )
        return i

    body_name = "body" if "body" in index else "value"  # Kafka's name
    if body_name not in index:
        names = ", ".join(index) or "none"
        raise SinkSchemaError(
            f"the rocketmq sink needs a 'body' column (or Kafka's 'value'; binary or string); the DataFrame has "
            f"columns {names} — e.g. df.selectExpr('CAST(payload AS BINARY) AS body', ...)"
        )
    body = col(body_name, (BinaryType, StringType), "binary or string")
    assert body is not None
    keys_is_array = keys_is_binary = False
    if "keys" in index or "key" not in index:
        keys = col("keys", (StringType, ArrayType), "string or array<string>")
    else:  # Kafka's key: one key, string or UTF-8 binary
        keys = col("key", (StringType, BinaryType), "string or binary (UTF-8)")
        keys_is_binary = isinstance(index["key"][1], BinaryType)
    if keys is not None and "keys" in index and isinstance(index["keys"][1], ArrayType):
        if not isinstance(index["keys"][1].elementType, StringType):
            raise SinkSchemaError(
                f"column keys has type {_describe(index['keys'][1])}; the rocketmq sink needs string or array<string>"
            )
        keys_is_array = True
    properties = col("properties", (MapType,), "map<string,string>")
    if properties is not None:
        mt: Any = index["properties"][1]  # a MapType (checked by col())
        if not (isinstance(mt.keyType, StringType) and isinstance(mt.valueType, StringType)):
            raise SinkSchemaError(
                f"column properties has type {_describe(mt)}; the rocketmq sink needs map<string,string> — "
                "e.g. transform_values(properties, (k, v) -> CAST(v AS STRING))"
            )
    headers = col("headers", (ArrayType,), "array<struct<key:string,value:binary>>")
    if headers is not None:
        ht: Any = index["headers"][1]  # an ArrayType (checked by col())
        et: Any = ht.elementType
        fields = {f.name: f.dataType for f in getattr(et, "fields", [])}
        if (
            set(fields) != {"key", "value"}
            or not isinstance(fields["key"], StringType)
            or not isinstance(fields["value"], BinaryType | StringType)
        ):
            raise SinkSchemaError(
                f"column headers has type {_describe(index['headers'][1])}; the rocketmq sink needs Kafka's "
                "array<struct<key:string,value:binary>>"
            )
    topic = col("topic", (StringType,), "string")
    if topic is None and options.topic is None:
        raise SinkOptionError(
            "the rocketmq sink needs a topic: pass .option('topic', 'TopicA') or add a string column 'topic'"
        )
    return ColumnPlan(
        body=body,
        topic=topic,
        tags=col("tags", (StringType,), "string"),
        keys=keys,
        keys_is_array=keys_is_array,
        properties=properties,
        queue_id=col("queue_id", _INTEGRAL, "an integer type (int or bigint)"),
        broker_name=col("broker_name", (StringType,), "string"),
        width=len(schema.fields),
        keys_is_binary=keys_is_binary,
        headers=headers,
    )


def message_id_prefix(query_id: str, batch_id: int, partition_id: int) -> str:
    """The first 20 hex digits of the deterministic msgIds of one streaming task.

    A message's ``UNIQ_KEY`` is this prefix plus its row index in the task as 12 hex digits
    (32 upper-case hex characters, the length of ``MessageClientIDSetter`` ids).

    Args:
        query_id: the streaming query's id (stable across restarts from a checkpoint).
        batch_id: the micro-batch id.
        partition_id: the Spark partition id of the task.
    """
    digest = hashlib.blake2b(f"{query_id}/{batch_id}/{partition_id}".encode(), digest_size=10).hexdigest()
    return digest.upper()


# ---------------------------------------------------------------------------------------------
# Commit messages


@dataclass
class RocketMQCommitMessage(WriterCommitMessage):
    """What one ``write()`` task sent (pickled to the driver's ``commit`` / ``abort``).

    Attributes:
        partition_id: Spark partition id of the task.
        batch_id: micro-batch id (streaming) or ``None`` (batch write).
        messages: messages sent and acknowledged by the broker.
        body_bytes: sum of their body sizes (uncompressed), bytes.
        requests: send requests issued (batch requests count once).
        not_ok: messages whose batch was stored with a status other than ``SEND_OK``
            (``FLUSH_DISK_TIMEOUT``, ``SLAVE_NOT_AVAILABLE``, ...; stored nevertheless).
        queues: ``"topic@broker:queueId"`` → ``(messages, first queue offset, end offset)``;
            the offsets are those the broker assigned, the end exclusive (exactly-once: the
            half topic's queue offsets).
        halves: exactly-once only: the half messages stored, for the driver to commit.
        query_id: the streaming query's id (streams), else None.
    """

    partition_id: int
    batch_id: int | None
    messages: int = 0
    body_bytes: int = 0
    requests: int = 0
    not_ok: int = 0
    queues: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    halves: list[Half] = field(default_factory=list)
    query_id: str | None = None


def _totals(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int, int]:
    """(tasks that succeeded, messages, failed tasks) over a commit/abort list."""
    ok = [m for m in messages if isinstance(m, RocketMQCommitMessage)]
    return len(ok), sum(m.messages for m in ok), sum(1 for m in messages if m is None)


# ---------------------------------------------------------------------------------------------
# Executor side


class _LoopThread:
    """A private asyncio loop on a daemon thread; the sender's producer lives on it."""

    def __init__(self) -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="rocketmq-sink", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        if not self._thread.is_alive():
            self.loop.close()


_Key = str | tuple[str, str | None, int]


def _row_values(
    plan: ColumnPlan, topic_option: str | None, n: int, columns: Sequence[Sequence[Any] | None]
) -> tuple[Sequence[Any], ...]:
    """The columns one chunk's rows are read from (once per chunk), ``n`` values each.

    Args:
        plan: column positions.
        topic_option: the ``topic`` option; it overrides a ``topic`` column (Kafka sink rule).
        n: rows in the chunk.
        columns: the chunk's columns (Python values; unused ones may be None).

    Returns:
        ``(body, topic, properties, tags, keys, queue_id, broker_name)``; an absent column is
        all nulls, ``array<string>`` keys come joined by a space (null/empty elements dropped;
        an empty result as ""); bodies and topics may still be null or empty.
    """
    nulls = [None] * n

    def col(i: int | None) -> Sequence[Any]:
        values = None if i is None else columns[i]
        return nulls if values is None else values

    keys = col(plan.keys)
    if plan.keys_is_array:
        keys = [" ".join([k for k in key if k]) if key else None for key in keys]
    elif plan.keys_is_binary:
        keys = [_text(k, "key", row) if k else None for row, k in enumerate(keys)]
    props = col(plan.properties)
    if plan.headers is not None:
        props = [_with_headers(h, p, row) for row, (h, p) in enumerate(zip(col(plan.headers), props, strict=True))]
    return (
        col(plan.body),
        [topic_option] * n if topic_option is not None else col(plan.topic),
        props,
        col(plan.tags),
        keys,
        col(plan.queue_id),
        col(plan.broker_name),
    )


def _text(value: Any, what: str, row: int) -> str:
    """``value`` (str or UTF-8 bytes) as text.

    Raises:
        SinkDataError: bytes that are not UTF-8.
    """
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode()
    except UnicodeDecodeError:
        raise SinkDataError(
            f"row {row} of the chunk: {what} is not UTF-8 text; RocketMQ keeps it as a string"
        ) from None


def _with_headers(headers: Any, properties: Any, row: int) -> Any:
    """Kafka ``headers`` (``{"key", "value"}`` structs; later duplicates win) merged under the
    row's ``properties`` map (which wins), as one mapping; null header values are dropped."""
    if not headers:
        return properties
    merged = {h["key"]: _text(h["value"], f"header {h['key']!r}", row) for h in headers if h["value"] is not None}
    if properties:
        merged.update(properties.items() if isinstance(properties, dict) else properties)
    return merged


def _add_user_properties(props: dict[str, str], entries: Any, row: int) -> int:
    """Copy one row's ``properties`` map into ``props``; return their encoded size, bytes.

    Null values and RocketMQ system names are dropped; each kept pair adds its UTF-8 name and
    value plus two separators (``\\x01``, ``\\x02``) to the batch entry.

    Args:
        props: the message's properties (filled here).
        entries: a dict, or ``(name, value)`` pairs (Arrow's map values).
        row: the row's index in the task (for the error message).

    Raises:
        SinkDataError: a blank name or value, or one containing ``\\x01``/``\\x02``.
    """
    size = 0
    system = SYSTEM_PROPERTY_NAMES
    for k, v in entries.items() if isinstance(entries, dict) else entries:
        if v is None or k in system:
            continue
        kv = k + v
        if "\x01" in kv or "\x02" in kv or not k.strip() or not v.strip():
            raise SinkDataError(
                f"row {row}: property {k!r}={v!r} is blank or contains \\x01/\\x02; "
                "RocketMQ property names and values must be non-blank text without those separators"
            )
        props[k] = v
        size += (len(kv) if kv.isascii() else len(kv.encode())) + 2
    return size


class PartitionSender:
    """Turns one task's rows into batched sends; not thread-safe (the task's thread only).

    Args:
        options: sink options.
        plan: column positions.
        id_prefix: 20 hex digits for deterministic msgIds (streaming), or ``None`` to let the
            producer assign random ones.
    """

    def __init__(self, options: SinkOptions, plan: ColumnPlan, id_prefix: str | None = None) -> None:
        self._opts = options
        self._plan = plan
        self._prefix = id_prefix
        self._rows = 0
        self._pending: dict[_Key, tuple[list[Message], list[int]]] = {}
        self._inflight: set[Future[tuple[list[SendResult], int, int]]] = set()
        self._queues: dict[tuple[str, str | None, int], MessageQueue] = {}
        self.stats = RocketMQCommitMessage(partition_id=0, batch_id=None)
        #: exactly-once: halves stored so far (appended on the loop thread, read after the sends)
        self._halves: list[Half] = []
        self._half_slots = asyncio.Semaphore(HALF_CONCURRENCY)
        self._io = _LoopThread()
        try:
            self._producer = self._io.submit(self._make_producer()).result(30)
        except BaseException:
            self._io.close()
            raise

    async def _make_producer(self) -> Producer:
        o = self._opts
        return Producer(
            o.producer_group,
            config=o.connection.client_config(o.name_server),
            send_msg_timeout=o.send_timeout_s,
            retry_times_when_send_failed=o.retries,
            max_message_size=o.max_message_size,
        )

    # ------------------------------------------------------------------ rows → messages

    def add_columns(self, n: int, columns: Sequence[Sequence[Any] | None]) -> None:
        """Convert ``n`` rows given column-wise (Python values) and queue their sends.

        Per chunk, :func:`_row_values` picks the used columns (absent ones as all nulls, array
        keys joined); per row, the body, topic and properties (:func:`_add_user_properties`
        for a non-empty ``properties`` map) become a :class:`Message` whose encoded batch-entry
        size (bytes) decides where it goes: the open batch of its destination, or
        :meth:`_add` (a new batch, or a message too big for one). Rows are handled in order, so
        a bad row fails after the rows before it were queued.

        Blocks while ``maxInFlight`` requests are outstanding.

        Raises:
            SinkDataError: a row has a null/empty body, no topic, a blank property, or names a
                queue the topic does not have.
            SinkError: an earlier send failed.
        """
        prefix = self._prefix
        batch_bytes, batch_size = self._opts.batch_bytes, self._opts.batch_size
        group_name = self._opts.producer_group if self._opts.exactly_once else None
        pending = self._pending
        bodies, topics, props_col, tags, keys, queue_col, broker_col = _row_values(
            self._plan, self._opts.topic, n, columns
        )
        base = self._rows
        # encoded batch entry: fixed part + body + properties (+ WAIT and UNIQ_KEY, 52 bytes)
        entry_base = BATCH_ENTRY_OVERHEAD + 52
        for i in range(n):
            body = bodies[i]
            if not body:
                raise SinkDataError(
                    f"row {base + i} of partition {self.stats.partition_id}: body is null or empty; RocketMQ messages "
                    "need a non-empty body — filter such rows out first (body IS NOT NULL AND length(body) > 0)"
                )
            if type(body) is not bytes:
                body = body.encode() if type(body) is str else bytes(body)
            topic = topics[i]
            if not topic:
                raise SinkDataError(
                    f"row {base + i} of partition {self.stats.partition_id}: topic column is null and there is no "
                    "topic option; fill the column or pass .option('topic', ...)"
                )
            props: dict[str, str] = {}
            size = entry_base + len(body)
            entries = props_col[i]
            if entries:
                size += _add_user_properties(props, entries, base + i)
            tag = tags[i]
            if tag:
                props[PROPERTY_TAGS] = tag
                size += (len(tag) if tag.isascii() else len(tag.encode())) + 6
            key = keys[i]
            if key:
                props[PROPERTY_KEYS] = key
                size += (len(key) if key.isascii() else len(key.encode())) + 6
            props[PROPERTY_WAIT_STORE_MSG_OK] = "true"
            if prefix is not None:
                props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = f"{prefix}{base + i:012X}"
            if group_name is not None:
                props[PROPERTY_TRANSACTION_PREPARED] = "true"
                props[PROPERTY_PRODUCER_GROUP] = group_name
            qid = queue_col[i]
            dest: _Key = topic if qid is None else (topic, broker_col[i], int(qid))
            msg = Message(topic, body, 0, props)
            group = pending.get(dest)
            if size > batch_bytes or group is None or group[1][0] + size > batch_bytes:
                self._add(dest, msg, size)  # a new batch, or a message too big for one
                continue
            group[0].append(msg)
            group[1][0] += size
            if len(group[0]) >= batch_size:
                self._flush(dest)
        self._rows += n

    def _add(self, dest: _Key, msg: Message, size: int) -> None:
        opts = self._opts
        if size > opts.batch_bytes:
            if len(msg.body) > opts.max_message_size:
                raise SinkDataError(
                    f"a message body of {len(msg.body)} bytes (topic {msg.topic}) exceeds maxMessageSize "
                    f"{opts.max_message_size}; split the payload or raise maxMessageSize (and the broker's)"
                )
            self._submit(dest, [msg], single=True)
            return
        pending = self._pending.get(dest)
        if pending is None:
            pending = self._pending[dest] = ([], [0])
        elif pending[1][0] + size > opts.batch_bytes:
            self._flush(dest)
            pending = self._pending[dest] = ([], [0])
        pending[0].append(msg)
        pending[1][0] += size
        if len(pending[0]) >= opts.batch_size:
            self._flush(dest)

    def _flush(self, dest: _Key) -> None:
        pending = self._pending.pop(dest, None)
        if pending and pending[0]:
            self._submit(dest, pending[0], single=False)

    # ------------------------------------------------------------------ sends

    def _submit(self, dest: _Key, msgs: list[Message], *, single: bool) -> None:
        for fut in [f for f in self._inflight if f.done()]:
            self._reap(fut)  # fail fast on an earlier error
        while len(self._inflight) >= self._opts.max_in_flight:
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            for fut in done:
                self._reap(fut)
        self._inflight.add(self._io.submit(self._send(dest, msgs, single)))

    def _reap(self, fut: Future[tuple[list[SendResult], int, int]]) -> None:
        self._inflight.discard(fut)
        results, count, nbytes = fut.result()  # raises SinkError / SinkDataError
        st = self.stats
        st.messages += count
        st.body_bytes += nbytes
        st.requests += len(results)
        each = 1 if len(results) > 1 else count  # halves go one per request
        for result in results:
            if result.send_status is not SendStatus.SEND_OK:
                st.not_ok += each
                log.warning(
                    "sink send stored with status=%s queue=%s messages=%d",
                    result.send_status.name,
                    result.message_queue,
                    each,
                )
            mq = result.message_queue
            name = f"{mq.topic}@{mq.broker_name}:{mq.queue_id}"
            first, end = result.queue_offset, result.queue_offset + each
            prev = st.queues.get(name)
            st.queues[name] = (
                (each, first, end) if prev is None else (prev[0] + each, min(prev[1], first), max(prev[2], end))
            )

    async def _send(self, dest: _Key, msgs: list[Message], single: bool) -> tuple[list[SendResult], int, int]:
        nbytes = sum(len(m.body) for m in msgs)
        topic = msgs[0].topic
        try:
            if self._opts.exactly_once:
                results = await self._send_halves(dest, msgs)
            else:
                results = [await self._send_plain(dest, msgs, single)]
        except SinkDataError:
            raise
        except InvalidArgumentError as exc:  # the producer refused the row(s): a data problem
            raise SinkDataError(f"{exc}; lower batchBytes / batchSize or fix the row") from exc
        except RocketMQError as exc:
            raise SinkError(
                f"sending {len(msgs)} message(s) to topic {topic!r} via name server {self._opts.name_server} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return results, len(msgs), nbytes

    async def _send_plain(self, dest: _Key, msgs: list[Message], single: bool) -> SendResult:
        if not isinstance(dest, str):
            return await self._send_to_queue(dest, msgs, single)
        p, timeout = self._producer, self._opts.send_timeout_s
        return await (p.send(msgs[0], timeout=timeout) if single else p.send_batch(msgs, timeout=timeout))

    async def _send_halves(self, dest: _Key, msgs: list[Message]) -> list[SendResult]:
        """Send ``msgs`` as half messages, one per request, ``HALF_CONCURRENCY`` at a time per task.

        Every stored half is recorded (for the commit, or the rollback of a failed task) before
        any failure is raised; a half stored with a status other than SEND_OK fails the task
        (Java's ``sendMessageInTransaction`` rolls such a half back).
        """

        async def one(msg: Message) -> SendResult:
            async with self._half_slots:
                result = await self._send_plain(dest, [msg], True)
            self._halves.append(half_of(result))
            if result.send_status is not SendStatus.SEND_OK:
                raise SinkError(
                    f"half message of topic {msg.topic!r} stored with {result.send_status.name} on "
                    f"{result.message_queue}; the task fails and rolls its halves back"
                )
            return result

        outcomes = await asyncio.gather(*(one(m) for m in msgs), return_exceptions=True)
        for o in outcomes:
            if isinstance(o, BaseException):
                raise o
        return outcomes  # type: ignore[return-value]

    async def _queue(self, dest: tuple[str, str | None, int]) -> MessageQueue:
        mq = self._queues.get(dest)
        if mq is not None:
            return mq
        topic, broker, qid = dest
        route = await self._producer.runtime.route(topic)
        queues = publish_queues(topic, route)
        found = [q for q in queues if q.queue_id == qid and (broker is None or q.broker_name == broker)]
        if not found:
            have = ", ".join(f"{q.broker_name}:{q.queue_id}" for q in queues) or "none"
            raise SinkDataError(
                f"topic {topic!r} has no writable queue {broker or '*'}:{qid} (writable queues: {have}); fix the "
                "queue_id/broker_name columns, or null queue_id to let the producer choose"
            )
        if len(found) > 1:
            raise SinkDataError(
                f"queue id {qid} of topic {topic!r} exists on brokers {', '.join(q.broker_name for q in found)}; "
                "add a broker_name column to pick one"
            )
        self._queues[dest] = found[0]
        return found[0]

    async def _send_to_queue(self, dest: tuple[str, str | None, int], msgs: list[Message], single: bool) -> SendResult:
        """Send to one queue (``DefaultMQProducer.send(msg|msgs, mq)``), retrying on that queue only."""
        mq = await self._queue(dest)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._opts.send_timeout_s
        attempt = 0
        while True:
            budget = max(0.001, deadline - loop.time())
            try:
                if single:
                    return await self._producer.send(msgs[0], queue=mq, timeout=budget)
                return await self._producer.send_batch(msgs, queue=mq, timeout=budget)
            except InvalidArgumentError:
                raise
            except RocketMQError as exc:
                attempt += 1
                if not getattr(exc, "retriable", False) or attempt > self._opts.retries or loop.time() >= deadline:
                    raise
                log.warning("sink send to %s failed, retrying attempt=%d err=%s", mq, attempt, exc)
                await asyncio.sleep(min(1.0, 0.1 * attempt, max(0.0, deadline - loop.time())))  # retry backoff

    def finish(self) -> RocketMQCommitMessage:
        """Send what is still batched, wait for every answer and return the task's counts.

        Raises:
            SinkError: a send failed.
        """
        for dest in list(self._pending):
            self._flush(dest)
        while self._inflight:
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            for fut in done:
                self._reap(fut)
        self.stats.halves = list(self._halves)
        return self.stats

    def roll_back(self) -> None:
        """Exactly-once: end the halves this task stored with ROLLBACK (a failed task; best
        effort, one log line with counts: a half left undecided stays invisible)."""
        if self._inflight:  # let stored halves be recorded; a send still open then is cancelled
            wait(self._inflight, timeout=self._opts.send_timeout_s)
        for fut in self._inflight:
            fut.cancel()
        self._inflight.clear()
        halves = list(self._halves)
        if not halves or self._io.loop.is_closed():
            return
        o = self._opts

        async def run() -> tuple[int, int]:
            from ..client import Admin

            res = await end_halves(
                Admin(runtime=self._producer.runtime), o.producer_group, halves, commit=False, timeout=o.send_timeout_s
            )
            return res.ended, len(res.failed)

        try:
            ended, failed = self._io.submit(run()).result(o.send_timeout_s * 2 + 5)
        except Exception as exc:  # best effort: the halves stay invisible
            ended, failed = 0, len(halves)
            log.warning("sink task rollback failed: %s", exc)
        log.warning(
            "sink task partition=%d failed: %d half messages rolled back, %d left undecided (invisible)",
            self.stats.partition_id,
            ended,
            failed,
        )

    def close(self) -> None:
        """Cancel outstanding sends, close the producer and stop the loop thread (idempotent)."""
        for fut in self._inflight:
            fut.cancel()
        self._inflight.clear()
        if self._io.loop.is_closed():
            return
        try:
            self._io.submit(self._producer.close()).result(15)
        except Exception:
            log.debug("closing the sink producer failed", exc_info=True)
        self._io.close()


def _task_identity(streaming: bool, write_id: str | None = None) -> tuple[int, int | None, str | None, str | None]:
    """(partition id, batch id, msgId prefix, query id) of the running task (executor side).

    A batch write's prefix comes from its ``write_id`` (made once on the driver, so every
    attempt of a task, which unpickles the same writer, sends the same msgIds); a stream's
    from the query id and micro-batch id.
    """
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None:
        return 0, None, None, None
    pid = int(tc.partitionId())
    if not streaming:
        return pid, None, message_id_prefix(write_id, -1, pid) if write_id else None, None
    batch, query = tc.getLocalProperty(BATCH_ID_PROPERTY), tc.getLocalProperty(QUERY_ID_PROPERTY)
    if batch is None:
        return pid, None, None, query
    return pid, int(batch), message_id_prefix(query or "", int(batch), pid) if query else None, query


def _arrow_chunks(batches: Iterator[pa.RecordBatch], plan: ColumnPlan) -> Iterator[tuple[int, list[list[Any] | None]]]:
    used = plan.used
    for batch in batches:
        yield batch.num_rows, [batch.column(i).to_pylist() if i in used else None for i in range(batch.num_columns)]


def _row_chunks(rows: Iterator[Any], plan: ColumnPlan) -> Iterator[tuple[int, list[list[Any] | None]]]:
    used = plan.used
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= ROW_CHUNK:
            yield len(chunk), [[r[i] for r in chunk] if i in used else None for i in range(plan.width)]
            chunk = []
    if chunk:
        yield len(chunk), [[r[i] for r in chunk] if i in used else None for i in range(plan.width)]


class _SinkWriter:
    """What every writer variant shares: options, column plan and the ``write`` body."""

    _streaming: bool = False

    def __init__(self, options: SinkOptions, plan: ColumnPlan) -> None:
        self._options = options
        self._plan = plan
        #: one id per batch write, made on the driver: the msgIds' prefix source
        self.write_id = uuid.uuid4().hex

    def _write(self, chunks: Iterator[tuple[int, list[list[Any] | None]]]) -> RocketMQCommitMessage:
        pid, batch_id, prefix, query_id = _task_identity(self._streaming, self.write_id)
        sender = PartitionSender(self._options, self._plan, prefix)
        st = sender.stats
        st.partition_id, st.batch_id, st.query_id = pid, batch_id, query_id
        try:
            for n, columns in chunks:
                sender.add_columns(n, columns)
            stats = sender.finish()
        except BaseException:
            if self._options.exactly_once:
                sender.roll_back()
            raise
        finally:
            sender.close()
        log.info(
            "sink task partition=%d batch=%s messages=%d requests=%d", pid, batch_id, stats.messages, stats.requests
        )
        return stats

    def _halves(self, messages: Sequence[WriterCommitMessage | None]) -> list[Half]:
        return [h for m in messages if isinstance(m, RocketMQCommitMessage) for h in m.halves]

    def _finish(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
        """Exactly-once commit on the driver (:func:`~rocketpipe.spark.transactional.finish_batch`).

        Raises:
            SinkCommitError: some halves were not committed, or the decision log failed.
        """
        o = self._options
        decisions = None
        if batch_id is not None:
            query_ids = {m.query_id for m in messages if isinstance(m, RocketMQCommitMessage) and m.query_id}
            if len(query_ids) > 1:
                raise SinkCommitError(f"micro-batch {batch_id} has tasks of several queries: {sorted(query_ids)}")
            if query_ids and o.transaction_log_dir:
                decisions = DecisionLog(o.transaction_log_dir, query_ids.pop())
        out = eventloop_run(
            finish_batch(
                o.connection.client_config(o.name_server),
                o.producer_group,
                self._halves(messages),
                timeout=o.send_timeout_s,
                decisions=decisions,
                batch_id=batch_id,
            )
        )
        what = "write" if batch_id is None else f"batch {batch_id}"
        log.info(
            "rocketmq sink %s committed exactly-once: %d half messages committed%s",
            what,
            out.committed,
            f" (replay: {out.already_visible} were already committed, {out.rolled_back} of the replay's rolled back)"
            if out.replay
            else "",
        )

    def _roll_back(self, messages: Sequence[WriterCommitMessage | None], what: str) -> None:
        """Exactly-once abort on the driver: ROLLBACK every half the tasks reported (best effort)."""
        o = self._options
        halves = self._halves(messages)
        try:
            res = eventloop_run(
                roll_back(o.connection.client_config(o.name_server), o.producer_group, halves, timeout=o.send_timeout_s)
            )
            ended, failed = res.ended, len(res.failed)
        except Exception as exc:  # best effort: undecided halves stay invisible
            ended, failed = 0, len(halves)
            log.warning("rocketmq sink %s rollback failed: %s", what, exc)
        log.warning(
            "rocketmq sink %s aborted exactly-once: %d half messages rolled back, %d left undecided (invisible)",
            what,
            ended,
            failed,
        )


class _BatchCommit(_SinkWriter):
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """At-least-once: log the totals (every message is already stored). Exactly-once:
        commit every half the tasks stored; raises :class:`SinkCommitError` when some could not
        be committed."""
        if self._options.exactly_once:
            self._finish(messages, None)
            return
        tasks, sent, _ = _totals(messages)
        log.info("rocketmq sink write committed: %d messages from %d tasks", sent, tasks)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """At-least-once: log what was already delivered (sent messages cannot be taken back).
        Exactly-once: roll back every half the tasks reported."""
        if self._options.exactly_once:
            self._roll_back(messages, "write")
            return
        tasks, sent, failed = _totals(messages)
        log.warning(
            "rocketmq sink write aborted: %d messages from %d tasks were delivered already; %d tasks failed",
            sent,
            tasks,
            failed,
        )


class _StreamCommit(_SinkWriter):
    _streaming = True

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: log the micro-batch's totals (runs on a fresh writer in Spark's sink
        runner; no state, no I/O). Exactly-once: finish the batch through the decision log
        (:func:`~rocketpipe.spark.transactional.finish_batch`); raises :class:`SinkCommitError`
        when some halves could not be committed, so the batch is not recorded and is replayed."""
        if self._options.exactly_once:
            self._finish(messages, batchId)
            return
        tasks, sent, _ = _totals(messages)
        log.info("rocketmq sink batch %d committed: %d messages from %d tasks", batchId, sent, tasks)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: log what was already delivered (the replayed batch re-sends with the
        same msgIds). Exactly-once: roll back the halves the tasks reported."""
        if self._options.exactly_once:
            self._roll_back(messages, f"batch {batchId}")
            return
        tasks, sent, failed = _totals(messages)
        log.warning(
            "rocketmq sink batch %d aborted: %d messages from %d tasks delivered already; %d tasks failed",
            batchId,
            sent,
            tasks,
            failed,
        )


class RocketMQArrowWriter(_BatchCommit, DataSourceArrowWriter):
    """Batch sink writer fed Arrow record batches (``df.write.format("rocketmq")``; the default).

    Args:
        options: validated sink options.
        plan: column positions from :func:`plan_columns`.
    """

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RocketMQCommitMessage:
        """Send every row of this task's record batches (executor side).

        Raises:
            SinkDataError: a row cannot become a message.
            SinkError: a send failed after the producer's retries.
        """
        return self._write(_arrow_chunks(iterator, self._plan))


class RocketMQRowWriter(_BatchCommit, DataSourceWriter):
    """Batch sink writer fed ``Row`` objects (``writerInput=rows``; slower than Arrow)."""

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        """Send every row of this task (executor side); raises as :meth:`RocketMQArrowWriter.write`."""
        return self._write(_row_chunks(iterator, self._plan))


class RocketMQStreamArrowWriter(_StreamCommit, DataSourceStreamArrowWriter):
    """Streaming sink writer fed Arrow record batches (``df.writeStream.format("rocketmq")``; the default).

    Messages get deterministic msgIds (:func:`message_id_prefix`), so a replayed micro-batch
    re-sends the same ids.
    """

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RocketMQCommitMessage:
        """Send this task's share of the micro-batch; raises as :meth:`RocketMQArrowWriter.write`."""
        return self._write(_arrow_chunks(iterator, self._plan))


class RocketMQStreamRowWriter(_StreamCommit, DataSourceStreamWriter):
    """Streaming sink writer fed ``Row`` objects (``writerInput=rows``)."""

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        """Send this task's share of the micro-batch; raises as :meth:`RocketMQArrowWriter.write`."""
        return self._write(_row_chunks(iterator, self._plan))


@overload
def make_writer(
    options: SinkOptions, schema: StructType, *, overwrite: bool, streaming: Literal[False]
) -> DataSourceWriter: ...
@overload
def make_writer(
    options: SinkOptions, schema: StructType, *, overwrite: bool, streaming: Literal[True]
) -> DataSourceStreamWriter: ...
def make_writer(
    options: SinkOptions, schema: StructType, *, overwrite: bool, streaming: bool
) -> DataSourceWriter | DataSourceStreamWriter:
    """Validate ``schema`` and build the writer variant ``options.writer_input`` asks for (driver).

    Raises:
        SinkSchemaError / SinkOptionError: see :func:`plan_columns`; also ``mode("overwrite")``
            on a batch write (messages cannot be deleted from a topic).
    """
    if overwrite and not streaming:
        raise SinkOptionError(
            "the rocketmq sink cannot overwrite a topic (messages are append-only); use .mode('append')"
        )
    plan = plan_columns(schema, options)
    if streaming and options.exactly_once and not options.transaction_log_dir:
        raise SinkOptionError(
            "deliveryGuarantee=exactly-once on a stream needs option transactionLogDir: a directory where the "
            "driver logs its commit decisions, readable again after a restart (e.g. next to checkpointLocation)"
        )
    arrow = options.writer_input == "arrow"
    if streaming:
        return RocketMQStreamArrowWriter(options, plan) if arrow else RocketMQStreamRowWriter(options, plan)
    return RocketMQArrowWriter(options, plan) if arrow else RocketMQRowWriter(options, plan)
