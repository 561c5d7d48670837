"""Column-wise decoding of PULL_MESSAGE bodies into Arrow record batches (L4 spark).

A pull body is the broker's commit-log records back to back (layout in
``messages-and-broker.md`` §1.1). Rather than building one Python object per message, the
decoder

1. walks the ``TOTALSIZE`` fields once,
2. gathers the fixed-width fields of every record at once with numpy (positions after the born
   host depend on the IPv6 sysflag bits and on the body length, so they are computed per record
   as arrays),
3. builds ``body``, ``topic`` and the properties string as Arrow binary/string arrays from one
   joined data buffer and an offsets buffer,
4. splits the properties strings with ``pyarrow.compute`` into a ``map<string, string>``
   (Java's rules: segments split at the first ``\\x01``, empty names/values dropped, the last
   duplicate wins) and takes ``tags`` (``TAGS``), ``keys`` (``KEYS``) and ``msg_id``
   (``UNIQ_KEY``, else the offsetMsgId computed from store host + commit-log offset) from it;
   with option ``includeHeaders``, Kafka's ``headers`` column is that map's user properties
   (RocketMQ's system names such as ``TAGS``, ``UNIQ_KEY`` left out, as Java's
   ``MessageConst.STRING_HASH_SET``), in stored order, values as UTF-8 bytes.

Steps 1 and 4 run compiled when ``protocol/_records.c`` is built (``record_starts``, and
``split_properties``, which splits the strings straight from the buffer); the Python walk and the
``pyarrow.compute`` split are the reference and the fallback, and the tests run both.

Compressed bodies (sysflag bit ``0x1``) are decompressed one by one with
:func:`rocketpipe.protocol.compression.decompress`. 5.x inner-batch records (BatchCQ) are not
unwrapped.

The output matches ``pyspark.sql.pandas.types.to_arrow_schema(SCHEMA, timezone="UTC")`` exactly
(Spark checks the first batch with ``pa.Schema.equals``).

Imports: numpy, pyarrow, :mod:`rocketpipe.compiled`, :mod:`rocketpipe.errors`, :mod:`rocketpipe.protocol`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..compiled import load
from ..errors import ProtocolError
from ..protocol import sysflag as sf
from ..protocol.compression import decompress
from ..protocol.message import SYSTEM_PROPERTY_NAMES

_TS: Final = pa.timestamp("us", tz="UTC")
#: Arrow schema of the batches ``read()`` yields (= Spark's ``to_arrow_schema`` of ``source.SCHEMA``).
ARROW_SCHEMA: Final = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("broker_name", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("msg_id", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("keys", pa.string()),
        pa.field("body", pa.binary()),
        pa.field("born_timestamp", _TS),
        pa.field("store_timestamp", _TS),
        pa.field("reconsume_times", pa.int32()),
        pa.field("properties", pa.map_(pa.string(), pa.string())),
    ]
)
#: The ``headers`` column of option ``includeHeaders`` (Kafka's ``array<struct<key:string,value:binary>>``
#: as Spark's ``to_arrow_schema`` writes it); not part of :data:`ARROW_SCHEMA`, asked for by name.
HEADERS_FIELD: Final = pa.field(
    "headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)

# Arrays are built from buffers, never with ``pa.array`` / ``pa.scalar``: pyarrow's conversion of
# Python or numpy input imports pandas on its first use when pandas is installed (0.4 s of CPU),
# and a Spark Python worker that only passes Arrow batches never loads it otherwise.


_INT64: Final = pa.int64()


def _ints(values: np.ndarray, typ: pa.DataType = _INT64, nulls: np.ndarray | None = None) -> pa.Array:
    """An int32 or int64 Arrow array of ``values`` (numpy), null where ``nulls`` (bool) is true."""
    data = np.ascontiguousarray(values, dtype=np.int32 if typ == pa.int32() else np.int64)
    if nulls is None or not nulls.any():
        return pa.Array.from_buffers(typ, len(data), [None, pa.py_buffer(data)])
    valid = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(typ, len(data), [valid, pa.py_buffer(data)], int(nulls.sum()))


def _bools(values: np.ndarray) -> pa.BooleanArray:
    """A boolean Arrow array of ``values`` (numpy bool), e.g. a filter mask."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def _numpy(arr: pa.Array) -> np.ndarray:
    """The values of a null-free integer or boolean Arrow array as numpy: a view of an integer
    array's buffer, a boolean array's bits unpacked (``to_numpy`` / ``np.asarray`` would import
    pandas too)."""
    assert arr.null_count == 0, "only null-free arrays"
    n, off, buf = len(arr), arr.offset, arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
        return bits[off : off + n].astype(bool)
    width = arr.type.bit_width // 8
    kind = "i" if pa.types.is_signed_integer(arr.type) else "u"
    return np.frombuffer(buf, dtype=np.dtype(f"<{kind}{width}"), count=n, offset=off * width)


def _texts(items: Sequence[bytes], typ: pa.DataType) -> pa.Array:
    """A ``string`` or ``binary`` Arrow array of ``items`` (already encoded; string items UTF-8).

    Raises:
        ProtocolError: together over 2 GiB (a 32-bit offset column cannot address them).
    """
    lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ProtocolError(f"{offsets[-1]} bytes of values in one batch: over an Arrow column's 2 GiB")
    data = pa.py_buffer(b"".join(items))
    return pa.Array.from_buffers(typ, len(items), [None, pa.py_buffer(offsets.astype(np.int32)), data])


def _repeat_text(value: str, n: int) -> pa.StringArray:
    """``value`` ``n`` times, as a string array."""
    raw = value.encode()
    offsets = (np.arange(n + 1, dtype=np.int64) * len(raw)).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


_SYSTEM_NAMES: Final = _texts([k.encode() for k in sorted(SYSTEM_PROPERTY_NAMES)], pa.string())


def tag_set(tags: frozenset[str]) -> pa.StringArray:
    """``tags`` as a string array (sorted), a ``value_set`` for ``pyarrow.compute.is_in``."""
    return _texts([t.encode() for t in sorted(tags)], pa.string())


_MIN_RECORD: Final = 91
_I32 = struct.Struct(">i")
_R4 = np.arange(4, dtype=np.int64)
_R8 = np.arange(8, dtype=np.int64)
_R12 = np.arange(12, dtype=np.int64)
#: The fixed head of a record: TOTALSIZE … BORNTIMESTAMP (the born host follows).
_HEAD: Final = np.dtype(
    {
        "names": ["total", "magic", "queue_id", "queue_offset", "sys_flag", "born_ts"],
        "formats": [">i4", ">i4", ">i4", ">i8", ">i4", ">i8"],
        "offsets": [0, 4, 12, 20, 36, 40],
        "itemsize": 48,
    }
)
#: RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET and BODYLEN (after the store host).
_MID: Final = np.dtype(
    {"names": ["reconsume", "body_len"], "formats": [">i4", ">i4"], "offsets": [0, 12], "itemsize": 16}
)
_HEX = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)
#: The record walk and the properties split compiled (``protocol/_records.c``; None: not built), and
#: the ones in use (None: the numpy/pyarrow code below, also with ROCKETPIPE_PURE_PYTHON=1).
_compiled_starts_built, _compiled_starts = load("rocketpipe.protocol._records", "record_starts")
_compiled_split_built, _compiled_split = load("rocketpipe.protocol._records", "split_properties")


def _starts(buf: bytes | bytearray | memoryview) -> np.ndarray:
    """:func:`record_starts` as an int64 array (compiled when built; its errors otherwise)."""
    if _compiled_starts is not None:
        raw = _compiled_starts(buf)
        if raw is not None:
            return np.frombuffer(raw, dtype=np.int64)
    return np.asarray(record_starts(buf), dtype=np.int64)


def record_starts(buf: bytes | bytearray | memoryview) -> list[int]:
    """Return the start position of every record of a concatenation (the reference walk).

    Raises:
        ProtocolError: a size field is below the minimum record size or runs past the buffer.
    """
    unpack = _I32.unpack_from
    starts: list[int] = []
    append = starts.append
    pos, n = 0, len(buf)
    try:
        while pos < n:
            append(pos)
            (total,) = unpack(buf, pos)
            if total < _MIN_RECORD:
                raise ProtocolError(f"record at {pos} has size {total}, below the minimum {_MIN_RECORD}")
            pos += total
    except struct.error:
        raise ProtocolError(f"record at {pos} truncated") from None
    if pos != n:
        raise ProtocolError(f"record at {starts[-1]} runs past the buffer ({pos} > {n})")
    return starts


def _windows(a: np.ndarray, width: int) -> np.ndarray:
    """A view of ``a`` whose element ``i`` is the ``width`` bytes ``a[i : i + width]`` (no copy).

    Indexing it with record positions gathers a fixed-width block per record in one numpy call;
    ``.view`` with a big-endian structured dtype then reads every field of the block.
    """
    out: np.ndarray = np.ndarray(
        shape=(max(0, len(a) - width + 1),), dtype=np.dtype((np.void, width)), buffer=a, strides=(1,)
    )
    return out


def _var_array(
    a: np.ndarray, buf: pa.Buffer, pos: np.ndarray, lens: np.ndarray, view_type: pa.DataType, typ: pa.DataType
) -> pa.Array:
    """Build a binary/string array from the slices ``[pos[i], pos[i] + lens[i])`` of ``a``.

    The slices are described as an Arrow *view* array over the original buffer (16-byte views:
    length + 12 inline bytes, or length + 4-byte prefix + buffer index + offset) and cast to the
    plain type, so the only per-row work is numpy's and the copy happens in Arrow's C++ cast.
    """
    n = len(pos)
    views = np.zeros((n, 4), dtype=np.int32)
    views[:, 0] = lens
    short = lens <= 12
    longs = np.flatnonzero(~short)
    if len(longs):
        views[longs, 1] = _windows(a, 4)[pos[longs]].view(np.int32)
        views[longs, 3] = pos[longs]
    shorts = np.flatnonzero(short)
    if len(shorts):
        p, ln = pos[shorts], lens[shorts]
        inline = a[np.minimum(p[:, None] + _R12, len(a) - 1)]
        inline[_R12[None, :] >= ln[:, None]] = 0
        views.view(np.uint8).reshape(n, 16)[shorts, 4:16] = inline
    arr = pa.Array.from_buffers(view_type, n, [None, pa.py_buffer(views), buf])
    return arr.cast(typ)


class _Properties(NamedTuple):
    """The columns taken from the properties strings (one entry per record)."""

    mapped: pa.MapArray
    tags: pa.StringArray
    keys: pa.StringArray
    uniq_key: pa.StringArray
    headers: pa.ListArray


def _properties(props: pa.StringArray) -> _Properties:
    """Split property strings into a map, pick TAGS, KEYS and UNIQ_KEY, and list the user
    properties as Kafka headers (the reference: pyarrow.compute over the strings).

    Returns:
        The map, tags, keys and uniq_key (null where the key is absent) and the headers
        (an empty list for a record without user properties).
    """
    n = len(props)
    segments = pc.split_pattern(props, "\x02")
    flat = segments.flatten()
    parent = _numpy(pc.list_parent_indices(segments)).astype(np.int64)
    kv = pc.split_pattern(flat, "\x01", max_splits=1)
    kv_offsets = _numpy(kv.offsets).astype(np.int64)
    kv_offsets -= kv_offsets[0]
    kv_flat = kv.flatten()
    cand = np.flatnonzero(np.diff(kv_offsets) == 2)
    names = kv_flat.take(_ints(kv_offsets[cand]))
    values = kv_flat.take(_ints(kv_offsets[cand] + 1))
    ok = (_numpy(pc.binary_length(names)) > 0) & (_numpy(pc.binary_length(values)) > 0)
    if not ok.all():
        names, values = names.filter(_bools(ok)), values.filter(_bools(ok))
    idx = cand[ok]
    parent = parent[idx]
    if len(idx):
        # Last duplicate wins (Java's HashMap.put); duplicates only come from merged batch envelopes.
        codes_arr = pc.dictionary_encode(names)
        codes = _numpy(codes_arr.indices).astype(np.int64)
        ndict = len(codes_arr.dictionary)
        combined = parent * ndict + codes
        if np.bincount(combined, minlength=1).max() > 1:
            _, last_rev = np.unique(combined[::-1], return_index=True)
            keep = np.sort(len(combined) - 1 - last_rev)
            names, values, parent, codes = (
                names.take(_ints(keep)),
                values.take(_ints(keep)),
                parent[keep],
                codes[keep],
            )
        dictionary = codes_arr.dictionary.to_pylist()
    else:
        codes = np.zeros(0, dtype=np.int64)
        dictionary = []
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(parent, minlength=n), out=offsets[1:])

    def pick(key: str) -> np.ndarray:
        take = np.full(n, -1, dtype=np.int64)
        if key in dictionary:
            hits = np.flatnonzero(codes == dictionary.index(key))
            take[parent[hits]] = hits
        return take

    return _assemble(names, values, offsets, parent, (pick("TAGS"), pick("KEYS"), pick("UNIQ_KEY")))


def _properties_compiled(split: Any, abuf: pa.Buffer, f: _Fields) -> _Properties | None:
    """:func:`_properties` of the records' property strings, split by ``_records.split_properties``
    straight from the buffer into the names' and values' Arrow buffers (no string column of the
    whole strings); None when a string is not UTF-8 or has more than 256 pairs (the caller then
    takes the reference path, which raises for the first and splits the second)."""
    out = split(abuf, f.props_pos, f.props_len)
    if out is None:
        return None
    offsets_b, name_buffers, value_buffers, picks_b = out
    n = len(f.props_pos)
    offsets = np.frombuffer(offsets_b, dtype=np.int32)
    m = int(offsets[-1])
    names, values = (
        pa.Array.from_buffers(pa.string(), m, [None, pa.py_buffer(o), pa.py_buffer(d)])
        for o, d in (name_buffers, value_buffers)
    )
    parent = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    picks = np.frombuffer(picks_b, dtype=np.int64).reshape(3, n)
    return _assemble(names, values, offsets, parent, (picks[0], picks[1], picks[2]))


def _assemble(
    names: pa.StringArray,
    values: pa.StringArray,
    offsets: np.ndarray,
    parent: np.ndarray,
    picks: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> _Properties:
    """The property columns from the kept pairs: ``names`` / ``values`` in record order,
    ``offsets`` (int32, n + 1) and ``parent`` (record of each pair), and per record the pair of
    TAGS, KEYS and UNIQ_KEY (-1: absent)."""
    n = len(offsets) - 1
    mapped = pa.MapArray.from_arrays(_ints(offsets, pa.int32()), names, values)
    tags, keys, uniq = (values.take(_ints(t, nulls=t < 0)) for t in picks)
    user = _numpy(pc.invert(pc.is_in(names, value_set=_SYSTEM_NAMES)))
    header_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(parent[user], minlength=n), out=header_offsets[1:])
    mask = _bools(user)
    pairs = pa.StructArray.from_arrays(
        [names.filter(mask), values.filter(mask).cast(pa.binary())], fields=list(HEADERS_FIELD.type.value_type)
    )
    headers = pa.ListArray.from_arrays(_ints(header_offsets, pa.int32()), pairs, type=HEADERS_FIELD.type)
    return _Properties(mapped, tags, keys, uniq, headers)


def _offset_msg_ids(
    a: np.ndarray, starts: np.ndarray, store_host_pos: np.ndarray, store_v6: np.ndarray
) -> pa.StringArray:
    """Compute offsetMsgIds (store host bytes + commit-log offset, upper-case hex)."""
    n = len(starts)
    if not store_v6.any():
        raw = np.concatenate([a[store_host_pos[:, None] + _R8], a[(starts + 28)[:, None] + _R8]], axis=1)
        text = _HEX[raw].reshape(n, 32)
        offsets = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text.tobytes())])
    ids: list[bytes] = []
    for s, hp, v6 in zip(starts.tolist(), store_host_pos.tolist(), store_v6.tolist(), strict=False):
        w = 20 if v6 else 8
        ids.append((a[hp : hp + w].tobytes() + a[s + 28 : s + 36].tobytes()).hex().upper().encode())
    return _texts(ids, pa.string())


def _timestamps(ms: np.ndarray) -> pa.Array:
    us = ms * 1000
    return pa.Array.from_buffers(_TS, len(us), [None, pa.py_buffer(us)])


class _Fields(NamedTuple):
    """Per-record fields and positions of a concatenation (numpy int64 arrays, one entry per
    record; positions are byte offsets into the buffer, lengths in bytes)."""

    queue_id: np.ndarray
    queue_offset: np.ndarray
    sys_flag: np.ndarray
    born_ts: np.ndarray  # ms
    store_ts: np.ndarray  # ms
    store_host_pos: np.ndarray
    store_v6: np.ndarray  # bool: the store host is IPv6 (20 bytes)
    reconsume: np.ndarray
    body_pos: np.ndarray
    body_len: np.ndarray
    topic_pos: np.ndarray
    topic_len: np.ndarray
    props_pos: np.ndarray
    props_len: np.ndarray


def _record_fields(a: np.ndarray, s: np.ndarray) -> _Fields:
    """Gather every record's fields at once (``MessageDecoder.decode``'s reads, vectorised).

    Three block gathers (:func:`_windows`) read the fixed head (size … born timestamp), the
    store timestamp and the reconsume-times … body-length block; two more read the topic and
    properties lengths.

    Args:
        a: the buffer as uint8.
        s: record start positions (int64), each the start of a record of at least
            ``_MIN_RECORD`` bytes inside ``a`` (as :func:`record_starts` returns them).

    Raises:
        ProtocolError: a bad magic code, or hosts, body, topic or properties running past their
            record.
    """
    head = _windows(a, _HEAD.itemsize)[s].view(_HEAD)
    total = head["total"].astype(np.int64)
    magic = head["magic"]
    is_v2 = magic == sf.MAGIC_V2
    known = is_v2 | (magic == sf.MAGIC_V1)
    if not known.all():
        bad = int(magic[~known][0])
        raise ProtocolError(f"bad record magic {bad & 0xFFFFFFFF:#x}")
    sys_flag = head["sys_flag"].astype(np.int64)
    end = s + total
    store_ts_pos = s + _HEAD.itemsize + np.where(sys_flag & sf.BORNHOST_V6_FLAG, 20, 8)
    store_host_pos = store_ts_pos + 8
    store_v6 = (sys_flag & sf.STOREHOST_V6_FLAG) != 0
    reconsume_pos = store_host_pos + np.where(store_v6, 20, 8)
    if np.any(reconsume_pos + _MID.itemsize > end):
        raise ProtocolError("record hosts run past the record")
    mid = _windows(a, _MID.itemsize)[reconsume_pos].view(_MID)
    body_len = mid["body_len"].astype(np.int64)
    body_pos = reconsume_pos + _MID.itemsize
    if np.any(body_len < 0) or np.any(body_pos + body_len + 3 > end):
        raise ProtocolError("record body length out of range")
    topic_len_pos = body_pos + body_len
    if is_v2.any():
        topic_len = a[topic_len_pos].astype(np.int64)
        topic_len[is_v2] = _windows(a, 2)[topic_len_pos[is_v2]].view(">i2").astype(np.int64)
        topic_pos = topic_len_pos + np.where(is_v2, 2, 1)
    else:
        topic_len = a[topic_len_pos].astype(np.int64)
        topic_pos = topic_len_pos + 1
    props_len_pos = topic_pos + topic_len
    if np.any(topic_len < 0) or np.any(props_len_pos + 2 > end):
        raise ProtocolError("record topic length out of range")
    props_len = _windows(a, 2)[props_len_pos].view(">i2").astype(np.int64)
    props_pos = props_len_pos + 2
    if np.any(props_len < 0) or np.any(props_pos + props_len > end):
        raise ProtocolError("record properties length out of range")
    return _Fields(
        queue_id=head["queue_id"].astype(np.int64),
        queue_offset=head["queue_offset"].astype(np.int64),
        sys_flag=sys_flag,
        born_ts=head["born_ts"].astype(np.int64),
        store_ts=_windows(a, 8)[store_ts_pos].view(">i8").astype(np.int64),
        store_host_pos=store_host_pos,
        store_v6=store_v6,
        reconsume=mid["reconsume"].astype(np.int64),
        body_pos=body_pos,
        body_len=body_len,
        topic_pos=topic_pos,
        topic_len=topic_len,
        props_pos=props_pos,
        props_len=props_len,
    )


def _bodies(a: np.ndarray, abuf: pa.Buffer, mv: memoryview, f: _Fields) -> pa.Array:
    """The ``body`` column: views into the buffer, or one by one when some body is compressed.

    Raises:
        ProtocolError: a compressed body cannot be decompressed.
    """
    compressed = (f.sys_flag & sf.COMPRESSED_FLAG) != 0
    if not compressed.any():
        return _var_array(a, abuf, f.body_pos, f.body_len, pa.binary_view(), pa.binary())
    bodies: list[bytes] = []
    for p, ln, flag in zip(f.body_pos.tolist(), f.body_len.tolist(), f.sys_flag.tolist(), strict=False):
        chunk = mv[p : p + ln]
        bodies.append(decompress(chunk, flag) if flag & sf.COMPRESSED_FLAG else bytes(chunk))
    return _texts(bodies, pa.binary())


def _repeated(a: np.ndarray, pos: np.ndarray, lens: np.ndarray) -> bytes | None:
    """The bytes every slice ``[pos[i], pos[i] + lens[i])`` holds when they are all equal, else None."""
    width = int(lens[0])
    if not (lens == width).all():
        return None
    if width == 0:
        return b""
    block = _windows(a, width)[pos].view(np.uint8).reshape(-1, width)
    return block[0].tobytes() if (block == block[0]).all() else None


def _topic_column(a: np.ndarray, abuf: pa.Buffer, f: _Fields) -> pa.StringArray:
    """The topic column (UTF-8 checked).

    The records of one queue all carry the queue's topic: that case builds the column from
    one checked string (a single vectorised comparison proves it) instead of per-row views.

    Raises:
        ProtocolError: a topic is not valid UTF-8.
    """
    n = len(f.topic_pos)
    same = _repeated(a, f.topic_pos, f.topic_len)
    try:
        if same is not None and len(same) * n < 2**31:
            same.decode()
            offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(same))
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(same * n)])
        topic = _var_array(a, abuf, f.topic_pos, f.topic_len, pa.string_view(), pa.string())
        topic.validate(full=True)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise ProtocolError(f"record topic is not UTF-8: {exc}") from None
    return topic


def _props_column(a: np.ndarray, abuf: pa.Buffer, f: _Fields) -> pa.StringArray:
    """The properties strings as a column, for the reference :func:`_properties` (UTF-8 checked).

    Raises:
        ProtocolError: a properties string is not valid UTF-8.
    """
    props = _var_array(a, abuf, f.props_pos, f.props_len, pa.string_view(), pa.string())
    try:
        props.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ProtocolError(f"record properties are not UTF-8: {exc}") from None
    return props


def _msg_ids(a: np.ndarray, s: np.ndarray, uniq: pa.StringArray, f: _Fields) -> pa.StringArray:
    """The ``msg_id`` column: ``UNIQ_KEY``, else the offsetMsgId (``MessageClientExt.getMsgId``)."""
    missing = np.flatnonzero(_numpy(uniq.is_null()))
    if len(missing) == 0:
        return uniq
    if len(missing) == len(s):
        return _offset_msg_ids(a, s, f.store_host_pos, f.store_v6)
    offset_ids = _offset_msg_ids(a, s[missing], f.store_host_pos[missing], f.store_v6[missing])
    spread = np.full(len(s), -1, dtype=np.int64)
    spread[missing] = np.arange(len(missing))
    merged: pa.StringArray = pc.coalesce(uniq, offset_ids.take(_ints(spread, nulls=spread < 0)))
    return merged


def _keep_range(
    batch: pa.RecordBatch, queue_offset: np.ndarray, start_offset: int | None, end_offset: int | None
) -> pa.RecordBatch:
    """Drop the rows whose queue offset lies outside ``[start_offset, end_offset)`` (None = open)."""
    if start_offset is None and end_offset is None:
        return batch
    lo = start_offset if start_offset is not None else np.iinfo(np.int64).min
    hi = end_offset if end_offset is not None else np.iinfo(np.int64).max
    keep = (queue_offset >= lo) & (queue_offset < hi)
    return batch if keep.all() else batch.filter(_bools(keep))


def decode_bodies_to_batch(
    bodies: Sequence[bytes | bytearray | memoryview],
    *,
    broker_name: str,
    start_offset: int | None = None,
    end_offset: int | None = None,
    columns: Sequence[str] | None = None,
) -> pa.RecordBatch:
    """Decode several pull bodies of one queue into one Arrow record batch.

    One body is decoded in place (no copy); several are joined first, since every column is
    gathered from one buffer. Arguments and errors as :func:`decode_records_to_batch`.
    """
    buf = bodies[0] if len(bodies) == 1 else b"".join(bodies)
    return decode_records_to_batch(
        buf, broker_name=broker_name, start_offset=start_offset, end_offset=end_offset, columns=columns
    )


#: Columns that need the properties parsed (``msg_id`` falls back to the offsetMsgId).
_PROPERTY_COLUMNS: Final = frozenset({"msg_id", "tags", "keys", "properties", "headers"})


def output_field(name: str) -> pa.Field:
    """The Arrow field of column ``name``: one of :data:`ARROW_SCHEMA` or :data:`HEADERS_FIELD`.

    Raises:
        KeyError: no such column.
    """
    return HEADERS_FIELD if name == HEADERS_FIELD.name else ARROW_SCHEMA.field(name)


def decode_records_to_batch(
    buf: bytes | bytearray | memoryview,
    *,
    broker_name: str,
    start_offset: int | None = None,
    end_offset: int | None = None,
    columns: Sequence[str] | None = None,
) -> pa.RecordBatch:
    """Decode concatenated commit-log records into one Arrow record batch.

    The steps of the module docstring, each once per buffer: :func:`record_starts`,
    :func:`_record_fields` (fixed-width fields and positions), :func:`_bodies` and
    :func:`_topic_column` (variable-width columns), the properties split (compiled, else
    :func:`_properties` of :func:`_props_column`) and :func:`_msg_ids`,
    then :func:`_keep_range`. Steps whose columns are not asked for are skipped.

    Args:
        buf: raw records (one or more pull bodies joined); any contiguous bytes-like object,
            read in place (the batch may keep it alive).
        broker_name: the broker the records were pulled from (not stored in records).
        start_offset: drop records whose queue offset is below this (inclusive start).
        end_offset: drop records whose queue offset is at or above this (exclusive end).
        columns: names of :data:`ARROW_SCHEMA` columns (or ``headers``, :data:`HEADERS_FIELD`)
            to return, in this order; None = all of :data:`ARROW_SCHEMA`.

    Returns:
        A batch with :data:`ARROW_SCHEMA` (or its ``columns``), rows in buffer order.

    Raises:
        ProtocolError: a record is malformed (bad size, magic or lengths), or a compressed body
            cannot be decompressed.
        KeyError: a name in ``columns`` is not a column of :data:`ARROW_SCHEMA` nor ``headers``.
    """
    schema = ARROW_SCHEMA if columns is None else pa.schema([output_field(c) for c in columns])
    if isinstance(buf, memoryview) and (buf.ndim != 1 or buf.itemsize != 1 or not buf.c_contiguous):
        buf = buf.cast("B") if buf.c_contiguous else memoryview(buf.tobytes())
    s = _starts(buf)
    n = len(s)
    if n == 0:
        return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)
    a = np.frombuffer(buf, dtype=np.uint8)
    abuf = pa.py_buffer(buf)
    f = _record_fields(a, s)
    names = set(schema.names)
    arrays: dict[str, pa.Array] = {}
    if "body" in names:
        arrays["body"] = _bodies(a, abuf, memoryview(buf), f)
    if "topic" in names:
        arrays["topic"] = _topic_column(a, abuf, f)
    if names & _PROPERTY_COLUMNS:
        split = _compiled_split
        parsed = None if split is None else _properties_compiled(split, abuf, f)
        if parsed is None:
            parsed = _properties(_props_column(a, abuf, f))
        arrays.update(properties=parsed.mapped, tags=parsed.tags, keys=parsed.keys, headers=parsed.headers)
        if "msg_id" in names:
            arrays["msg_id"] = _msg_ids(a, s, parsed.uniq_key, f)
    fixed = {
        "broker_name": lambda: _repeat_text(broker_name, n),
        "queue_id": lambda: _ints(f.queue_id, pa.int32()),
        "queue_offset": lambda: _ints(f.queue_offset),
        "born_timestamp": lambda: _timestamps(f.born_ts),
        "store_timestamp": lambda: _timestamps(f.store_ts),
        "reconsume_times": lambda: _ints(f.reconsume, pa.int32()),
    }
    batch = pa.RecordBatch.from_arrays(
        [arrays[c] if c in arrays else fixed[c]() for c in schema.names],
        schema=schema,
    )
    return _keep_range(batch, f.queue_offset, start_offset, end_offset)
