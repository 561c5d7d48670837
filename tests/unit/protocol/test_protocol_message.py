"""Message encodings: records (IPv4/IPv6, compressed, V2 magic), batches, properties, ids, hashes."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpipe.errors import InvalidArgumentError, ProtocolError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.compression import compress_zlib, decompress
from rocketpipe.protocol.message import (
    Message,
    MessageQueue,
    UniqueIdGenerator,
    create_offset_msg_id,
    create_offset_msg_ids,
    decode_batch,
    decode_offset_msg_id,
    decode_record,
    decode_records,
    encode_host,
    encode_record,
    iter_record_spans,
    java_string_hash,
    properties_to_string,
    store_timestamp_pos,
    string_to_properties,
    tag_code,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# property names/values: no separators, non-empty (Java drops empty names/values)
prop_text = st.text(
    st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=15
)
props = st.dictionaries(prop_text, prop_text, max_size=6)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
ipv6 = st.binary(min_size=16, max_size=16).map(
    lambda b: "[" + ":".join(b[i : i + 2].hex() for i in range(0, 16, 2)) + "]"
)
hosts = st.tuples(ipv4 | ipv6, st.integers(0, 65535)).map(lambda t: f"{t[0]}:{t[1]}")
topics = st.text(st.characters(whitelist_categories=("Lu", "Ll", "Nd"), max_codepoint=127), min_size=1, max_size=200)
i64 = st.integers(0, 2**62)


@pytest.mark.parametrize(
    ("s", "h"),
    [("", 0), ("a", 97), ("ab", 3105), ("hello", 99162322), ("polygenelubricants", -(2**31)), ("\U0001f600", 1772899)],
)
def test_java_string_hash_known_values(s: str, h: int) -> None:
    assert java_string_hash(s) == h


def test_tag_code() -> None:
    assert tag_code(None) == tag_code("") == 0
    assert tag_code("TagA") == java_string_hash("TagA")


@FAST
@given(props)
def test_properties_round_trip(p: dict[str, str]) -> None:
    s = properties_to_string(p)
    assert s == "".join(f"{k}\x01{v}\x02" for k, v in p.items())
    assert string_to_properties(s) == p


def test_properties_java_parsing_rules() -> None:
    assert string_to_properties("a\x01b\x02\x01x\x02y\x01\x02zz\x02k\x01v") == {"a": "b", "k": "v"}
    assert string_to_properties("") == {}
    assert properties_to_string({"a": "1", "b": None}) == "a\x011\x02"  # type: ignore[dict-item]


@FAST
@given(
    topic=topics,
    body=st.binary(max_size=500),
    p=props,
    born=hosts,
    store=hosts,
    queue_id=st.integers(0, 2**31 - 1),
    qoff=i64,
    poff=i64,
    ts=i64,
    flag=st.integers(-(2**31), 2**31 - 1),
    reconsume=st.integers(0, 1000),
    compressed=st.booleans(),
)
def test_record_round_trip(
    topic: str,
    body: bytes,
    p: dict[str, str],
    born: str,
    store: str,
    queue_id: int,
    qoff: int,
    poff: int,
    ts: int,
    flag: int,
    reconsume: int,
    compressed: bool,
) -> None:
    stored = compress_zlib(body) if compressed else body
    sys_flag = (sf.COMPRESSED_FLAG | sf.COMPRESSION_ZLIB) if compressed else 0
    raw = encode_record(
        topic=topic,
        body=stored,
        properties=p,
        queue_id=queue_id,
        flag=flag,
        queue_offset=qoff,
        physical_offset=poff,
        sys_flag=sys_flag,
        born_timestamp=ts,
        born_host=born,
        store_timestamp=ts + 1,
        store_host=store,
        reconsume_times=reconsume,
        prepared_transaction_offset=poff // 2,
    )
    (magic,) = struct.unpack_from(">i", raw, 4)
    assert magic == (sf.MAGIC_V2 if len(topic.encode()) > 127 else sf.MAGIC_V1)
    assert struct.unpack_from(">q", raw, store_timestamp_pos(struct.unpack_from(">i", raw, 36)[0]))[0] == ts + 1
    msg, end = decode_record(b"junk" + raw + b"tail", 4)
    assert end == 4 + len(raw) == 4 + msg.store_size
    assert (msg.topic, msg.body, msg.properties, msg.queue_id, msg.flag) == (topic, body, p, queue_id, flag)
    assert (msg.queue_offset, msg.commit_log_offset, msg.born_timestamp, msg.store_timestamp) == (
        qoff,
        poff,
        ts,
        ts + 1,
    )
    assert (msg.reconsume_times, msg.prepared_transaction_offset) == (reconsume, poff // 2)
    assert encode_host(msg.born_host) == encode_host(born)
    assert encode_host(msg.store_host) == encode_host(store)
    assert msg.sys_flag & sf.COMPRESSED_FLAG == 0
    assert bool(msg.sys_flag & sf.BORNHOST_V6_FLAG) == ("[" in born)
    assert bool(msg.sys_flag & sf.STOREHOST_V6_FLAG) == ("[" in store)
    assert msg.offset_msg_id == create_offset_msg_id(store, poff)
    assert decode_offset_msg_id(msg.offset_msg_id) == (msg.store_host, poff)
    assert len(msg.offset_msg_id) == (56 if "[" in store else 32)
    raw_msg, _ = decode_record(raw, decompress_body=False)
    assert raw_msg.body == stored
    assert raw_msg.body_crc == zlib.crc32(stored) & 0x7FFFFFFF


def test_records_concatenation_and_spans() -> None:
    recs = [
        encode_record(topic=f"T{i}", body=b"x" * i, properties={"UNIQ_KEY": f"K{i}"}, queue_id=i, queue_offset=i)
        for i in range(5)
    ]
    buf = b"".join(recs)
    msgs = decode_records(buf)
    assert [m.queue_offset for m in msgs] == list(range(5))
    assert [m.msg_id for m in msgs] == [f"K{i}" for i in range(5)]
    spans = list(iter_record_spans(buf))
    assert [e - s for s, e in spans] == [len(r) for r in recs]
    with pytest.raises(ProtocolError):
        decode_records(buf[:-1])
    with pytest.raises(ProtocolError):
        list(iter_record_spans(buf[:-1]))


def test_record_rejects_bad_magic_and_inner_lengths() -> None:
    raw = bytearray(encode_record(topic="T", body=b"abc", properties={"A": "b"}, queue_id=0))
    bad_magic = bytearray(raw)
    bad_magic[4:8] = b"\x00\x00\x00\x01"
    with pytest.raises(ProtocolError, match="magic"):
        decode_record(bytes(bad_magic))
    body_len_pos = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8
    bad_len = bytearray(raw)
    bad_len[body_len_pos : body_len_pos + 4] = (10**6).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="body length"):
        decode_record(bytes(bad_len))
    long_topic = bytearray(raw)
    long_topic[body_len_pos + 4 + 3] = 200  # topic length byte runs past the record
    with pytest.raises(ProtocolError, match="topic"):
        decode_record(bytes(long_topic))


def test_corrupt_compressed_body_is_protocol_error() -> None:
    raw = encode_record(topic="T", body=b"not zlib", properties={}, queue_id=0, sys_flag=sf.COMPRESSED_FLAG)
    with pytest.raises(ProtocolError):
        decode_record(raw)
    assert decode_record(raw, decompress_body=False)[0].body == b"not zlib"


def test_decompress_zlib_type_bits() -> None:
    data = compress_zlib(b"payload" * 10)
    assert (
        decompress(data, sf.COMPRESSED_FLAG)
        == decompress(data, sf.COMPRESSED_FLAG | sf.COMPRESSION_ZLIB)
        == b"payload" * 10
    )


def test_encode_record_limits() -> None:
    with pytest.raises(InvalidArgumentError):
        encode_record(topic="T" * 256, body=b"", properties={}, queue_id=0)
    with pytest.raises(InvalidArgumentError):
        encode_record(topic="T", body=b"", properties={"k": "v" * 40000}, queue_id=0)
    with pytest.raises(InvalidArgumentError):
        encode_record(topic="T", body=b"", properties={}, queue_id=0, born_host="localhost:1")
    with pytest.raises(InvalidArgumentError):
        encode_host("1.2.3.4:99999999999")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_decode_record_fuzz(data: bytes) -> None:
    try:
        decode_record(data)
    except ProtocolError:
        pass


@FAST
@given(st.data())
def test_decode_record_mutation_fuzz(data: st.DataObject) -> None:
    raw = bytearray(
        encode_record(
            topic=data.draw(topics),
            body=data.draw(st.binary(max_size=40)),
            properties=data.draw(props),
            queue_id=1,
            born_host=data.draw(hosts),
            store_host=data.draw(hosts),
            sys_flag=data.draw(st.sampled_from([0, sf.COMPRESSED_FLAG])),
        )
    )
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        decode_records(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_decode_batch_fuzz(data: bytes) -> None:
    try:
        decode_batch(data)
    except ProtocolError:
        pass


@given(
    host=st.sampled_from(["10.0.0.1:10911", "127.0.0.1:1", "[2001:db8::7]:10911"]),
    offsets=st.lists(st.integers(0, 2**63 - 1), max_size=40),
)
def test_offset_msg_ids_of_a_batch_equal_one_by_one_ids(host: str, offsets: list[int]) -> None:
    prefix = create_offset_msg_id(host, 0)[:-16]
    assert create_offset_msg_ids(prefix, offsets) == [create_offset_msg_id(host, o) for o in offsets]


def test_offset_msg_id_rejects_garbage() -> None:
    for bad in ("xyz", "00", "0A" * 20):
        with pytest.raises(InvalidArgumentError):
            decode_offset_msg_id(bad)


def test_unique_ids_are_unique_hex() -> None:
    gen = UniqueIdGenerator(b"\x0a\x00\x00\x05")
    ids = [gen.next_id() for _ in range(70000)]
    assert all(re.fullmatch(r"[0-9A-F]{32}", i) for i in ids[:100])
    assert ids[0].startswith("0A000005")
    assert len(set(ids[:65535])) == 65535


def test_a_batch_of_unique_ids_shares_one_time_part_and_continues_the_counter() -> None:
    gen = UniqueIdGenerator(b"\x0a\x00\x00\x05")
    first = gen.next_id()
    batch = gen.next_ids(1000)
    after = gen.next_id()
    assert len(batch) == 1000 and all(re.fullmatch(r"[0-9A-F]{32}", i) for i in batch)
    assert len({i[:28] for i in batch}) == 1  # one clock read: prefix + ms since the month began
    counters = [int(i[28:], 16) for i in (first, *batch, after)]
    assert counters == list(range(counters[0], counters[0] + 1002))  # the same counter as next_id


def test_message_build_and_queue_order() -> None:
    m = Message.build("T", "hi", tags="a", keys=["k1", "k2"], delay_time_level=3)
    assert (m.body, m.tags, m.keys, m.delay_time_level, m.properties["WAIT"]) == (b"hi", "a", "k1 k2", 3, "true")
    with pytest.raises(InvalidArgumentError):
        Message.build("T", b"", properties={"TAGS": "x"})
    qs = [MessageQueue("T", "b", 2), MessageQueue("S", "z", 9), MessageQueue("T", "a", 5)]
    assert sorted(qs) == [MessageQueue("S", "z", 9), MessageQueue("T", "a", 5), MessageQueue("T", "b", 2)]
    assert MessageQueue.from_json(qs[0].to_json()) == qs[0]
