"""Value types of the store API (L2; stdlib only).

Mirrors ``MessageExtBrokerInner``, ``PutMessageResult``/``PutMessageStatus`` and
``GetMessageResult``/``GetMessageStatus`` of ``org.apache.rocketmq.store``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


class PutStatus(enum.Enum):
    """Outcome of a put (``PutMessageStatus``)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetStatus(enum.Enum):
    """Outcome of a read (``GetMessageStatus``); see the reference's §2.8 table."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class MessageInner:
    """A message handed to the store by the broker (``MessageExtBrokerInner``).

    Attributes:
        topic: topic name (at most 127 UTF-8 bytes; 255 for ``%RETRY%``/``%DLQ%`` topics).
        queue_id: queue inside the topic.
        body: stored body bytes (already compressed when sys_flag says so).
        flag: user flag.
        properties: the properties as a dict, or the wire properties string as received
            (``name\\x01value\\x02…``; passing the string avoids a re-encode).
        sys_flag: ``MessageSysFlag`` bits (host v6 bits are recomputed from the hosts).
        born_timestamp: producer time, ms since epoch.
        born_host: producer ``"ip:port"``.
        store_host: this broker's ``"ip:port"`` (part of the offsetMsgId).
        reconsume_times: delivery retries so far.
        prepared_transaction_offset: commit-log offset of the half message, or 0.
        tags_code: consume-queue tags code; None = ``tag_code(TAGS)``, or for
            ``SCHEDULE_TOPIC_XXXX`` the delivery time (store time + delay of the ``DELAY`` level).
    """

    topic: str
    queue_id: int
    body: bytes
    flag: int = 0
    properties: dict[str, str] | str = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    store_host: str = "127.0.0.1:0"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int | None = None

    def get_property(self, key: str) -> str | None:
        """One property (None when absent or empty), from the dict or the wire string alike."""
        return property_value(self.properties, key)


@dataclass(slots=True)
class MessageBatch:
    """A client's batch for one queue, its messages still in the wire batch body (``MessageExtBatch``).

    Attributes:
        topic, queue_id: where every message goes.
        body: the ``SEND_BATCH_MESSAGE`` body: per message TOTALSIZE, MAGICCODE, BODYCRC, FLAG,
            BODYLENGTH, BODY, PROPERTIESLENGTH (2 bytes), PROPERTIES.
        properties: the batch's own wire properties string, appended to every message's
            (``MessageExtBatch.getProperties``; the broker's MSG_REGION, TRACE_ON, CLUSTER).
        wait: the envelope's ``WAIT``, stored for a message that lacks one; None = none.
        next_unique_id: makes a ``UNIQ_KEY`` for a message that lacks one.
        sys_flag, born_timestamp (ms), born_host, store_host, reconsume_times: as :class:`MessageInner`,
            shared by every message.
    """

    topic: str
    queue_id: int
    body: bytes
    properties: str
    wait: str | None
    next_unique_id: Callable[[], str]
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    store_host: str = "127.0.0.1:0"
    reconsume_times: int = 0


def property_value(props: dict[str, str] | str, key: str) -> str | None:
    """One property of a dict or of a wire properties string, without parsing the whole string.

    For a string, the last ``key\\x01value`` pair wins and an empty value is None, as Java's
    ``MessageDecoder.string2messageProperties`` reads it.
    """
    if not isinstance(props, str):
        return props.get(key)
    needle = key + "\x01"
    i = props.rfind(needle)
    while i > 0 and props[i - 1] != "\x02":
        i = props.rfind(needle, 0, i)
    if i < 0:
        return None
    start = i + len(needle)
    j = props.find("\x02", start)
    return props[start : j if j >= 0 else len(props)] or None


@dataclass(slots=True)
class PutResult:
    """Result of a put (``PutMessageResult`` + ``AppendMessageResult``).

    Attributes:
        status: outcome.
        wrote_offset: commit-log offset of the first record, bytes (-1 when nothing was written).
        wrote_bytes: bytes appended (all records of a batch).
        msg_ids: offsetMsgId of each record, in order.
        queue_offset: consume-queue offset of the first message (0 for prepared transactions).
        msg_num: records written.
        store_timestamp: store time of the records, ms.
        tags_codes: consume-queue tags code of each record of a :meth:`MessageStore.put_batch`
            (None for other puts).
        remark: why a put was refused, when the status alone does not say (a malformed batch).
    """

    status: PutStatus
    wrote_offset: int = -1
    wrote_bytes: int = 0
    msg_ids: list[str] = field(default_factory=list)
    queue_offset: int = 0
    msg_num: int = 0
    store_timestamp: int = 0
    tags_codes: list[int] | None = None
    remark: str | None = None

    @property
    def is_ok(self) -> bool:
        """True when the status is PUT_OK."""
        return self.status is PutStatus.PUT_OK


@dataclass(slots=True)
class GetResult:
    """Result of :meth:`MessageStore.get_message` (``GetMessageResult``).

    Attributes:
        status: outcome (see the reference's §2.8).
        next_begin_offset: queue offset the caller should read next.
        min_offset: the queue's min offset when read.
        max_offset: the queue's max offset (exclusive) when read.
        buffers: the raw records (views into the mapped commit log; concatenate for a pull body).
        message_count: number of records in ``buffers``.
        buffer_total_size: sum of their sizes, bytes.
        runs: when not None, the same records as fewer, larger views: one per run of records
            lying back to back in the commit log (their concatenation is the pull body). Set
            by the store's loop-free path; ``buffers`` may then be empty (``per_message=False``).
    """

    status: GetStatus
    next_begin_offset: int
    min_offset: int = 0
    max_offset: int = 0
    buffers: list[memoryview | bytes] = field(default_factory=list)
    message_count: int = 0
    buffer_total_size: int = 0
    runs: list[memoryview] | None = None


@dataclass(slots=True)
class QueryResult:
    """Result of :meth:`MessageStore.query_message` (``QueryMessageResult``).

    Attributes:
        buffers: the matching raw records, in commit-log order (views into the mapped commit log).
        index_last_update_timestamp: store time of the last indexed message, ms (0 = none).
        index_last_update_phyoffset: commit-log offset of the last indexed message (0 = none).
    """

    buffers: list[memoryview | bytes] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def buffer_total_size(self) -> int:
        """Sum of the record sizes, bytes."""
        return sum(len(b) for b in self.buffers)


@dataclass(slots=True, frozen=True)
class CommitLogFile:
    """One commit-log segment as the clean service sees it (``MappedFile``).

    Attributes:
        path: the file.
        start: commit-log offset of its first byte (``fileFromOffset``).
        end: offset one past its last byte.
        last_modified_ms: the file's mtime, ms since epoch (``getLastModifiedTimestamp``).
        is_writing: it is the segment being appended to (never deleted).
    """

    path: Path
    start: int
    end: int
    last_modified_ms: int
    is_writing: bool
