"""Message value types and their binary encodings (L1, sans-IO).

* :class:`MessageQueue`, :class:`Message`, :class:`MessageExt` — mirror ``common/message``.
* Properties string (``MessageDecoder.messageProperties2String`` / ``string2messageProperties``).
* The stored-message record (``MessageExtEncoder`` / ``MessageDecoder.decode``): the commit-log
  record is byte-for-byte the element of a PULL_MESSAGE response body.
* Batch body (``MessageDecoder.encodeMessages`` / ``decodeMessages``).
* offsetMsgId (``MessageDecoder.createMessageId``) and the client unique key
  (``MessageClientIDSetter.createUniqID``); tag hash (Java ``String.hashCode``).

All integers are big-endian. Timestamps are milliseconds since the epoch.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import struct
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ..compiled import load
from ..errors import InvalidArgumentError, ProtocolError
from . import sysflag as sf
from .compression import decompress

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"

# MessageConst property keys used across rocketpipe.
PROPERTY_KEYS: Final = "KEYS"
PROPERTY_TAGS: Final = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
#: 5.x timer messages: the producer sets one of the first three; the broker adds the rest.
PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
PROPERTY_TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
PROPERTY_TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
PROPERTY_MSG_REGION: Final = "MSG_REGION"
PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
PROPERTY_CLUSTER: Final = "CLUSTER"
#: request-reply (4.6+): set by ``request()`` / ``MessageUtil.createReplyMessage``
PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL: Final = "TTL"
PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
#: ``MixAll.REPLY_MESSAGE_FLAG``: the MSG_TYPE of a reply
REPLY_MESSAGE_FLAG: Final = "reply"
PROPERTY_INNER_NUM: Final = "INNER_NUM"
KEY_SEPARATOR: Final = " "

#: MessageConst.STRING_HASH_SET: names a user may not set as user properties.
SYSTEM_PROPERTY_NAMES: Final = frozenset(
    {
        "TRACE_ON",
        "MSG_REGION",
        "KEYS",
        "TAGS",
        "WAIT",
        "DELAY",
        "RETRY_TOPIC",
        "REAL_TOPIC",
        "REAL_QID",
        "TRAN_MSG",
        "PGROUP",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "BUYER_ID",
        "ORIGIN_MESSAGE_ID",
        "TRANSFER_FLAG",
        "CORRECTION_FLAG",
        "MQ2_FLAG",
        "RECONSUME_TIME",
        "UNIQ_KEY",
        "MAX_RECONSUME_TIMES",
        "CONSUME_START_TIME",
        "POP_CK",
        "POP_CK_OFFSET",
        "1ST_POP_TIME",
        "TRAN_PREPARED_QUEUE_OFFSET",
        "DUP_INFO",
        "EXTEND_UNIQ_INFO",
        "INSTANCE_ID",
        "CORRELATION_ID",
        "REPLY_TO_CLIENT",
        "TTL",
        "ARRIVE_TIME",
        "PUSH_REPLY_TIME",
        "CLUSTER",
        "MSG_TYPE",
        "INNER_MULTI_QUEUE_OFFSET",
        "__transactionId__",
        "TIMER_DELAY_SEC",
        "TIMER_DELAY_MS",
        "TIMER_DELIVER_MS",
        "INNER_NUM",
        "INNER_BASE",
        "CHECK_IMMUNITY_TIME_IN_SECONDS",
        "TRANSACTION_CHECK_TIMES",
        "INNER_MULTI_DISPATCH",
    }
)


_UTF16_NATIVE: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def int32(v: int) -> int:
    """Wrap ``v`` to a signed 32-bit int, as a Java ``(int)`` cast of a ``long`` does.

    Consume-queue tags codes are 8 bytes wide; filters compare them as Java ``int`` hashes.
    """
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def java_string_hash(s: str) -> int:
    """Return Java's ``String.hashCode`` of ``s`` as a signed 32-bit int.

    Iterates UTF-16 code units (characters outside the BMP count as two surrogates; lone
    surrogates are hashed as themselves), wrapping at 32 bits like Java.
    """
    h = 0
    for c in memoryview(s.encode(_UTF16_NATIVE, "surrogatepass")).cast("H"):
        h = (31 * h + c) & 0xFFFFFFFF
    return int32(h)


def tag_code(tags: str | None) -> int:
    """Return the consume-queue tags code of a ``TAGS`` value (0 when empty or missing).

    Mirrors ``MessageExtBrokerInner.tagsString2tagsCode``; the signed 32-bit hash sign-extends
    into the 8-byte consume-queue field.
    """
    return java_string_hash(tags) if tags else 0


def properties_to_string(props: dict[str, str]) -> str:
    """Encode properties as ``name\\x01value\\x02`` pairs (None values skipped)."""
    return "".join([f"{k}\x01{v}\x02" for k, v in props.items() if v is not None])


def string_to_properties(s: str) -> dict[str, str]:
    """Parse a properties string; last duplicate wins; empty names/values dropped (Java rules).

    Runs compiled (``_records.string_to_properties``) when built; this loop is the reference.
    """
    if _compiled_split is not None:
        return _compiled_split(s)  # type: ignore[no-any-return]
    out: dict[str, str] = {}
    if not s:
        return out
    for seg in s.split(PROPERTY_SEPARATOR):
        # Java keeps a segment iff its first 0x01 is neither its first nor its last char
        k, _, v = seg.partition(NAME_VALUE_SEPARATOR)
        if k and v:
            out[k] = v
    return out


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """A queue of a topic on one broker (``common.message.MessageQueue``).

    Orders by (topic, broker_name, queue_id), like Java's ``compareTo``.
    """

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, object]:
        """Return the fastjson bean form ``{"brokerName", "queueId", "topic"}``."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, d: dict[str, object]) -> MessageQueue:
        """Build from the bean form."""
        return cls(str(d["topic"]), str(d["brokerName"]), int(d["queueId"]))  # type: ignore[call-overload]

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


class _PropertyAccessors:
    """Read-only views of system properties shared by :class:`Message` and :class:`MessageExt`."""

    __slots__ = ()
    properties: dict[str, str]

    @property
    def tags(self) -> str | None:
        """The ``TAGS`` property."""
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> str | None:
        """The ``KEYS`` property (space-separated)."""
        return self.properties.get(PROPERTY_KEYS)

    @property
    def delay_time_level(self) -> int:
        """The ``DELAY`` property as an int (0 = none)."""
        v = self.properties.get(PROPERTY_DELAY_TIME_LEVEL)
        try:
            return int(v) if v else 0
        except ValueError:
            return 0


@dataclass(slots=True)
class Message(_PropertyAccessors):
    """A message to send (``common.message.Message``).

    Attributes:
        topic: destination topic.
        body: payload bytes.
        flag: opaque user int stored with the message.
        properties: system and user properties (``str -> str``).
    """

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        topic: str,
        body: bytes | str,
        *,
        tags: str | None = None,
        keys: str | list[str] | None = None,
        delay_time_level: int = 0,
        delay_time_ms: int | None = None,
        deliver_time_ms: int | None = None,
        delay_time_sec: int | None = None,
        properties: dict[str, str] | None = None,
        flag: int = 0,
        wait_store_msg_ok: bool = True,
    ) -> Message:
        """Build a message like Java's ``new Message(topic, tags, keys, body)``.

        Delays: ``delay_time_level`` (1..18, ``setDelayTimeLevel``) or, on 5.x brokers, a timer
        message: ``delay_time_ms`` (``setDelayTimeMs`` → ``TIMER_DELAY_MS``), ``delay_time_sec``
        (``setDelayTimeSec`` → ``TIMER_DELAY_SEC``) or ``deliver_time_ms`` (epoch ms,
        ``setDeliverTimeMs`` → ``TIMER_DELIVER_MS``), delivered to 1 s precision and at most
        ``timerMaxDelaySec`` (3 days) ahead. A delay level wins over timer properties (the
        broker drops them), as in Java.

        Raises:
            InvalidArgumentError: a user property name is reserved, a name/value is blank, a
                delay is negative, or more than one timer option is given.
        """
        timers = [v for v in (delay_time_ms, deliver_time_ms, delay_time_sec) if v is not None]
        if len(timers) > 1:
            raise InvalidArgumentError("give one of delay_time_ms, deliver_time_ms, delay_time_sec")
        if timers and timers[0] < 0:
            raise InvalidArgumentError(f"a timer delay or delivery time must not be negative, not {timers[0]}")
        props: dict[str, str] = {}
        if properties:
            for k, v in properties.items():
                if k in SYSTEM_PROPERTY_NAMES:
                    raise InvalidArgumentError(f"property name {k!r} is reserved by RocketMQ; choose another name")
                if not k.strip() or not str(v).strip():
                    raise InvalidArgumentError("user property names and values must not be blank")
                props[k] = str(v)
        if tags:
            props[PROPERTY_TAGS] = tags
        if keys:
            props[PROPERTY_KEYS] = keys if isinstance(keys, str) else KEY_SEPARATOR.join(keys)
        if delay_time_level > 0:
            props[PROPERTY_DELAY_TIME_LEVEL] = str(delay_time_level)
        if delay_time_ms is not None:
            props[PROPERTY_TIMER_DELAY_MS] = str(delay_time_ms)
        elif deliver_time_ms is not None:
            props[PROPERTY_TIMER_DELIVER_MS] = str(deliver_time_ms)
        elif delay_time_sec is not None:
            props[PROPERTY_TIMER_DELAY_SEC] = str(delay_time_sec)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait_store_msg_ok else "false"
        return cls(topic, body.encode() if isinstance(body, str) else bytes(body), flag, props)

    @property
    def unique_key(self) -> str | None:
        """The ``UNIQ_KEY`` property (the client-side msgId)."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


@dataclass(slots=True)
class MessageExt(_PropertyAccessors):
    """A stored message as decoded from a commit-log record (``MessageExt``/``MessageClientExt``).

    Attributes:
        topic, body, flag, properties: as in :class:`Message` (body decompressed when asked).
        queue_id, queue_offset: position in the consume queue.
        commit_log_offset: byte offset of the record in the commit log.
        store_size: record length in bytes.
        sys_flag: ``MessageSysFlag`` bits.
        born_timestamp, store_timestamp: ms since epoch.
        born_host, store_host: ``"ip:port"`` strings.
        body_crc: CRC32 of the stored body & 0x7FFFFFFF.
        reconsume_times: delivery retries so far.
        prepared_transaction_offset: commit-log offset of the half message, or 0.
        offset_msg_id: broker id (store host + commit-log offset), upper-case hex.
        broker_name: set by the client from the queue it pulled.
    """

    topic: str
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    store_size: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_timestamp: int = 0
    store_host: str = ""
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    offset_msg_id: str = ""
    broker_name: str = ""

    @property
    def msg_id(self) -> str:
        """The user-visible id: ``UNIQ_KEY`` when present, else ``offset_msg_id``."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id

    @property
    def message_queue(self) -> MessageQueue:
        """The queue this message was read from."""
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


# ---------------------------------------------------------------------------------------------
# Hosts


def encode_host(host: str) -> tuple[bytes, bool]:
    """Encode ``"ip:port"`` (or ``"[v6]:port"``) as address bytes + 4-byte port.

    Returns:
        (bytes of 8 or 20, is_ipv6)

    Raises:
        InvalidArgumentError: not an ``ip:port`` string.
    """
    try:
        addr, _, port = host.rpartition(":")
        ip = ipaddress.ip_address(addr.strip("[]"))
        return ip.packed + struct.pack(">i", int(port)), ip.version == 6
    except (ValueError, struct.error):
        raise InvalidArgumentError(f"host {host!r} is not 'ip:port'") from None


def decode_host(data: bytes | memoryview) -> str:
    """Decode 8 (IPv4) or 20 (IPv6) bytes into ``"ip:port"`` (IPv6 unbracketed, compressed).

    Raises:
        ProtocolError: not 8 or 20 bytes.
    """
    n = len(data) - 4
    if n == 4:
        a, b, c, d, port = _HOST4.unpack_from(data, 0)
        return f"{a}.{b}.{c}.{d}:{port}"
    if n != 16:
        raise ProtocolError(f"host field of {len(data)} bytes")
    ip = ipaddress.IPv6Address(bytes(data[:16]))
    (port,) = struct.unpack_from(">i", data, 16)
    return f"{ip}:{port}"


_HOST4 = struct.Struct(">BBBBi")


# ---------------------------------------------------------------------------------------------
# Message ids


def create_offset_msg_id(store_host: str, commit_log_offset: int) -> str:
    """Return the offsetMsgId: store host address + port + commit-log offset, upper-case hex."""
    hb, _ = encode_host(store_host)
    return (hb + struct.pack(">q", commit_log_offset)).hex().upper()


def create_offset_msg_ids(prefix: str, commit_log_offsets: Sequence[int]) -> list[str]:
    """The offsetMsgIds of several records of one store host, in order: ``prefix`` (the host's
    hex, ``create_offset_msg_id(host, 0)[:-16]``) + each offset as 16 upper-case hex digits.

    One ``struct`` pack and one hex conversion for all of them (Java's ``MessageExtBatch``
    supplier formats them one by one), instead of a formatted string per offset.

    Raises:
        struct.error: an offset outside the signed 64-bit range.
    """
    n = len(commit_log_offsets)
    if n == 1 and 0 <= commit_log_offsets[0] < 1 << 63:  # a single send's
        return [f"{prefix}{commit_log_offsets[0]:016X}"]
    digits = struct.pack(f">{n}q", *commit_log_offsets).hex().upper()
    return [prefix + digits[i : i + 16] for i in range(0, 16 * n, 16)]


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """Split an offsetMsgId into (``"ip:port"``, commit-log offset).

    Raises:
        InvalidArgumentError: not a 32- or 56-character hex string.
    """
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise InvalidArgumentError(f"{msg_id!r} is not an offset message id") from None
    if len(raw) not in (16, 28):
        raise InvalidArgumentError(f"{msg_id!r} is not an offset message id (length {len(msg_id)})")
    (offset,) = struct.unpack_from(">q", raw, len(raw) - 8)
    return decode_host(raw[:-8]), offset


class UniqueIdGenerator:
    """Client unique keys (``MessageClientIDSetter.createUniqID``).

    16 bytes = ip(4) + pid(2) + per-process int(4) + ms since start of the local month(4) +
    counter(2), as 32 upper-case hex chars. Thread-safe.

    Args:
        ip: local IPv4 address bytes (default 127.0.0.1).
    """

    def __init__(self, ip: bytes = b"\x7f\x00\x00\x01") -> None:
        self._prefix = (ip + struct.pack(">hi", os.getpid() & 0x7FFF, id(self) & 0x7FFFFFFF)).hex().upper()
        # itertools.count's next() is atomic under the GIL: no lock (protocol/ imports no threading).
        self._counter = itertools.count(1)
        self._month = (0.0, 0.0)  # (start, next start) swapped as one tuple

    @staticmethod
    def _month_bounds(now: float) -> tuple[float, float]:
        d = datetime.fromtimestamp(now)
        start = d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        return start.timestamp(), nxt.timestamp()

    def next_id(self) -> str:
        """Return a new unique key (32 upper-case hex chars)."""
        counter = next(self._counter) & 0xFFFF
        return f"{self._time_prefix()}{counter:04X}"

    def next_ids(self, n: int) -> list[str]:
        """Return ``n`` new unique keys (as :meth:`next_id`, one clock read for all: a batch's)."""
        base, counter = self._time_prefix(), self._counter
        return [f"{base}{next(counter) & 0xFFFF:04X}" for _ in range(n)]

    def _time_prefix(self) -> str:
        """The first 28 hex chars of a key made now: the fixed prefix + ms since the month's start."""
        now = time.time()  # clock seam not needed: ids only need to be unique
        month = self._month
        if now >= month[1]:
            month = self._month = self._month_bounds(now)
        elapsed = max(0, int((now - month[0]) * 1000)) & 0xFFFFFFFF
        return f"{self._prefix}{elapsed:08X}"


# ---------------------------------------------------------------------------------------------
# Stored record

_REC_FIXED4 = struct.Struct(">iiiiiqqiq8sq8siqi")  # fixed part with IPv4 hosts, through the body length
_ENCODED_HOSTS: dict[str, tuple[bytes, bool]] = {}
#: topic -> length byte + UTF-8 name, for topics that fit a v1 record (at most 127 bytes)
_TOPIC_TAILS: dict[str, bytes] = {}
#: "ip:port" -> 8-byte IPv4 host field (IPv6 hosts are never added)
_V4_HOSTS: dict[str, bytes] = {}


def _remember_record_parts(topic: str, born_host: str, store_host: str) -> None:
    """Fill the fast-path caches of :func:`encode_record` (bad input is left to the slow path)."""
    if topic not in _TOPIC_TAILS:
        tb = topic.encode()
        if len(tb) <= 127:
            if len(_TOPIC_TAILS) >= 4096:
                _TOPIC_TAILS.clear()
            _TOPIC_TAILS[topic] = bytes((len(tb),)) + tb
    for host in (born_host, store_host):
        if host not in _V4_HOSTS:
            try:
                raw, v6 = encode_host_cached(host)
            except InvalidArgumentError:
                continue
            if not v6:
                if len(_V4_HOSTS) >= 4096:
                    _V4_HOSTS.clear()
                _V4_HOSTS[host] = raw


def encode_host_cached(host: str) -> tuple[bytes, bool]:
    """:func:`encode_host` with a bounded cache (a store sees the same few hosts over and over).

    Raises:
        InvalidArgumentError: as :func:`encode_host` (a bad host is not cached).
    """
    hit = _ENCODED_HOSTS.get(host)
    if hit is None:
        hit = encode_host(host)
        if len(_ENCODED_HOSTS) >= 4096:
            _ENCODED_HOSTS.clear()
        _ENCODED_HOSTS[host] = hit
    return hit


_REC_HEAD = struct.Struct(">iiiiiqqiq")  # total, magic, bodycrc, queueid, flag, qoffset, physoffset, sysflag, born ts
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")

#: Position of fixed fields in a record.
QUEUE_OFFSET_POS: Final = 20
PHYSICAL_OFFSET_POS: Final = 28
SYSFLAG_POS: Final = 36
BORN_HOST_POS: Final = 48


def store_timestamp_pos(sys_flag: int) -> int:
    """Position of STORETIMESTAMP in a record, which depends on the born host width."""
    return 68 if sys_flag & sf.BORNHOST_V6_FLAG else 56


def body_crc(body: bytes | memoryview) -> int:
    """CRC32 of the stored body masked to 31 bits (``UtilAll.crc32``)."""
    return zlib.crc32(body) & 0x7FFFFFFF


def encode_message_ext(msg: MessageExt, *, topic: str | None = None, queue_id: int | None = None) -> bytes:
    """Encode a stored message back into a commit-log record (``MessageDecoder.encode``).

    ``topic`` / ``queue_id`` replace the message's own (a transaction check sends the half
    message under its real topic and queue). The body is written as stored (compressed when
    its sysflag says so), with the stored body CRC.

    Raises:
        InvalidArgumentError: topic over 255 bytes or properties over 32767 bytes.
    """
    return encode_record(
        topic=msg.topic if topic is None else topic,
        body=msg.body,
        properties=msg.properties,
        queue_id=msg.queue_id if queue_id is None else queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        physical_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        crc=msg.body_crc,
    )


def encode_record(
    *,
    topic: str,
    body: bytes | memoryview,
    properties: str | dict[str, str],
    queue_id: int,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: str = "127.0.0.1:0",
    store_timestamp: int = 0,
    store_host: str = "127.0.0.1:0",
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    crc: int | None = None,
) -> bytes:
    """Encode a commit-log record (``MessageExtEncoder``), v1 magic unless the topic needs v2.

    The host sysflag bits (0x10/0x20) are set from the host strings.

    Raises:
        InvalidArgumentError: topic over 255 bytes or properties over 32767 bytes.
    """
    pb = (properties if type(properties) is str else properties_to_string(properties)).encode()  # type: ignore[arg-type]
    # Fast path (the common record): v1 topic, IPv4 hosts; per-topic/per-host bytes cached.
    tail = _TOPIC_TAILS.get(topic)
    bh = _V4_HOSTS.get(born_host)
    shost = _V4_HOSTS.get(store_host)
    plen = len(pb)
    if tail is not None and bh is not None and shost is not None and plen <= 32767:
        blen = len(body)
        return b"".join(
            (
                _REC_FIXED4.pack(
                    _MIN_RECORD - 1 + blen + len(tail) + plen,
                    sf.MAGIC_V1,
                    (zlib.crc32(body) & 0x7FFFFFFF) if crc is None else crc,
                    queue_id,
                    flag,
                    queue_offset,
                    physical_offset,
                    sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG),
                    born_timestamp,
                    bh,
                    store_timestamp,
                    shost,
                    reconsume_times,
                    prepared_transaction_offset,
                    blen,
                ),
                body,
                tail,
                _I16.pack(plen),
                pb,
            )
        )
    _remember_record_parts(topic, born_host, store_host)
    tb = topic.encode()
    if len(pb) > 32767:
        raise InvalidArgumentError(f"properties of {len(pb)} bytes exceed 32767")
    if len(tb) > 255:
        raise InvalidArgumentError(f"topic of {len(tb)} bytes exceeds 255")
    v2 = len(tb) > 127
    bh, b6 = encode_host_cached(born_host)
    shost, s6 = encode_host_cached(store_host)
    sys_flag = (
        (sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG))
        | (sf.BORNHOST_V6_FLAG if b6 else 0)
        | (sf.STOREHOST_V6_FLAG if s6 else 0)
    )
    blen = len(body)
    total = (
        4
        + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + len(bh)
        + 8
        + len(shost)
        + 4
        + 8
        + 4
        + blen
        + (2 if v2 else 1)
        + len(tb)
        + 2
        + len(pb)
    )
    if not (b6 or s6 or v2):
        # common case: one pack for the 92-byte fixed part (through the body length)
        return b"".join(
            (
                _REC_FIXED4.pack(
                    total,
                    sf.MAGIC_V1,
                    body_crc(body) if crc is None else crc,
                    queue_id,
                    flag,
                    queue_offset,
                    physical_offset,
                    sys_flag,
                    born_timestamp,
                    bh,
                    store_timestamp,
                    shost,
                    reconsume_times,
                    prepared_transaction_offset,
                    blen,
                ),
                body,
                bytes((len(tb),)),
                tb,
                _I16.pack(len(pb)),
                pb,
            )
        )
    parts = [
        _REC_HEAD.pack(
            total,
            sf.MAGIC_V2 if v2 else sf.MAGIC_V1,
            body_crc(body) if crc is None else crc,
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag,
            born_timestamp,
        ),
        bh,
        _I64.pack(store_timestamp),
        shost,
        struct.pack(">iqi", reconsume_times, prepared_transaction_offset, blen),
        body,
        (_I16.pack(len(tb)) if v2 else bytes((len(tb),))),
        tb,
        _I16.pack(len(pb)),
        pb,
    ]
    return b"".join(parts)


_REC_MID4 = struct.Struct(">QqQiqi")  # both hosts IPv4: born host, store ts, store host, reconsume, prepared, body len
#: The fixed header and the IPv4 host section in one (``_REC_HEAD`` + ``_REC_MID4``); the body follows.
_REC_V4 = struct.Struct(">iiiiiqqiqQqQiqi")
_V4_BODY_POS: Final = 88
_REC_TAIL = struct.Struct(">iqi")  # reconsume, prepared, body len
_MIN_RECORD = 91  # v1 magic, IPv4 hosts, empty body/topic/properties
_V6_HOSTS = sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG
#: Width of the TOPICLENGTH field by MAGICCODE: 1 byte (v1) or 2 bytes (v2, ``MESSAGE_MAGIC_CODE_V2``).
_TOPIC_LEN_WIDTH: Final = {sf.MAGIC_V1: 1, sf.MAGIC_V2: 2}


class _HostCache(dict[int, tuple[str, str]]):
    """``("ip:port", upper-hex)`` of 8-byte IPv4 host fields, keyed by the field read as one
    big-endian unsigned 64-bit number (a pull repeats the same hosts); at most 4096 entries."""

    def __missing__(self, key: int) -> tuple[str, str]:
        raw = key.to_bytes(8, "big")
        if len(self) >= 4096:
            self.clear()
        entry = self[key] = (decode_host(raw), raw.hex().upper())
        return entry


_HOST_CACHE = _HostCache()

#: decode_records' compiled loop (None: not built), and the one in use (None: the Python loop,
#: also with ROCKETPIPE_PURE_PYTHON=1)
_compiled_decode, _compiled = load(f"{__package__}._records", "decode")
#: encode_batch's compiled loop (None: not built), and the one in use (None: the Python loop).
_compiled_batch_built, _compiled_batch = load(f"{__package__}._records", "encode_batch")
#: string_to_properties' compiled loop (None: not built), and the one in use (None: the Python loop).
_compiled_split_built, _compiled_split = load(f"{__package__}._records", "string_to_properties")
#: encode_records' compiled loop (None: not built), and the one in use (None: the Python loop).
_compiled_records_built, _compiled_records = load(f"{__package__}._records", "encode_records")
#: Transaction types whose records take no consume-queue slot (queue offset 0): prepared, rollback.
NO_QUEUE_SLOT: Final = (sf.TRANSACTION_PREPARED_TYPE, sf.TRANSACTION_ROLLBACK_TYPE)


def _decode_hosts_v6(mv: memoryview, p: int, end: int, sys_flag: int) -> tuple[str, int, str, str, int, int, int, int]:
    """Decode BORNHOST … BODYLENGTH when a host is IPv6 (20 bytes: 16 address + 4 port).

    The slow path of :func:`decode_record` (``MessageDecoder.decode`` reads each host by its
    sysflag bit); ``p`` is the BORNHOST position, ``end`` the record's end.

    Returns:
        ``(born_host, store_timestamp, store_host, store_host_hex, reconsume_times,
        prepared_transaction_offset, body_length, position of the body)``.

    Raises:
        ProtocolError: the host fields run past the record.
    """
    bw = 20 if sys_flag & sf.BORNHOST_V6_FLAG else 8
    sw = 20 if sys_flag & sf.STOREHOST_V6_FLAG else 8
    if p + bw + 8 + sw + 16 > end:
        raise ProtocolError("record hosts run past the record")
    born_host = decode_host(mv[p : p + bw])
    p += bw
    (store_ts,) = _I64.unpack_from(mv, p)
    p += 8
    store_host_bytes = bytes(mv[p : p + sw])
    p += sw
    reconsume, prep, blen = _REC_TAIL.unpack_from(mv, p)
    return (
        born_host,
        store_ts,
        decode_host(store_host_bytes),
        store_host_bytes.hex().upper(),
        reconsume,
        prep,
        blen,
        p + 16,
    )


def decode_record(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, read_body: bool = True, decompress_body: bool = True
) -> tuple[MessageExt, int]:
    """Decode the record at ``pos``; return the message and the position after it.

    Mirrors ``MessageDecoder.decode``, in its order: the fixed header (TOTALSIZE … BORNTIMESTAMP,
    one unpack), the host section (BORNHOST … BODYLENGTH: one unpack and a host cache when both
    hosts are IPv4, else :func:`_decode_hosts_v6`), the body, the topic, the properties. Every
    length is checked against the record's own ``totalSize``; nothing is read past it. The
    function runs once per message, so the steps stay inline (no call per step).

    Args:
        buf: buffer holding one or more records.
        pos: offset of the record's TOTALSIZE field.
        read_body: False leaves ``body`` empty (faster when only metadata is needed).
        decompress_body: inflate compressed bodies and clear the COMPRESSED flag.

    Raises:
        ProtocolError: truncated record, bad magic, lengths running past the record, undecodable
            topic/properties, or a corrupt compressed body.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    n = len(mv)
    try:
        # fixed header, 48 bytes
        if not 0 <= pos <= n - 48:
            raise ProtocolError("record truncated")
        total, magic, crc, queue_id, flag, qoff, poff, sys_flag, born_ts = _REC_HEAD.unpack_from(mv, pos)
        end = pos + total
        if not _MIN_RECORD <= total <= n - pos:
            raise ProtocolError(f"record size {total} out of range")
        tw = _TOPIC_LEN_WIDTH.get(magic)
        if tw is None:
            raise ProtocolError(f"bad record magic {magic & 0xFFFFFFFF:#x}")
        # hosts, store timestamp, reconsume times, prepared offset, body length
        p = pos + BORN_HOST_POS
        if sys_flag & _V6_HOSTS:
            born_host, store_ts, store_host, store_hex, reconsume, prep, blen, p = _decode_hosts_v6(
                mv, p, end, sys_flag
            )
        else:  # fast path: both IPv4, one unpack of the 40-byte section
            born_key, store_ts, store_key, reconsume, prep, blen = _REC_MID4.unpack_from(mv, p)
            born_host = _HOST_CACHE[born_key][0]
            store_host, store_hex = _HOST_CACHE[store_key]
            p += 40
        # body
        if not 0 <= blen <= end - p - tw:
            raise ProtocolError("record body length out of range")
        body = b""
        if read_body:
            body = bytes(mv[p : p + blen])
            if decompress_body and sys_flag & sf.COMPRESSED_FLAG:
                body = decompress(body, sys_flag)
                sys_flag &= ~sf.COMPRESSED_FLAG
        p += blen
        # topic
        if tw == 2:
            (tlen,) = _I16.unpack_from(mv, p)
        else:
            tlen = mv[p]
        p += tw
        if not 0 <= tlen <= end - p - 2:
            raise ProtocolError("record topic length out of range")
        topic = str(mv[p : p + tlen], "utf-8")
        p += tlen
        # properties
        (plen,) = _I16.unpack_from(mv, p)
        p += 2
        if not 0 <= plen <= end - p:
            raise ProtocolError("record properties length out of range")
        props = string_to_properties(str(mv[p : p + plen], "utf-8")) if plen else {}
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"bad record: {exc}") from None
    # positional (faster): topic, body, flag, properties, queue_id, queue_offset, commit_log_offset,
    # store_size, sys_flag, born_timestamp, born_host, store_timestamp, store_host, body_crc,
    # reconsume_times, prepared_transaction_offset, offset_msg_id
    msg = MessageExt(
        topic,
        body,
        flag,
        props,
        queue_id,
        qoff,
        poff,
        total,
        sys_flag,
        born_ts,
        born_host,
        store_ts,
        store_host,
        crc,
        reconsume,
        prep,
        f"{store_hex}{poff & 0xFFFFFFFFFFFFFFFF:016X}",
    )
    return msg, end


def decode_records(
    buf: bytes | bytearray | memoryview, *, read_body: bool = True, decompress_body: bool = True
) -> list[MessageExt]:
    """Decode every record of a pull-response body.

    The records are decoded in one loop (no call per record) while they are the common kind —
    v1 magic, IPv4 hosts, a body read and not to be inflated — with the topic decoded once per
    run of records of the same topic; any other record, and any record that fails a check, goes
    through :func:`decode_record` (same result, same errors). That loop runs compiled when the
    optional extension ``rocketpipe.protocol._records`` was built (any contiguous buffer), else
    in Python (``bytes`` bodies; ``ROCKETPIPE_PURE_PYTHON=1`` forces it).

    Raises:
        ProtocolError: a record is malformed (unlike Java, which silently drops the rest).
    """
    out: list[MessageExt] = []
    mv = memoryview(buf)
    pos, n = 0, mv.nbytes
    if _compiled is not None and read_body and mv.c_contiguous:
        skip = _V6_HOSTS | (sf.COMPRESSED_FLAG if decompress_body else 0)
        while True:
            pos = _compiled(mv, pos, out, MessageExt, _HOST_CACHE, skip)
            if pos >= n:
                return out
            msg, pos = decode_record(mv, pos, decompress_body=decompress_body)
            out.append(msg)
    if type(buf) is not bytes or not read_body:
        while pos < n:
            msg, pos = decode_record(mv, pos, read_body=read_body, decompress_body=decompress_body)
            out.append(msg)
        return out
    unpack = _REC_V4.unpack_from
    hosts = _HOST_CACHE
    append = out.append
    skip = _V6_HOSTS | (sf.COMPRESSED_FLAG if decompress_body else 0)
    topic_bytes, topic = b"", ""
    while pos < n:
        if n - pos >= _MIN_RECORD:
            total, magic, crc, qid, flag, qoff, poff, sys_flag, born_ts, bkey, store_ts, skey, recon, prep, blen = (
                unpack(buf, pos)
            )
            end = pos + total
            # v1 magic (1-byte topic length), both hosts IPv4, lengths within the record
            if (
                magic == sf.MAGIC_V1
                and not sys_flag & skip
                and _MIN_RECORD <= total <= n - pos
                and 0 <= blen <= total - _V4_BODY_POS - 1
                and buf[pos + _V4_BODY_POS + blen] <= total - _V4_BODY_POS - blen - 3
            ):
                p = pos + _V4_BODY_POS + blen + 1
                tb = buf[p : p + buf[p - 1]]
                p += len(tb)
                hi = buf[p]
                plen = hi << 8 | buf[p + 1]
                p += 2
                if hi < 0x80 and plen <= end - p:
                    try:
                        if tb != topic_bytes:
                            topic, topic_bytes = str(tb, "utf-8"), tb
                        props: dict[str, str] = {}
                        if plen:
                            for seg in str(buf[p : p + plen], "utf-8").split(PROPERTY_SEPARATOR):
                                k, _, v = seg.partition(NAME_VALUE_SEPARATOR)
                                if k and v:
                                    props[k] = v
                    except UnicodeDecodeError:
                        pass  # decode_record raises the ProtocolError
                    else:
                        store_host, store_hex = hosts[skey]
                        append(
                            MessageExt(
                                topic,
                                buf[pos + _V4_BODY_POS : pos + _V4_BODY_POS + blen],
                                flag,
                                props,
                                qid,
                                qoff,
                                poff,
                                total,
                                sys_flag,
                                born_ts,
                                hosts[bkey][0],
                                store_ts,
                                store_host,
                                crc,
                                recon,
                                prep,
                                f"{store_hex}{poff & 0xFFFFFFFFFFFFFFFF:016X}",
                            )
                        )
                        pos = end
                        continue
        msg, pos = decode_record(mv, pos, read_body=read_body, decompress_body=decompress_body)
        append(msg)
    return out


def iter_record_spans(buf: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """Yield (start, end) of each record in a concatenation, reading only the size fields.

    Raises:
        ProtocolError: a size field runs past the buffer.
    """
    mv = memoryview(buf)
    pos, n = 0, len(mv)
    while pos < n:
        if pos + 4 > n:
            raise ProtocolError("record truncated")
        (total,) = _I32.unpack_from(mv, pos)
        if total < _MIN_RECORD or pos + total > n:
            raise ProtocolError(f"record size {total} out of range")
        yield pos, pos + total
        pos += total


def encode_records(
    msgs: Sequence[Any], topic: str, queue_id: int, queue_offset: int, physical_offset: int, store_timestamp: int
) -> tuple[list[bytes], list[bool], int, int]:
    """Encode the records of one put at their final offsets (``MessageExtEncoder.encode`` per
    message, placed as ``CommitLog.DefaultAppendMessageCallback.doAppend`` places them).

    Args:
        msgs: the put's messages, objects with the attributes of the store's ``MessageInner``
            (``body``, ``flag``, ``properties``, ``sys_flag``, ``born_timestamp``, ``born_host``,
            ``store_host``, ``reconsume_times``, ``prepared_transaction_offset``).
        topic, queue_id: where every record goes.
        queue_offset: consume-queue offset of the first record that takes a queue slot.
        physical_offset: commit-log offset of the first record, bytes.
        store_timestamp: store time of every record, ms.

    Returns:
        ``(records, dispatched, next queue offset, total bytes)``: per message its record and
        whether it takes a queue slot (prepared and rollback transaction records take none and
        carry queue offset 0).

    Runs compiled (``_records.encode_records``) for the common records (v1 topic, IPv4 hosts
    already seen, bytes bodies, str properties); this loop of :func:`encode_record` is the
    reference and encodes the rest.

    Raises:
        InvalidArgumentError: a message cannot be encoded (properties over 32767 bytes, bad host).
    """
    if _compiled_records is not None:
        tail = _TOPIC_TAILS.get(topic)
        if tail is not None:
            done = _compiled_records(
                msgs, tail, _V4_HOSTS, queue_id, queue_offset, physical_offset, store_timestamp
            )  # fmt: skip
            if done is not None:
                return done  # type: ignore[no-any-return]
    pos = physical_offset
    records: list[bytes] = []
    dispatched: list[bool] = []
    mask, no_slot = sf.TRANSACTION_TYPE_MASK, NO_QUEUE_SLOT
    for m in msgs:
        dispatch = m.sys_flag & mask not in no_slot
        rec = encode_record(
            topic=topic,
            body=m.body,
            properties=m.properties,
            queue_id=queue_id,
            flag=m.flag,
            queue_offset=queue_offset if dispatch else 0,
            physical_offset=pos,
            sys_flag=m.sys_flag,
            born_timestamp=m.born_timestamp,
            born_host=m.born_host,
            store_timestamp=store_timestamp,
            store_host=m.store_host,
            reconsume_times=m.reconsume_times,
            prepared_transaction_offset=m.prepared_transaction_offset,
        )
        records.append(rec)
        dispatched.append(dispatch)
        pos += len(rec)
        if dispatch:
            queue_offset += 1
    return records, dispatched, queue_offset, pos - physical_offset


# ---------------------------------------------------------------------------------------------
# Batch body


_BATCH_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH of a batch entry


def encode_batch(messages: list[Message]) -> bytes:
    """Encode the SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages``); bodies uncompressed.

    Runs compiled (``_records.encode_batch``) when the messages are the common kind (str
    properties, bytes bodies); the Python loop below is the reference and encodes the rest.

    Raises:
        InvalidArgumentError: a message's properties exceed 32767 bytes.
    """
    if _compiled_batch is not None:
        body: bytes | None = _compiled_batch(messages)
        if body is not None:
            return body
    parts: list[bytes] = []
    add, head, i16 = parts.extend, _BATCH_HEAD.pack, _I16.pack
    for m in messages:
        # properties_to_string inlined (a call per message is a fifth of this loop)
        pb = "".join([f"{k}\x01{v}\x02" for k, v in m.properties.items() if v is not None]).encode()
        plen = len(pb)
        if plen > 32767:
            raise InvalidArgumentError(f"properties of {plen} bytes exceed 32767")
        body = m.body
        blen = len(body)
        add((head(22 + blen + plen, 0, 0, m.flag, blen), body, i16(plen), pb))
    return b"".join(parts)


def decode_batch(buf: bytes | memoryview) -> list[tuple[int, bytes, str]]:
    """Decode a batch body into ``(flag, body, properties_string)`` tuples.

    Raises:
        ProtocolError: an entry is truncated or its sizes are inconsistent.
    """
    mv = memoryview(buf)
    out: list[tuple[int, bytes, str]] = []
    append, head, i16 = out.append, _BATCH_HEAD.unpack_from, _I16.unpack_from
    pos, n = 0, len(mv)
    try:
        while pos < n:
            total, _magic, _crc, flag, blen = head(mv, pos)
            if total < 22 or pos + total > n or blen < 0 or 20 + blen + 2 > total:
                raise ProtocolError("batch entry size out of range")
            p = pos + 20 + blen
            (plen,) = i16(mv, p)
            if plen < 0 or 22 + blen + plen > total:
                raise ProtocolError("batch entry properties out of range")
            append((flag, mv[pos + 20 : p].tobytes(), str(mv[p + 2 : p + 2 + plen], "utf-8")))
            pos += total
    except struct.error as exc:
        raise ProtocolError(f"bad batch body: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"bad batch properties: {exc}") from None
    return out
