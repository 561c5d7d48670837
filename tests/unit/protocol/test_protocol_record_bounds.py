"""decode_record's bounds and slow paths: every length check, IPv6 hosts, the v1/v2 topic-length
width, and the bounded host cache of the IPv4 fast path."""

from __future__ import annotations

import struct

import pytest

from rocketpipe.errors import ProtocolError
from rocketpipe.protocol import message as m
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import BORN_HOST_POS, decode_record, encode_record

V6 = sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG


def _rec(topic: str = "T", body: bytes = b"abc", props: dict[str, str] | None = None, **kw: object) -> bytes:
    return encode_record(
        topic=topic,
        body=body,
        properties={"A": "b"} if props is None else props,
        queue_id=1,
        queue_offset=7,
        physical_offset=1234,
        born_host=str(kw.pop("born_host", "10.0.0.1:5555")),
        store_host=str(kw.pop("store_host", "127.0.0.1:10911")),
        **kw,  # type: ignore[arg-type]
    )


def _with_total(raw: bytes, total: int) -> bytes:
    return struct.pack(">i", total) + raw[4:]


def test_record_position_and_total_size_bounds() -> None:
    raw = _rec()
    with pytest.raises(ProtocolError, match="truncated"):
        decode_record(raw, -1)
    with pytest.raises(ProtocolError, match="truncated"):
        decode_record(raw[:47])
    with pytest.raises(ProtocolError, match="out of range"):
        decode_record(_with_total(raw, 90))  # below the smallest record
    with pytest.raises(ProtocolError, match="out of range"):
        decode_record(_with_total(raw, len(raw) + 1))  # past the buffer
    msg, end = decode_record(b"\0" * 5 + raw, 5)
    assert (msg.topic, msg.body, msg.properties, end) == ("T", b"abc", {"A": "b"}, 5 + len(raw))


def test_properties_length_past_the_record() -> None:
    plen = len(m.properties_to_string({"A": "b"}).encode())
    raw = bytearray(_rec(props={"A": "b"}))
    at = len(raw) - plen - 2
    assert struct.unpack_from(">h", raw, at)[0] == plen
    struct.pack_into(">h", raw, at, plen + 1)
    with pytest.raises(ProtocolError, match="properties length"):
        decode_record(bytes(raw))
    struct.pack_into(">h", raw, at, -1)
    with pytest.raises(ProtocolError, match="properties length"):
        decode_record(bytes(raw))


def test_ipv6_hosts_decode_and_must_fit_the_record() -> None:
    for flags, born, store in (
        (sf.BORNHOST_V6_FLAG, "[::1]:5555", "127.0.0.1:10911"),
        (sf.STOREHOST_V6_FLAG, "10.0.0.1:5555", "[fe80::2]:10911"),
        (V6, "[::1]:5555", "[fe80::2]:10911"),
    ):
        raw = _rec(born_host=born, store_host=store, sys_flag=flags)
        msg, end = decode_record(raw)
        assert (msg.born_host, msg.store_host, msg.body, msg.topic, end) == (
            born.strip("[").replace("]", ""),
            store.strip("[").replace("]", ""),
            b"abc",
            "T",
            len(raw),
        )
        assert msg.offset_msg_id == m.create_offset_msg_id(store, 1234)
    # a record whose TOTALSIZE ends inside its IPv6 host fields
    raw = _rec(born_host="[::1]:5555", store_host="[fe80::2]:10911", sys_flag=V6, body=b"", props={}, topic="T")
    short = _with_total(raw, BORN_HOST_POS + 20 + 8 + 20 + 15) + b"\0" * 200
    with pytest.raises(ProtocolError, match="hosts run past"):
        decode_record(short)


def test_v2_magic_topic_length_is_two_bytes() -> None:
    long_topic = "%RETRY%" + "t" * 130  # over 127 bytes: v2 magic
    raw = _rec(topic=long_topic)
    assert struct.unpack_from(">i", raw, 4)[0] == sf.MAGIC_V2
    assert decode_record(raw)[0].topic == long_topic
    v1 = _rec(topic="t" * 127)
    assert struct.unpack_from(">i", v1, 4)[0] == sf.MAGIC_V1
    assert decode_record(v1)[0].topic == "t" * 127


def test_host_cache_is_bounded_and_exact() -> None:
    m._HOST_CACHE.clear()
    hosts = [f"10.{i >> 8 & 255}.{i & 255}.1:{1000 + i % 7}" for i in range(4100)]
    for h in hosts:
        msg, _ = decode_record(_rec(born_host=h))
        assert msg.born_host == h
        assert len(m._HOST_CACHE) <= 4096
    msg, _ = decode_record(_rec(born_host=hosts[0], store_host="192.168.1.2:10911"))
    assert msg.born_host == hosts[0]
    assert msg.offset_msg_id == m.create_offset_msg_id("192.168.1.2:10911", 1234)
