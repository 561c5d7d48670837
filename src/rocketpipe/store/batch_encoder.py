"""One-pass encoding of a client's batch into commit-log records (L2; sans-IO).

Mirrors ``MessageExtEncoder.encode(MessageExtBatch)`` of ``org.apache.rocketmq.store``: the
inner messages are read straight from the wire batch body (``MessageBatch.encode``: TOTALSIZE,
MAGICCODE, BODYCRC, FLAG, BODYLENGTH, BODY, PROPERTIESLENGTH, PROPERTIES per entry) and each
record is built from byte ranges of it, its properties spliced as bytes, never parsed and
re-serialised. The same pass yields what the dispatch needs (consume-queue entries, key-index
keys), as Java's ``ReputMessageService`` would read back from the records. No per-message object
is created; a batch costs one loop over its entries.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..compiled import load
from ..errors import InvalidArgumentError, ProtocolError
from ..protocol import message as pm
from ..protocol import sysflag as sf
from .api import MessageBatch, MessageInner

#: the compiled loop (None: not built), and the one in use (None: the Python loop below, also
#: with ROCKETPIPE_PURE_PYTHON=1)
_compiled_encode, _compiled = load(f"{__package__}._batch_records", "encode")

_BATCH_HEAD: Final = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
_I16: Final = struct.Struct(">h")
_MAX_PROPERTIES: Final = 32767
_SEP: Final = b"\x02"
_UNIQ: Final = pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX.encode() + b"\x01"
_WAIT: Final = pm.PROPERTY_WAIT_STORE_MSG_OK.encode() + b"\x01"
_CLUSTER: Final = pm.PROPERTY_CLUSTER.encode() + b"\x01"
_TAGS: Final = pm.PROPERTY_TAGS.encode() + b"\x01"
_KEYS: Final = pm.PROPERTY_KEYS.encode() + b"\x01"
_SEP_UNIQ: Final = _SEP + _UNIQ
_SEP_WAIT: Final = _SEP + _WAIT
_UNIQ_LEN: Final = len(_UNIQ)
_SEP_UNIQ_LEN: Final = len(_SEP_UNIQ)
_HEAD_STRUCTS: dict[int, struct.Struct] = {}
_ABSENT: Final = b"\x00absent"  # "the batch has no such pair" (compared by identity)


@dataclass(slots=True)
class EncodedBatch:
    """The records of one batch, ready to append (see :func:`encode_batch`).

    Attributes:
        records: one encoded record per inner message, at consecutive physical offsets.
        entries: per record ``(physical offset, size in bytes, tags code)``, the consume-queue entry.
        keys: per record ``(UNIQ_KEY, KEYS)`` (None when absent or empty), for the key index;
            empty when not asked for.
        total: bytes of all records.
    """

    records: list[bytes]
    entries: list[tuple[int, int, int]]
    keys: list[tuple[str | None, str | None]]
    total: int


def _value_at(buf: bytes, pair: bytes, start: int, end: int) -> int:
    """Index of the value of the last ``pair`` (``b"NAME\\x01"``) in ``buf[start:end]``, a wire
    properties string; -1 when absent. The last pair wins, as ``string2messageProperties``."""
    i = buf.rfind(_SEP + pair, start, end)
    if i >= 0:
        return i + 1 + len(pair)
    if buf.startswith(pair, start, end):
        return start + len(pair)
    return -1


def _value(buf: bytes, pair: bytes, start: int, end: int) -> bytes | None:
    """The value of the last ``pair`` in ``buf[start:end]``; None when absent or empty."""
    v = _value_at(buf, pair, start, end)
    if v < 0:
        return None
    j = buf.find(_SEP, v, end)
    return buf[v : j if j >= 0 else end] or None


def _encode_compiled(compiled: Any, *args: Any) -> EncodedBatch | None:
    """:func:`encode_batch`'s loop in C (``_batch_records.encode``), its errors mapped to this
    module's; None when an entry holds CLUSTER (the Python loop's)."""
    try:
        encoded = compiled(*args)
        if encoded is None:
            return None
        records, entries, keys, total = encoded
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"bad batch properties: {exc}") from None
    except OverflowError as exc:
        raise InvalidArgumentError(str(exc)) from None
    except ValueError as exc:
        raise ProtocolError(str(exc)) from None
    return EncodedBatch(records, entries, keys, total)


def _parsed_entry(
    props: memoryview, batch: MessageBatch
) -> tuple[bytes, bytes, bytes, bytes | None, bytes | None, bytes | None]:
    """An entry that carries CLUSTER: its properties parsed and re-serialised
    (:func:`batch_inner_properties`); returns (properties, b"", b"", UNIQ_KEY, TAGS, KEYS)."""
    spliced = batch_inner_properties(str(props, "utf-8"), batch.wait, batch.properties, batch.next_unique_id).encode()
    end = len(spliced)
    return (
        spliced,
        b"",
        b"",
        _value(spliced, _UNIQ, 0, end),
        _value(spliced, _TAGS, 0, end),
        _value(spliced, _KEYS, 0, end),
    )


def _record_head(mid_len: int) -> struct.Struct:
    """TOTALSIZE … PHYSICALOFFSET, the batch's constant middle (``mid_len`` bytes), BODYLENGTH."""
    s = _HEAD_STRUCTS.get(mid_len)
    if s is None:
        s = _HEAD_STRUCTS[mid_len] = struct.Struct(f">iiiiiqq{mid_len}si")
    return s


def batch_inner_properties(props: str, wait: str | None, tail: str, next_id: Callable[[], str]) -> str:
    """The properties stored for one message of a batch, spliced as a string (no parse).

    Stores the message's own properties (apache/rocketmq e1021ecc73: never the envelope's
    UNIQ_KEY) plus, when missing, a broker-made UNIQ_KEY and the envelope's WAIT, then ``tail``
    (the broker's pairs: MSG_REGION, TRACE_ON, CLUSTER) — as Java's ``MessageExtEncoder``
    appends the batch's properties to the inner properties bytes instead of re-serialising them;
    a name in both is read with the last value, the broker's. A message that already carries
    CLUSTER is parsed so that the broker's pairs replace its own, not double them.
    """
    if _has_key(props, pm.PROPERTY_CLUSTER + "\x01"):
        d = pm.string_to_properties(props)
        d.setdefault(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, next_id())
        if wait is not None:
            d.setdefault(pm.PROPERTY_WAIT_STORE_MSG_OK, wait)
        d.update(pm.string_to_properties(tail))
        return pm.properties_to_string(d)
    if props and props[-1] != "\x02":
        props += "\x02"
    if not _has_key(props, pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX + "\x01"):
        props += f"{pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX}\x01{next_id()}\x02"
    if wait is not None and not _has_key(props, pm.PROPERTY_WAIT_STORE_MSG_OK + "\x01"):
        props += f"{pm.PROPERTY_WAIT_STORE_MSG_OK}\x01{wait}\x02"
    return props + tail


def _has_key(props: str, pair: str) -> bool:
    """``props`` (a wire properties string) holds the key of ``pair`` (``"KEY\x01"``)."""
    return props.startswith(pair) or ("\x02" + pair) in props


def decode_inners(batch: MessageBatch) -> list[MessageInner]:
    """The batch as one :class:`MessageInner` per inner message (the general put path).

    Raises:
        ProtocolError: the batch body is malformed.
    """
    tail, wait, next_id = batch.properties, batch.wait, batch.next_unique_id
    return [
        MessageInner(
            batch.topic,
            batch.queue_id,
            body,
            flag,
            batch_inner_properties(props, wait, tail, next_id),
            batch.sys_flag,
            batch.born_timestamp,
            batch.born_host,
            batch.store_host,
            batch.reconsume_times,
        )
        for flag, body, props in pm.decode_batch(batch.body)
    ]


def encode_batch(
    batch: MessageBatch,
    queue_offset: int,
    physical_offset: int,
    store_timestamp: int,
    tags_code: Callable[[bytes], int],
    *,
    index_keys: bool = True,
) -> EncodedBatch:
    """Encode every inner message of ``batch`` as a record (``MessageExtEncoder.encode(MessageExtBatch)``).

    Byte for byte what :func:`decode_inners` + :func:`~rocketpipe.protocol.message.encode_record`
    store, in one loop: per entry one header pack, the body and properties as views of the
    batch body, and the properties' suffix (separator, UNIQ_KEY / WAIT when missing, the batch's
    properties). Body CRCs are recomputed (``UtilAll.crc32``), not trusted from the client.

    Args:
        batch: a batch with no transaction type (every record gets a consume-queue entry).
        queue_offset: queue offset of the first record.
        physical_offset: commit-log offset of the first record, bytes.
        store_timestamp: store time of every record, ms.
        tags_code: consume-queue tags code of a non-empty ``TAGS`` value (UTF-8 bytes).
        index_keys: read each record's UNIQ_KEY and KEYS for the key index (else ``keys`` is empty).

    Returns:
        The records with their consume-queue entries and index keys; no records for an empty body.

    Raises:
        ProtocolError: an entry is truncated, its sizes are inconsistent, or its properties are
            not UTF-8 (the batch is refused whole). Java splices such bytes unchecked; we refuse
            them at the put, as the general path always did, because every reader here decodes
            properties strictly and a stored record that cannot be decoded would fail each pull.
        InvalidArgumentError: a record's properties exceed 32767 bytes, or a host is not ``ip:port``.
    """
    topic = batch.topic
    tb = topic.encode()
    if len(tb) > 255:
        raise InvalidArgumentError(f"topic of {len(tb)} bytes exceeds 255")
    v2 = len(tb) > 127
    topic_part = (_I16.pack(len(tb)) if v2 else bytes((len(tb),))) + tb
    born, b6 = pm.encode_host_cached(batch.born_host)
    store, s6 = pm.encode_host_cached(batch.store_host)
    sys_flag = (
        (batch.sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG))
        | (sf.BORNHOST_V6_FLAG if b6 else 0)
        | (sf.STOREHOST_V6_FLAG if s6 else 0)
    )
    mid = (
        struct.pack(">iq", sys_flag, batch.born_timestamp)
        + born
        + struct.pack(">q", store_timestamp)
        + store
        + struct.pack(">iq", batch.reconsume_times, 0)
    )
    pack = _record_head(len(mid)).pack
    fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + len(mid) + 4 + len(topic_part) + 2
    magic = sf.MAGIC_V2 if v2 else sf.MAGIC_V1
    qid = batch.queue_id
    tail = batch.properties.encode()
    wait = batch.wait
    wait_pair = None if wait is None else _WAIT + wait.encode() + _SEP
    next_id = batch.next_unique_id
    # the batch's own pairs come last in every record, so they win when read (Java's last-wins)
    tail_uniq, tail_tags, tail_keys = (
        _value(tail, pair, 0, len(tail)) if _value_at(tail, pair, 0, len(tail)) >= 0 else _ABSENT
        for pair in (_UNIQ, _TAGS, _KEYS)
    )

    buf = batch.body
    mv = memoryview(buf)
    head, i16, crc32, i16pack = _BATCH_HEAD.unpack_from, _I16.unpack_from, zlib.crc32, _I16.pack
    rfind, find, startswith = buf.rfind, buf.find, buf.startswith
    records: list[bytes] = []
    entries: list[tuple[int, int, int]] = []
    keys: list[tuple[str | None, str | None]] = []
    props_seen: list[memoryview] = []
    add_record, add_entry, add_keys, add_props = records.append, entries.append, keys.append, props_seen.append
    join = b"".join
    compiled = _compiled
    if compiled is not None and tail_uniq is tail_tags is tail_keys is _ABSENT:
        encoded = _encode_compiled(
            compiled, buf, topic_part, mid, tail, wait_pair, magic, qid, queue_offset, physical_offset,
            next_id, tags_code, index_keys,
        )  # fmt: skip
        if encoded is not None:
            return encoded
        may_hold_cluster = True  # the C loop found an entry with CLUSTER
    else:  # one scan of the whole body: a name it never holds needs no per-entry search
        may_hold_cluster = find(_CLUSTER) >= 0
    if tail_tags is _ABSENT and find(_TAGS) < 0:
        tail_tags = None
    if tail_keys is _ABSENT and find(_KEYS) < 0:
        tail_keys = None
    pos, n, qo, phys = 0, len(buf), queue_offset, physical_offset
    whole: bytes | memoryview
    uniq: bytes | None
    tags: bytes | None
    kv: bytes | None
    try:
        while pos < n:
            size, _magic, _crc, flag, blen = head(mv, pos)
            if size < 22 or pos + size > n or blen < 0 or 20 + blen + 2 > size:
                raise ProtocolError("batch entry size out of range")
            bs = pos + 20
            ps = bs + blen
            (plen,) = i16(mv, ps)
            if plen < 0 or 22 + blen + plen > size:
                raise ProtocolError("batch entry properties out of range")
            ps += 2
            pe = ps + plen
            pos += size
            props = mv[ps:pe]
            add_props(props)
            if may_hold_cluster and _value_at(buf, _CLUSTER, ps, pe) >= 0:
                whole, sep, suffix, uniq, tags, kv = _parsed_entry(props, batch)
            else:  # the common entry (_value() inlined for UNIQ_KEY, which every entry holds)
                whole, suffix = props, tail
                sep = b"" if plen == 0 or buf[pe - 1] == 2 else _SEP
                i = rfind(_SEP_UNIQ, ps, pe)
                if i >= 0:
                    i += _SEP_UNIQ_LEN
                elif startswith(_UNIQ, ps, pe):
                    i = ps + _UNIQ_LEN
                if i >= 0:
                    j = find(_SEP, i, pe)
                    uniq = buf[i : j if j >= 0 else pe] or None
                else:
                    uniq = next_id().encode()
                    sep += _UNIQ + uniq + _SEP
                if wait_pair is not None and rfind(_SEP_WAIT, ps, pe) < 0 and not startswith(_WAIT, ps, pe):
                    sep += wait_pair
                tags = _value(buf, _TAGS, ps, pe) if tail_tags is _ABSENT else tail_tags
                kv = _value(buf, _KEYS, ps, pe) if tail_keys is _ABSENT else tail_keys
                if tail_uniq is not _ABSENT:
                    uniq = tail_uniq
            out_len = len(whole) + len(sep) + len(suffix)
            if out_len > _MAX_PROPERTIES:
                raise InvalidArgumentError(f"properties of {out_len} bytes exceed 32767")
            total = fixed + blen + out_len
            body = mv[bs : bs + blen]
            add_record(
                join(
                    (
                        pack(total, magic, crc32(body) & 0x7FFFFFFF, qid, flag, qo, phys, mid, blen),
                        body,
                        topic_part,
                        i16pack(out_len),
                        whole,
                        sep,
                        suffix,
                    )
                )
            )
            add_entry((phys, total, tags_code(tags) if tags else 0))
            if index_keys:
                add_keys((uniq.decode() if uniq else None, kv.decode() if kv else None))
            phys += total
            qo += 1
        if props_seen:
            join(props_seen).decode()  # one check of every entry's properties, as decode_batch does
    except struct.error as exc:
        raise ProtocolError(f"bad batch body: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"bad batch properties: {exc}") from None
    return EncodedBatch(records, entries, keys, phys - physical_offset)
