"""SQL92 wiring pieces: filter-data registry rules, record property reader, SubscriptionData."""

from __future__ import annotations

import struct

import pytest

from rocketpipe.broker.config import BrokerConfig
from rocketpipe.broker.filter.manager import (
    ConsumerFilterManager,
    compile_filter,
    record_properties,
    record_queue_offset,
)
from rocketpipe.broker.filter.sql92 import SQL92ParseError
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.bodies.heartbeat import SubscriptionData
from rocketpipe.protocol.message import decode_record, encode_record


def test_enable_property_filter_defaults_off() -> None:
    assert BrokerConfig().enable_property_filter is False
    assert BrokerConfig(enable_property_filter=True).enable_property_filter is True


def test_subscription_data_sql92_kept_verbatim() -> None:
    sd = SubscriptionData.build("t", "a = 'x||y'", "SQL92", sub_version=7)
    assert sd.expression_type == "SQL92" and sd.sub_string == "a = 'x||y'"
    assert not sd.tags_set and not sd.code_set and not sd.is_sub_all
    assert sd.to_obj()["expressionType"] == "SQL92"
    with pytest.raises(InvalidArgumentError):
        SubscriptionData.build("t", "", "SQL92")


def test_compile_filter_rejects_unknown_type_and_empty() -> None:
    assert compile_filter("SQL92", "a > 1").matches({"a": "2"})
    for t, e in (("FOO", "a > 1"), ("SQL92", ""), ("SQL92", None), ("SQL92", "a >")):
        with pytest.raises(SQL92ParseError):
            compile_filter(t, e)


def _to_v2(rec: bytes, topic: str) -> bytes:
    """Rewrite a v1 record as v2 (2-byte topic length), as a 5.x broker stores long topics."""
    t = topic.encode()
    i = rec.index(bytes([len(t)]) + t, 48)
    out = bytearray(rec[:i] + struct.pack(">h", len(t)) + rec[i + 1 :])
    struct.pack_into(">i", out, 0, len(out))
    struct.pack_into(">i", out, 4, sf.MAGIC_V2)
    return bytes(out)


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("born", ["127.0.0.1:1", "[::1]:1"])
def test_record_properties_reads_only_the_property_field(v2: bool, born: str) -> None:
    rec = encode_record(
        topic="Topic",
        body=b"body\x01\x02",
        properties={"TAGS": "x", "a": "6"},
        queue_id=1,
        queue_offset=42,
        born_host=born,
    )
    if v2:
        rec = _to_v2(rec, "Topic")
    assert record_properties(rec) == {"TAGS": "x", "a": "6"}
    assert record_properties(memoryview(rec)) == {"TAGS": "x", "a": "6"}
    assert record_queue_offset(rec) == 42
    assert record_properties(rec[:60]) == {}
    if v2:
        assert decode_record(rec)[0].properties == {"TAGS": "x", "a": "6"}


def sd(topic: str, expr: str, version: int, type_: str = "SQL92") -> SubscriptionData:
    return SubscriptionData.build(topic, expr, type_, sub_version=version)


def test_manager_register_rules() -> None:
    m = ConsumerFilterManager()
    m.register("g", [sd("t", "a > 1", 10), sd("u", "*", 10, "TAG")])
    fd = m.get("t", "g")
    assert fd is not None and fd.client_version == 10 and fd.compiled.matches({"a": "2"})
    assert m.get("u", "g") is None  # TAG subscriptions have no filter data
    # older or equal version with another expression is ignored
    m.register("g", [sd("t", "a > 100", 10)])
    assert m.get("t", "g").expression == "a > 1"  # type: ignore[union-attr]
    # newer version replaces
    m.register("g", [sd("t", "a > 100", 11)])
    assert m.get("t", "g").expression == "a > 100"  # type: ignore[union-attr]
    # newer version that does not compile removes the entry (pull -> FILTER_DATA_NOT_EXIST)
    m.register("g", [sd("t", "a >", 12)])
    assert m.get("t", "g") is None
    # a bad expression is never registered
    m.register("g2", [sd("t", "a >", 1)])
    assert m.get("t", "g2") is None


def test_manager_marks_dropped_topics_dead_and_revives() -> None:
    m = ConsumerFilterManager()
    m.register("g", [sd("t", "a > 1", 10)], now_ms=100)
    m.register("g", [], now_ms=200)
    fd = m.get("t", "g")
    assert fd is not None and fd.is_dead
    m.register("g", [sd("t", "a > 1", 10)], now_ms=300)
    assert not m.get("t", "g").is_dead  # type: ignore[union-attr]
