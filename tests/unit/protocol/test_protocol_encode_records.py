"""encode_records (the records of one store put), compiled (``_records.encode_records``) and in
Python: the same records, queue slots and offsets, and the same errors, for any messages."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_loops import both_loops, outcome, python_outcome
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol import message
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import decode_record, encode_records

FAST = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

loop = both_loops(message, ("_compiled_records", "_compiled_records_built"))


@dataclass
class Inner:
    """The attributes encode_records reads (the store's MessageInner, without its import)."""

    body: object = b""
    flag: object = 0
    properties: object = field(default_factory=dict)
    sys_flag: object = 0
    born_timestamp: object = 1_700_000_000_000
    born_host: object = "10.0.0.7:51234"
    store_host: object = "127.0.0.1:10911"
    reconsume_times: object = 0
    prepared_transaction_offset: object = 0


def _encode(msgs: list[Inner], topic: str) -> object:
    return encode_records(msgs, topic, 3, 100, 5_000, 1_700_000_000_123)


def _python_loop(msgs: list[Inner], topic: str = "T") -> object:
    """The reference: the Python loop's result, or its error (type and text)."""
    return python_outcome(message, "_compiled_records", _encode, msgs, topic)


def _either(msgs: list[Inner], topic: str = "T") -> object:
    return outcome(_encode, msgs, topic)


prop_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12)
common_props = st.dictionaries(prop_text, prop_text | st.none(), max_size=6) | st.text(max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
hosts = st.sampled_from(["10.0.0.7:51234", "127.0.0.1:10911", "192.168.1.200:0", "[::1]:10911"])
common = st.builds(
    Inner,
    body=st.binary(max_size=64),
    flag=int32,
    properties=common_props,
    sys_flag=int32,
    born_timestamp=int64,
    born_host=hosts,
    store_host=hosts,
    reconsume_times=int32,
    prepared_transaction_offset=int64,
)
# what a caller might hand over by mistake: wrong types, out-of-range ints, long properties
odd_int = st.integers() | st.booleans() | st.none()
odd = st.builds(
    Inner,
    body=st.binary(max_size=8) | st.binary(max_size=8).map(bytearray) | st.binary(max_size=8).map(memoryview),
    flag=odd_int,
    properties=st.dictionaries(st.text(max_size=4) | st.just("\ud800"), st.integers() | st.text(max_size=4))
    | st.just("k\x01" + "v" * 40_000 + "\x02")
    | st.just("\udfff"),
    sys_flag=odd_int,
    born_timestamp=odd_int,
    born_host=hosts | st.just("not a host") | st.none(),
    store_host=hosts,
    reconsume_times=odd_int,
    prepared_transaction_offset=odd_int,
)
topics = st.sampled_from(["T", "中文-topic", "x" * 127, "y" * 128, "z" * 300])


@FAST
@given(st.lists(common, max_size=6), topics)
def test_common_messages_encode_as_the_python_loop_does(msgs: list[Inner], topic: str) -> None:
    _python_loop(msgs, topic)  # fills the topic and host caches, as a first put does
    assert _either(msgs, topic) == _python_loop(msgs, topic)


@FAST
@given(st.lists(odd | common, max_size=4), topics)
def test_any_messages_encode_or_fail_as_the_python_loop_does(msgs: list[Inner], topic: str) -> None:
    _python_loop(msgs, topic)
    assert _either(msgs, topic) == _python_loop(msgs, topic)


def test_records_read_back_with_their_offsets_and_queue_slots() -> None:
    kinds = [
        sf.TRANSACTION_NOT_TYPE,
        sf.TRANSACTION_PREPARED_TYPE,
        sf.TRANSACTION_COMMIT_TYPE,
        sf.TRANSACTION_ROLLBACK_TYPE,
    ]
    msgs = [Inner(body=b"b%d" % i, properties={"TAGS": f"t{i}"}, sys_flag=k) for i, k in enumerate(kinds)]
    _python_loop(msgs)
    records, dispatched, next_qo, total = encode_records(msgs, "T", 3, 100, 5_000, 1_700_000_000_123)
    assert dispatched == [True, False, True, False]
    assert next_qo == 102
    assert total == sum(map(len, records))
    pos = 5_000
    for rec, queue_offset, msg in zip(records, [100, 0, 101, 0], msgs, strict=True):
        ext, end = decode_record(rec)
        assert end == len(rec)
        assert (ext.topic, ext.queue_id, ext.queue_offset, ext.commit_log_offset) == ("T", 3, queue_offset, pos)
        assert (ext.body, ext.properties, ext.store_timestamp) == (
            msg.body,
            {"TAGS": msg.properties["TAGS"]},
            1_700_000_000_123,
        )  # type: ignore[index]
        pos += len(rec)


def test_common_messages_are_encoded_by_the_compiled_loop(loop: str) -> None:
    msgs = [Inner(body=b"x" * i, properties={"UNIQ_KEY": f"u{i}", "\u4e2d": "v", "skip": None}) for i in range(20)]
    reference = _python_loop(msgs)
    compiled = message._compiled_records_built(
        msgs, message._TOPIC_TAILS["T"], message._V4_HOSTS, 3, 100, 5_000, 1_700_000_000_123
    )
    assert compiled is not None  # served, not left to the Python loop
    assert compiled == reference
    spliced = [Inner(body=b"x", properties="UNIQ_KEY\x01u\x02WAIT\x01true\x02")]
    assert _either(spliced) == _python_loop(spliced)


@pytest.mark.parametrize(
    "odd",
    [
        Inner(properties={"k": 1}),
        Inner(body=bytearray(b"a")),
        Inner(flag=True),
        Inner(sys_flag=2**31),
        Inner(born_host="[::1]:10911"),
        Inner(properties="k\x01" + "v" * 40_000 + "\x02"),
    ],
)
def test_uncommon_messages_are_left_to_the_python_loop(odd: Inner, loop: str) -> None:
    _python_loop([odd])
    tail, v4 = message._TOPIC_TAILS["T"], message._V4_HOSTS
    assert message._compiled_records_built([Inner(), odd], tail, v4, 3, 100, 5_000, 1) is None
    assert _either([Inner(), odd]) == _python_loop([Inner(), odd])


def test_properties_over_32767_bytes_raise(loop: str) -> None:
    with pytest.raises(InvalidArgumentError, match="exceed 32767"):
        encode_records([Inner(properties={"k": "v" * 40_000})], "T", 0, 0, 0, 0)
