"""check_record: one reason per broken part of a record, IPv4 and IPv6 hosts, v1 and v2 magic."""

from __future__ import annotations

import struct

import pytest

from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import PHYSICAL_OFFSET_POS, encode_record, properties_to_string
from rocketpipe.store.record_check import MIN_RECORD_SIZE, check_record, record_queue

V6 = sf.BORNHOST_V6_FLAG | sf.STOREHOST_V6_FLAG
OFFSET = 4096


def _rec(sys_flag: int = 0, topic: str = "T", props: dict[str, str] | None = None) -> bytes:
    return encode_record(
        topic=topic,
        body=b"body",
        properties={"A": "b"} if props is None else props,
        queue_id=3,
        queue_offset=9,
        physical_offset=OFFSET,
        sys_flag=sys_flag,
        born_host="[::1]:5555" if sys_flag & sf.BORNHOST_V6_FLAG else "10.0.0.1:5555",
        store_host="[fe80::2]:10911" if sys_flag & sf.STOREHOST_V6_FLAG else "127.0.0.1:10911",
    )


@pytest.mark.parametrize("flags", [0, sf.BORNHOST_V6_FLAG, sf.STOREHOST_V6_FLAG, V6])
@pytest.mark.parametrize("topic", ["T", "%RETRY%" + "t" * 130])
def test_good_records_check_out(flags: int, topic: str) -> None:
    raw = _rec(flags, topic)
    assert check_record(raw, 0, OFFSET) is None
    assert check_record(raw, 0, OFFSET, len(raw)) is None
    assert check_record(b"\0" * 8 + raw, 8, OFFSET, check_crc=False) is None
    assert record_queue(raw) == (topic, 3, 9)
    assert check_record(_rec(flags, topic, props={}), 0, OFFSET) is None


def _patch(raw: bytes, pos: int, fmt: str, value: int) -> bytes:
    b = bytearray(raw)
    struct.pack_into(fmt, b, pos, value)
    return bytes(b)


@pytest.mark.parametrize("flags", [0, V6])
def test_each_broken_part_has_its_reason(flags: int) -> None:
    raw = _rec(flags)
    n = len(raw)
    plen = len(properties_to_string({"A": "b"}).encode())
    blen_pos = 48 + (20 if flags else 8) + 8 + (20 if flags else 8) + 4 + 8
    body_pos = blen_pos + 4
    cases = {
        "truncated": [(raw, -1), (raw[: MIN_RECORD_SIZE - 1], 0), (raw, n - MIN_RECORD_SIZE + 1)],
        "bad magic": [(_patch(raw, 4, ">i", 0x12345678), 0)],
        "bad size": [
            (_patch(raw, 0, ">i", MIN_RECORD_SIZE - 1), 0),
            (_patch(raw, 0, ">i", n + 1), 0),
        ],
        "physical offset mismatch": [(_patch(raw, PHYSICAL_OFFSET_POS, ">q", OFFSET + 1), 0)],
        "bad body length": [(_patch(raw, blen_pos, ">i", -1), 0), (_patch(raw, blen_pos, ">i", n), 0)],
        "body CRC": [(_patch(raw, body_pos, ">B", raw[body_pos] ^ 1), 0)],
        "bad topic": [
            (_patch(raw, body_pos + 4, ">B", 0), 0),  # empty topic
            (_patch(raw, body_pos + 4, ">B", 200), 0),  # runs past the record
        ],
        "bad properties": [(_patch(raw, n - plen - 2, ">h", plen + 1), 0), (raw[:-1] + b"\0", 0)],
    }
    for reason, bufs in cases.items():
        for buf, pos in bufs:
            assert check_record(buf, pos, OFFSET) == reason, (reason, pos)
    assert check_record(raw, 0, OFFSET, n - 1) == "bad size"
    assert check_record(raw, 0, OFFSET + 1) == "physical offset mismatch"
    assert check_record(cases["body CRC"][0][0], 0, OFFSET, check_crc=False) is None
    torn = _patch(raw, 0, ">i", blen_pos + 2)  # TOTALSIZE ends inside the body-length field
    assert check_record(torn + b"\0" * 300, 0, OFFSET) == "bad size"
