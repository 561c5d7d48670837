"""A batch is stored from its wire body in one pass, its properties spliced as Java's MessageExtEncoder appends bytes."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from _store_helpers import StepClock, read_queue, small_config
from hypothesis import given
from hypothesis import strategies as st

from compiled_loops import both_loops
from rocketpipe.errors import InvalidArgumentError, ProtocolError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import (
    decode_record,
    encode_record,
    properties_to_string,
    string_to_properties,
    tag_code,
)
from rocketpipe.store import MessageBatch, MessageStore, PutStatus, batch_encoder
from rocketpipe.store.api import property_value
from rocketpipe.store.batch_encoder import batch_inner_properties as _batch_inner_properties
from rocketpipe.store.batch_encoder import decode_inners, encode_batch

CLUSTER = "CLUSTER\x01DefaultCluster\x02"


def _via_dict(props: str, wait: str | None, next_id: object) -> str:
    """What the broker stored before: parse, add the keys, re-serialise."""
    d = string_to_properties(props)
    d.setdefault("UNIQ_KEY", next_id())  # type: ignore[operator]
    if wait is not None:
        d.setdefault("WAIT", wait)
    d["CLUSTER"] = "DefaultCluster"
    return properties_to_string(d)


def test_a_java_client_string_gets_the_broker_keys_appended() -> None:
    props = "KEYS\x01k1\x02UNIQ_KEY\x01AC1100\x02TAGS\x01a\x02"
    out = _batch_inner_properties(props, "true", CLUSTER, lambda: "NEW")
    assert out == props + "WAIT\x01true\x02" + CLUSTER
    assert string_to_properties(out) == {
        "KEYS": "k1",
        "UNIQ_KEY": "AC1100",
        "TAGS": "a",
        "WAIT": "true",
        "CLUSTER": "DefaultCluster",
    }


def test_missing_unique_key_is_made_and_a_missing_last_separator_added() -> None:
    out = _batch_inner_properties("TAGS\x01a", None, CLUSTER, lambda: "NEW")
    assert out == "TAGS\x01a\x02UNIQ_KEY\x01NEW\x02" + CLUSTER
    assert _batch_inner_properties("", None, CLUSTER, lambda: "N") == "UNIQ_KEY\x01N\x02" + CLUSTER


def test_an_existing_cluster_is_replaced_not_doubled() -> None:
    out = _batch_inner_properties("CLUSTER\x01other\x02UNIQ_KEY\x01U\x02", None, CLUSTER, lambda: "NEW")
    assert string_to_properties(out) == {"CLUSTER": "DefaultCluster", "UNIQ_KEY": "U"}
    assert out.count("CLUSTER\x01") == 1


def test_a_key_ending_in_another_name_is_not_mistaken_for_it() -> None:
    out = _batch_inner_properties("MY_UNIQ_KEY\x01x\x02XWAIT\x01y\x02", "false", CLUSTER, lambda: "NEW")
    assert string_to_properties(out) == {
        "MY_UNIQ_KEY": "x", "XWAIT": "y", "UNIQ_KEY": "NEW", "WAIT": "false", "CLUSTER": "DefaultCluster"
    }  # fmt: skip


names = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "a", "DELAY", "MY_UNIQ_KEY"])
values = st.text(alphabet="abcXYZ019 -_", min_size=1, max_size=6)


@given(pairs=st.dictionaries(names, values, max_size=6), wait=st.none() | st.sampled_from(["true", "false"]))
def test_canonical_strings_store_the_same_bytes_as_the_dict_path(pairs: dict[str, str], wait: str | None) -> None:
    props = properties_to_string(pairs)  # what Java and rocketpipe clients send
    spliced = _batch_inner_properties(props, wait, CLUSTER, lambda: "ID")
    assert string_to_properties(spliced) == string_to_properties(_via_dict(props, wait, lambda: "ID"))
    if "CLUSTER" not in pairs:
        assert spliced == _via_dict(props, wait, lambda: "ID")


def test_the_brokers_region_and_trace_switch_replace_a_messages_own() -> None:
    tail = "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02" + CLUSTER
    spliced = _batch_inner_properties("MSG_REGION\x01mine\x02K\x01v", None, tail, lambda: "ID")
    assert string_to_properties(spliced)["MSG_REGION"] == "DefaultRegion"  # the last pair wins on read
    parsed = _batch_inner_properties("CLUSTER\x01other\x02MSG_REGION\x01mine", None, tail, lambda: "ID")
    assert string_to_properties(parsed) == {
        "CLUSTER": "DefaultCluster",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
        "UNIQ_KEY": "ID",
    }


# ---------------------------------------------------------------------------------------------
# encode_batch: one pass over the wire body, byte for byte the general path's records. Every test
# below runs twice: with the compiled loop (setup.py's optional extension, which this project's
# installs build) and with the pure-Python loop that is the reference and the fallback.


loop = both_loops(batch_encoder, ("_compiled", "_compiled_encode"))


STORE_HOSTS = st.sampled_from(["127.0.0.1:10911", "[::1]:10911"])
BORN_HOSTS = st.sampled_from(["10.0.0.7:50000", "[fe80::1]:4000"])
TOPICS = st.sampled_from(["TopicA", "T" * 127, "%RETRY%" + "g" * 130])
prop_names = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "a", "MY_UNIQ_KEY", "XTAGS"])
prop_values = st.text(alphabet="abcé019 -_", min_size=0, max_size=6)
# raw property strings as any client may send them: duplicates, empty values, no last separator
raw_props = st.lists(st.tuples(prop_names, prop_values), max_size=5).map(
    lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs)
) | st.dictionaries(prop_names, prop_values.filter(bool), max_size=5).map(properties_to_string)
entries = st.lists(
    st.tuples(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=40), raw_props), min_size=1, max_size=8
)


def _wire(items: list[tuple[int, bytes, str | bytes]]) -> bytes:
    """A SEND_BATCH_MESSAGE body of (flag, body, properties string) entries."""
    out = []
    for flag, body, props in items:
        pb = props.encode() if isinstance(props, str) else props
        out.append(struct.pack(">iiiii", 22 + len(body) + len(pb), 0, 0, flag, len(body)) + body)
        out.append(struct.pack(">h", len(pb)) + pb)
    return b"".join(out)


def _batch(
    topic: str,
    body: bytes,
    wait: str | None,
    born: str,
    store: str,
    sys_flag: int = 0,
    ids: Iterator[int] | None = None,
) -> MessageBatch:
    ids = itertools.count() if ids is None else ids
    return MessageBatch(
        topic, 3, body, "MSG_REGION\x01R\x02TRACE_ON\x01true\x02" + CLUSTER, wait,
        lambda: f"ID{next(ids):04d}", sys_flag, 1_600_000_000_123, born, store, 2,
    )  # fmt: skip


def _general_path(batch: MessageBatch, qo: int, phys: int, now: int) -> tuple[list[bytes], list[int], list[tuple]]:
    records, codes, keys = [], [], []
    for m in decode_inners(batch):
        rec = encode_record(
            topic=m.topic, body=m.body, properties=m.properties, queue_id=m.queue_id, flag=m.flag,
            queue_offset=qo, physical_offset=phys, sys_flag=m.sys_flag, born_timestamp=m.born_timestamp,
            born_host=m.born_host, store_timestamp=now, store_host=m.store_host, reconsume_times=m.reconsume_times,
        )  # fmt: skip
        records.append(rec)
        codes.append(tag_code(property_value(m.properties, "TAGS")))
        keys.append((property_value(m.properties, "UNIQ_KEY"), property_value(m.properties, "KEYS")))
        qo += 1
        phys += len(rec)
    return records, codes, keys


@given(
    items=entries, topic=TOPICS, wait=st.none() | st.sampled_from(["true", "false"]), born=BORN_HOSTS, store=STORE_HOSTS
)
def test_one_pass_records_equal_the_general_paths_bytes(
    items: list[tuple[int, bytes, str]], topic: str, wait: str | None, born: str, store: str
) -> None:
    body = _wire(items)
    records, codes, keys = _general_path(_batch(topic, body, wait, born, store), 41, 4096, 1_700_000_000_000)
    enc = encode_batch(
        _batch(topic, body, wait, born, store), 41, 4096, 1_700_000_000_000, lambda t: tag_code(t.decode())
    )
    assert enc.records == records
    assert [code for _, _, code in enc.entries] == codes
    assert enc.keys == keys
    assert [(phys, size) for phys, size, _ in enc.entries] == [
        (4096 + sum(map(len, records[:i])), len(r)) for i, r in enumerate(records)
    ]
    assert enc.total == sum(map(len, records))
    for rec in enc.records:  # and every record reads back
        assert decode_record(rec, 0)[1] == len(rec)


def test_a_batch_whose_own_pairs_name_tags_and_keys_indexes_those_last_values() -> None:
    body = _wire([(0, b"x", "TAGS\x01mine\x02KEYS\x01k1\x02UNIQ_KEY\x01U1\x02")])
    b = _batch("TopicA", body, None, "10.0.0.7:50000", "127.0.0.1:10911")
    b.properties += "TAGS\x01theirs\x02KEYS\x01k2\x02UNIQ_KEY\x01U2\x02"
    enc = encode_batch(b, 0, 0, 1, lambda t: tag_code(t.decode()))
    assert enc.entries[0][2] == tag_code("theirs") and enc.keys == [("U2", "k2")]
    assert enc.records == _general_path(b, 0, 0, 1)[0]


def test_the_compiled_loop_serves_common_batches_and_leaves_cluster_ones_untouched() -> None:
    """The C loop encodes a batch whose entries hold no CLUSTER, and returns None for one where
    any entry does, before making a single UNIQ_KEY (the Python loop then parses that entry)."""
    compiled = batch_encoder._compiled_encode
    assert compiled is not None
    made: list[str] = []

    def next_id() -> str:
        made.append(f"ID{len(made):04d}")
        return made[-1]

    def run(items: list[tuple[int, bytes, str]]) -> object:
        tail = b"MSG_REGION\x01R\x02"
        return compiled(_wire(items), b"\x06TopicA", b"\x00" * 44, tail, None, -626843481, 3, 0, 0, next_id, len, True)

    assert run([(0, b"a", ""), (0, b"b", "TAGS\x01t\x02")]) is not None
    assert len(made) == 2
    made.clear()
    assert run([(0, b"a", ""), (0, b"b", "TAGS\x01t\x02CLUSTER\x01c\x02")]) is None
    assert run([(0, b"a", "CLUSTER\x01c")]) is None
    assert made == []
    assert run([(0, b"a", "XCLUSTER\x01c\x02")]) is not None  # a name ending in CLUSTER is not it


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_wire([(0, b"abc", "K\x01v")])[:-1], "out of range"),
        (struct.pack(">iiiii", 10, 0, 0, 0, 0), "size out of range"),
        (struct.pack(">iiiii", 22, 0, 0, 0, 0) + struct.pack(">h", 5), "properties out of range"),
        (_wire([(0, b"", "K\x01v")]) + b"\x00\x00", "bad batch body"),
        (_wire([(0, b"", "")])[:-2] + struct.pack(">h", 2) + b"\xff\xfe", "properties out of range"),
        (_wire([(0, b"", "TAGS\x01ok\x02"), (0, b"", b"K\x01\xff\xfe")]), "bad batch properties"),
        (_wire([(0, b"", b"TAGS\x01\xff\xfe")]), "bad batch properties"),
    ],
)
def test_a_malformed_body_is_refused_whole(body: bytes, reason: str) -> None:
    b = _batch("TopicA", body, None, "10.0.0.7:50000", "127.0.0.1:10911")
    with pytest.raises(ProtocolError, match=reason):
        encode_batch(b, 0, 0, 1, lambda t: 0)


def test_properties_over_32767_bytes_are_refused() -> None:
    body = _wire([(0, b"", "K\x01" + "v" * 32700)])
    with pytest.raises(InvalidArgumentError, match="properties"):
        encode_batch(_batch("TopicA", body, "true", "10.0.0.7:50000", "127.0.0.1:10911"), 0, 0, 1, lambda t: 0)


# ---------------------------------------------------------------------------------------------
# MessageStore.put_batch: the same store as put_messages of the decoded messages


def _store(root: Path, clock: StepClock) -> MessageStore:
    s = MessageStore(small_config(root), clock)
    s.load()
    return s


def _commit_log_bytes(s: MessageStore) -> bytes:
    return b"".join(bytes(seg.view[: seg.end - seg.start]) for seg in s.commit_log.files.segments)


def test_put_batch_stores_what_put_messages_stores_across_a_segment_roll(tmp_path: Path) -> None:
    clock = StepClock()
    fast, general = _store(tmp_path / "fast", clock), _store(tmp_path / "general", clock)
    try:
        items = [(i, bytes([i]) * 700, f"TAGS\x01t{i % 3}\x02KEYS\x01k{i} shared\x02") for i in range(40)]
        fast_ids, general_ids = itertools.count(), itertools.count()
        for start in range(0, 200, 40):  # 5 batches of ~30 KB: the third rolls the 64 KiB segment
            body = _wire(items)
            hosts = ("10.0.0.7:50000", "127.0.0.1:10911")
            a = fast.put_batch(_batch("TopicA", body, "true", *hosts, ids=fast_ids))
            b = general.put_messages(decode_inners(_batch("TopicA", body, "true", *hosts, ids=general_ids)))
            assert a.is_ok and b.is_ok
            assert (a.wrote_offset, a.wrote_bytes, a.msg_ids, a.queue_offset, a.msg_num) == (
                b.wrote_offset, b.wrote_bytes, b.msg_ids, b.queue_offset, b.msg_num
            )  # fmt: skip
            assert a.queue_offset == start
            assert a.tags_codes == [tag_code(f"t{i % 3}") for i in range(40)]
            clock.advance(5)
        assert len(fast.commit_log.files.segments) > 1
        assert _commit_log_bytes(fast) == _commit_log_bytes(general)
        fast_q, general_q = fast._queue("TopicA", 3), general._queue("TopicA", 3)
        assert fast_q is not None and general_q is not None
        assert [fast_q.entry(i) for i in range(200)] == [general_q.entry(i) for i in range(200)]
        msgs = read_queue(fast, "TopicA", 3)
        assert [m.queue_offset for m in msgs] == list(range(200))
        assert all(m.commit_log_offset == fast_q.entry(m.queue_offset)[0] for m in msgs)  # type: ignore[index]
        fast.flush()
        found = fast.query_message("TopicA", "shared", 64, 0, clock.now)
        assert len(found.buffers) == 64
        one = fast.query_message("TopicA", "ID0047", 4, 0, clock.now, unique=True)  # a broker-made UNIQ_KEY
        assert [decode_record(buf, 0)[0].keys for buf in one.buffers] == ["k7 shared"]
    finally:
        fast.close()
        general.close()


def test_a_malformed_batch_is_refused_with_its_reason_and_writes_nothing(tmp_path: Path) -> None:
    s = _store(tmp_path, StepClock())
    try:
        assert s.put_batch(_batch("TopicA", _wire([(0, b"a", "")]), None, "10.0.0.7:50000", "127.0.0.1:10911")).is_ok
        before = (s.commit_log.write_offset, s.get_max_offset("TopicA", 3))
        good = _wire([(0, b"b", "K\x01v\x02")])
        r = s.put_batch(_batch("TopicA", good + good[:-3], None, "10.0.0.7:50000", "127.0.0.1:10911"))
        assert r.status is PutStatus.MESSAGE_ILLEGAL
        assert r.remark == "bad batch body: batch entry size out of range"
        r = s.put_batch(_batch("TopicA", b"", None, "10.0.0.7:50000", "127.0.0.1:10911"))
        assert (r.status, r.remark) == (PutStatus.MESSAGE_ILLEGAL, "bad batch body: empty batch body")
        assert (s.commit_log.write_offset, s.get_max_offset("TopicA", 3)) == before
    finally:
        s.close()


def test_batches_the_one_pass_does_not_serve_take_the_general_path(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, max_message_size=100), StepClock())
    s.load()
    try:
        body = _wire([(0, b"x" * 60, "K\x01v\x02"), (0, b"y" * 60, "K\x01w\x02")])  # 2 × 60 B, 170 B in all
        r = s.put_batch(_batch("TopicA", body, None, "10.0.0.7:50000", "127.0.0.1:10911"))
        assert r.is_ok and r.msg_num == 2 and r.tags_codes is None  # each message checked on its own
        big = _wire([(0, b"z" * 101, "")])
        r = s.put_batch(_batch("TopicA", big, None, "10.0.0.7:50000", "127.0.0.1:10911"))
        assert r.status is PutStatus.MESSAGE_ILLEGAL
        half = _batch("TopicA", _wire([(0, b"h", "")]), None, "10.0.0.7:50000", "127.0.0.1:10911")
        half.sys_flag = sf.TRANSACTION_PREPARED_TYPE
        r = s.put_batch(half)
        assert r.is_ok and s.get_max_offset("TopicA", 3) == 2  # a prepared record gets no queue entry
    finally:
        s.close()


@given(body=st.binary(max_size=120) | entries.map(_wire).flatmap(lambda w: st.integers(0, len(w)).map(lambda k: w[:k])))
def test_any_body_is_encoded_or_refused_with_a_protocol_error(body: bytes) -> None:
    b = _batch("TopicA", body, "true", "10.0.0.7:50000", "127.0.0.1:10911")
    try:
        enc = encode_batch(b, 0, 0, 1, lambda t: tag_code(t.decode()))
    except ProtocolError:
        return
    assert enc.records == _general_path(_batch("TopicA", body, "true", "10.0.0.7:50000", "127.0.0.1:10911"), 0, 0, 1)[0]
