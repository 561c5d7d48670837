"""Put/get behaviour of MessageStore: round trip, rollover, batches, every GetStatus, filters."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest
from _store_helpers import SMALL_CL, StepClock, decode_all, inner, read_queue, small_config

from rocketpipe.errors import ClientClosedError, InvalidArgumentError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import (
    QUEUE_OFFSET_POS,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_records,
    tag_code,
)
from rocketpipe.store import GetStatus, MessageInner, MessageStore, PutStatus, StoreConfig
from rocketpipe.store.consume_queue import ConsumeQueue


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def store(tmp_path: Path, clock: StepClock):
    s = MessageStore(small_config(tmp_path), clock)
    s.load()
    yield s
    s.close()


def test_put_get_round_trip_decodes_every_field(store: MessageStore, clock: StepClock) -> None:
    r = store.put_message(inner(body=b"payload-1", tags="TagA", flag=7, reconsume_times=2))
    assert r.status is PutStatus.PUT_OK and r.is_ok
    assert (r.wrote_offset, r.queue_offset, r.msg_num, r.store_timestamp) == (0, 0, 1, clock.now)
    g = store.get_message("TopicA", 0, 0, 32)
    assert g.status is GetStatus.FOUND
    assert (g.next_begin_offset, g.min_offset, g.max_offset, g.message_count) == (1, 0, 1, 1)
    assert g.buffer_total_size == r.wrote_bytes == len(g.buffers[0])
    (m,) = decode_all(g)
    assert m.topic == "TopicA" and m.body == b"payload-1" and m.flag == 7
    assert m.tags == "TagA" and m.keys == "k" and m.reconsume_times == 2
    assert m.queue_offset == 0 and m.commit_log_offset == 0 and m.store_size == r.wrote_bytes
    assert m.store_timestamp == clock.now and m.born_timestamp == 1_600_000_000_000
    assert m.born_host == "10.0.0.7:50000" and m.store_host == "127.0.0.1:10911"
    assert m.offset_msg_id == r.msg_ids[0] == create_offset_msg_id("127.0.0.1:10911", 0)


def test_offsets_and_msg_ids_advance(store: MessageStore) -> None:
    results = [store.put_message(inner(body=bytes([i]) * 10)) for i in range(5)]
    assert [r.queue_offset for r in results] == [0, 1, 2, 3, 4]
    for a, b in itertools.pairwise(results):
        assert b.wrote_offset == a.wrote_offset + a.wrote_bytes
    for r in results:
        assert decode_offset_msg_id(r.msg_ids[0]) == ("127.0.0.1:10911", r.wrote_offset)
    assert store.get_max_offset("TopicA", 0) == 5
    assert store.get_max_phy_offset() == results[-1].wrote_offset + results[-1].wrote_bytes
    assert store.topics() == ["TopicA"] and store.queue_ids("TopicA") == [0]


def test_queues_are_independent(store: MessageStore) -> None:
    store.put_message(inner(queue_id=0))
    store.put_message(inner(queue_id=3))
    store.put_message(inner(topic="TopicB", queue_id=3))
    r = store.put_message(inner(queue_id=3))
    assert r.queue_offset == 1
    assert store.queue_ids("TopicA") == [0, 3] and store.topics() == ["TopicA", "TopicB"]
    assert [m.queue_offset for m in read_queue(store, "TopicA", 3)] == [0, 1]


def test_segment_rollover_writes_blank_and_names_files(store: MessageStore, tmp_path: Path) -> None:
    body = b"x" * 3000
    results = [store.put_message(inner(body=body)) for i in range(60)]
    assert all(r.is_ok for r in results)
    # no record straddles a segment
    for r in results:
        assert r.wrote_offset // SMALL_CL == (r.wrote_offset + r.wrote_bytes - 1) // SMALL_CL
    files = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
    assert files[:2] == ["00000000000000000000", "00000000000000065536"]
    first_in_second = next(r for r in results if r.wrote_offset >= SMALL_CL)
    assert first_in_second.wrote_offset == SMALL_CL
    last_in_first = results[results.index(first_in_second) - 1]
    end = last_in_first.wrote_offset + last_in_first.wrote_bytes
    raw = (tmp_path / "commitlog" / files[0]).read_bytes()
    assert struct.unpack_from(">ii", raw, end) == (SMALL_CL - end, sf.BLANK_MAGIC)
    msgs = read_queue(store, "TopicA", 0)
    assert [m.queue_offset for m in msgs] == list(range(60))
    assert [m.commit_log_offset for m in msgs] == [r.wrote_offset for r in results]
    assert all(m.body == body for m in msgs)


def test_consume_queue_files_and_entries(store: MessageStore, tmp_path: Path) -> None:
    for i in range(120):  # 50 entries per CQ file -> 3 files
        store.put_message(inner(tags=f"T{i % 3}"))
    qdir = tmp_path / "consumequeue" / "TopicA" / "0"
    assert sorted(p.name for p in qdir.iterdir()) == [
        "00000000000000000000",
        "00000000000000001000",
        "00000000000000002000",
    ]
    raw = (qdir / "00000000000000001000").read_bytes()
    phys, size, code = struct.unpack_from(">qiq", raw, 20 * 3)  # queue offset 53
    look = store.look_message_by_offset(phys)
    assert look is not None and look.queue_offset == 53 and look.store_size == size
    assert code == tag_code(f"T{53 % 3}")


def test_get_stops_at_consume_queue_file_end(store: MessageStore) -> None:
    for _ in range(60):
        store.put_message(inner())
    g = store.get_message("TopicA", 0, 45, 32)
    assert g.status is GetStatus.FOUND and g.message_count == 5 and g.next_begin_offset == 50


def test_batch_put_consecutive_offsets_one_write(store: MessageStore) -> None:
    store.put_message(inner())
    batch = [inner(body=b"b%d" % i, tags="B") for i in range(10)]
    r = store.put_messages(batch)
    assert r.is_ok and r.msg_num == 10 and r.queue_offset == 1 and len(r.msg_ids) == 10
    msgs = read_queue(store, "TopicA", 0)[1:]
    assert [m.queue_offset for m in msgs] == list(range(1, 11))
    assert [m.body for m in msgs] == [b"b%d" % i for i in range(10)]
    assert msgs[0].commit_log_offset == r.wrote_offset
    assert sum(m.store_size for m in msgs) == r.wrote_bytes
    assert [m.offset_msg_id for m in msgs] == r.msg_ids


def test_batch_rolls_as_a_whole(store: MessageStore) -> None:
    filler = store.put_message(inner(body=b"f" * (SMALL_CL - 5000)))
    r = store.put_messages([inner(body=b"z" * 1000) for _ in range(8)])
    assert filler.is_ok and r.is_ok and r.wrote_offset == SMALL_CL
    msgs = read_queue(store, "TopicA", 0)
    assert [m.commit_log_offset for m in msgs[1:]] == [int(decode_offset_msg_id(i)[1]) for i in r.msg_ids]
    assert msgs[1].commit_log_offset == SMALL_CL


def test_batch_must_share_queue(store: MessageStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.put_messages([inner(queue_id=0), inner(queue_id=1)])
    with pytest.raises(InvalidArgumentError):
        store.put_messages([])


def test_put_rejections(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, max_message_size=1000))
    assert s.put_message(inner()).status is PutStatus.SERVICE_NOT_AVAILABLE
    s.load()
    assert s.put_message(inner(body=b"x" * 1001)).status is PutStatus.MESSAGE_ILLEGAL
    assert s.put_message(inner(topic="t" * 128)).status is PutStatus.MESSAGE_ILLEGAL
    assert s.put_message(inner(topic="%RETRY%" + "g" * 130)).status is PutStatus.PUT_OK
    big_props = MessageInner("TopicA", 0, b"x", properties={"K": "v" * 40000})
    assert s.put_message(big_props).status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    for bad_topic in ("..", "a/b", "a\\b"):
        assert s.put_message(inner(topic=bad_topic)).status is PutStatus.MESSAGE_ILLEGAL
    assert not (tmp_path / "a").exists()
    bad_host = MessageInner("TopicA", 0, b"x", born_host="nohost")
    assert s.put_message(bad_host).status is PutStatus.MESSAGE_ILLEGAL
    too_big_batch = [inner(body=b"x" * 900) for _ in range(80)]  # > one 64 KiB segment
    assert s.put_messages(too_big_batch).status is PutStatus.MESSAGE_ILLEGAL
    assert s.get_max_offset("TopicA", 0) == 0  # nothing was written by the rejected puts
    s.close()
    assert s.put_message(inner()).status is PutStatus.SERVICE_NOT_AVAILABLE
    with pytest.raises(ClientClosedError):
        s.get_message("TopicA", 0, 0, 1)


def test_prepared_transaction_not_dispatched(store: MessageStore) -> None:
    r = store.put_message(inner(sys_flag=sf.TRANSACTION_PREPARED_TYPE))
    assert r.is_ok and r.queue_offset == 0
    assert store.get_max_offset("TopicA", 0) == 0
    rec = store.look_message_by_offset(r.wrote_offset)
    assert rec is not None and rec.queue_offset == 0
    r2 = store.put_message(inner(sys_flag=sf.TRANSACTION_COMMIT_TYPE))
    assert r2.queue_offset == 0 and store.get_max_offset("TopicA", 0) == 1


def test_arrival_listener(store: MessageStore) -> None:
    seen: list[tuple[str, int, int]] = []
    store.arrival_listener = lambda t, q, m: seen.append((t, q, m))
    store.put_message(inner(queue_id=2))
    store.put_messages([inner(queue_id=2), inner(queue_id=2)])
    store.put_message(inner(queue_id=2, sys_flag=sf.TRANSACTION_PREPARED_TYPE))
    assert seen == [("TopicA", 2, 1), ("TopicA", 2, 3)]


# ---------------------------------------------------------------------------- statuses (§2.8)


def test_status_no_matched_logic_queue(store: MessageStore) -> None:
    g = store.get_message("Nope", 0, 5, 32)
    assert g.status is GetStatus.NO_MATCHED_LOGIC_QUEUE and g.next_begin_offset == 0 and g.buffers == []


def test_status_no_message_in_queue(store: MessageStore) -> None:
    store.put_message(inner(sys_flag=sf.TRANSACTION_PREPARED_TYPE))  # creates the queue, no entry
    g = store.get_message("TopicA", 0, 3, 32)
    assert g.status is GetStatus.NO_MESSAGE_IN_QUEUE and g.next_begin_offset == 0 and g.max_offset == 0


def test_status_overflow_one_and_badly(store: MessageStore) -> None:
    for _ in range(3):
        store.put_message(inner())
    one = store.get_message("TopicA", 0, 3, 32)
    assert one.status is GetStatus.OFFSET_OVERFLOW_ONE and one.next_begin_offset == 3
    badly = store.get_message("TopicA", 0, 9, 32)
    assert badly.status is GetStatus.OFFSET_OVERFLOW_BADLY and badly.next_begin_offset == 3
    assert (badly.min_offset, badly.max_offset) == (0, 3)


def test_status_offset_too_small_and_found_null(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    with MessageStore(cfg) as s:
        for _ in range(120):
            s.put_message(inner())
    # retention is not implemented; emulate a trimmed queue by deleting its first CQ file
    (tmp_path / "consumequeue" / "TopicA" / "0" / "00000000000000000000").unlink()
    with MessageStore(cfg) as s:
        assert s.get_min_offset("TopicA", 0) == 50
        small = s.get_message("TopicA", 0, 10, 32)
        assert small.status is GetStatus.OFFSET_TOO_SMALL and small.next_begin_offset == 50
        assert s.get_message("TopicA", 0, 50, 1).status is GetStatus.FOUND


def test_status_found_null_when_file_missing(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, tmp_path / "cq", 100)
    cq.write_pos = 200  # five entries per file; entries claimed but no file mapped
    assert cq.entries_in_file(7, 10) is None
    assert cq.roll_next_file(7) == 10


def test_status_no_matched_message_and_filter_skips(store: MessageStore) -> None:
    for i in range(10):
        store.put_message(inner(tags="A" if i in (3, 7) else "B"))
    want = tag_code("A")
    flt = lambda code: code == want  # noqa: E731
    g = store.get_message("TopicA", 0, 0, 32, tag_filter=flt)
    assert g.status is GetStatus.FOUND
    assert [m.queue_offset for m in decode_all(g)] == [3, 7]
    assert g.next_begin_offset == 10  # filtered entries count as scanned
    none = store.get_message("TopicA", 0, 8, 32, tag_filter=flt)
    assert none.status is GetStatus.NO_MATCHED_MESSAGE and none.next_begin_offset == 10 and none.buffers == []


def test_filter_scan_window_bounds_progress(tmp_path: Path) -> None:
    with MessageStore(
        small_config(tmp_path, mapped_file_size_consume_queue=20 * 2000, max_filter_message_size=200)
    ) as s:
        for _ in range(30):
            s.put_message(inner(tags="B"))
        g = s.get_message("TopicA", 0, 0, 5, tag_filter=lambda c: False)
        # window = max(200 bytes, 5 * 20) = 10 entries
        assert g.status is GetStatus.NO_MATCHED_MESSAGE and g.next_begin_offset == 10


def test_max_msg_nums_and_byte_caps(tmp_path: Path) -> None:
    cfg = small_config(
        tmp_path, max_transfer_count_on_message_in_memory=4, max_transfer_bytes_on_message_in_memory=10_000
    )
    with MessageStore(cfg) as s:
        sizes = [s.put_message(inner(body=b"x" * 1000)).wrote_bytes for _ in range(20)]
        g = s.get_message("TopicA", 0, 0, 2)
        assert g.message_count == 2 and g.next_begin_offset == 2
        g = s.get_message("TopicA", 0, 0, 32)
        assert g.message_count == 4 and g.next_begin_offset == 4  # count cap of the config
        g = s.get_message("TopicA", 0, 5, 3, max_total_bytes=2 * sizes[0] + 10)
        assert g.message_count == 2 and g.next_begin_offset == 7
        g = s.get_message("TopicA", 0, 5, 3, max_total_bytes=1)
        assert g.message_count == 1 and g.next_begin_offset == 6  # at least one message


def test_message_was_removing(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        s.put_message(inner())
        s.put_message(inner())
        # fake a CQ entry pointing past the commit log (as after commit-log deletion)
        cq = s._queue("TopicA", 0)
        assert cq is not None
        cq.append(10**9, 100, 0)
        g = s.get_message("TopicA", 0, 2, 32)
        assert g.status is GetStatus.MESSAGE_WAS_REMOVING and g.next_begin_offset == 3


# ---------------------------------------------------------------------------- time lookups


def test_timestamps_and_offset_by_time(store: MessageStore, clock: StepClock) -> None:
    assert store.get_earliest_message_time("TopicA", 0) == -1
    assert store.get_offset_by_timestamp("TopicA", 0, 0) == 0
    stamps = []
    for i in range(100):
        if i % 10 == 0:
            clock.advance(1000)
        stamps.append(clock.now)
        store.put_message(inner())
    t0 = stamps[0]
    assert store.get_earliest_message_time("TopicA", 0) == t0
    assert store.get_store_timestamp("TopicA", 0, 42) == stamps[42]
    assert store.get_store_timestamp("TopicA", 0, 100) == -1
    assert store.get_offset_by_timestamp("TopicA", 0, t0 - 1) == 0  # all newer -> min
    assert store.get_offset_by_timestamp("TopicA", 0, t0) == 0
    assert store.get_offset_by_timestamp("TopicA", 0, t0 + 1) == 10  # first >= ts
    assert store.get_offset_by_timestamp("TopicA", 0, t0 + 5000) == 50
    assert store.get_offset_by_timestamp("TopicA", 0, stamps[-1]) == 90
    assert store.get_offset_by_timestamp("TopicA", 0, stamps[-1] + 1) == 100  # all older -> max


def test_look_message_by_offset(store: MessageStore) -> None:
    r = store.put_message(inner(body=b"abc"))
    m = store.look_message_by_offset(r.wrote_offset)
    assert m is not None and m.body == b"abc" and m.commit_log_offset == r.wrote_offset
    assert store.look_message_by_offset(r.wrote_offset + 1) is None
    assert store.look_message_by_offset(10**12) is None


def test_schedule_topic_tags_code_is_delivery_time(store: MessageStore, clock: StepClock) -> None:
    m = MessageInner("SCHEDULE_TOPIC_XXXX", 2, b"d", properties={"DELAY": "3", "TAGS": "x"})
    store.put_message(m)
    cq = store._queue("SCHEDULE_TOPIC_XXXX", 2)
    assert cq is not None and cq.entry(0) == (0, store.get_max_phy_offset(), clock.now + 10_000)
    given = MessageInner("SCHEDULE_TOPIC_XXXX", 2, b"d", properties={"DELAY": "3"}, tags_code=12345)
    store.put_message(given)
    assert cq.entry(1)[2] == 12345  # type: ignore[index]


def test_string_properties_accepted(store: MessageStore) -> None:
    m = MessageInner("TopicA", 0, b"s", properties="TAGS\x01TagS\x02KEYS\x01a b\x02")
    store.put_message(m)
    g = store.get_message("TopicA", 0, 0, 1, tag_filter=lambda c: c == tag_code("TagS"))
    (msg,) = decode_all(g)
    assert msg.tags == "TagS" and msg.keys == "a b"


def test_queue_offset_field_written(store: MessageStore) -> None:
    for _ in range(3):
        store.put_message(inner())
    g = store.get_message("TopicA", 0, 2, 1)
    assert struct.unpack_from(">q", g.buffers[0], QUEUE_OFFSET_POS)[0] == 2


def test_config_validation(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="flush_disk_type"):
        StoreConfig(root_dir=tmp_path, flush_disk_type="SOMETIMES")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="multiple of 20"):
        StoreConfig(root_dir=tmp_path, mapped_file_size_consume_queue=1001)
    with pytest.raises(InvalidArgumentError, match="at least"):
        StoreConfig(root_dir=tmp_path, mapped_file_size_commit_log=100)
    with pytest.raises(InvalidArgumentError, match="max_message_size"):
        StoreConfig(root_dir=tmp_path, max_message_size=0)
    with pytest.raises(InvalidArgumentError, match="message_delay_level"):
        StoreConfig(root_dir=tmp_path, message_delay_level="1s 5x")
    cfg = StoreConfig(root_dir=str(tmp_path))  # type: ignore[arg-type]
    assert cfg.root_dir == tmp_path and cfg.mapped_file_size_commit_log == 1 << 30
    assert cfg.mapped_file_size_consume_queue == 6_000_000 and cfg.max_message_size == 4 << 20
    assert cfg.delay_levels_ms[:3] == (1000, 5000, 10_000) and cfg.delay_levels_ms[-1] == 7_200_000


def test_blank_entries_are_skipped(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        s.put_message(inner(body=b"first"))
        cq = s._queue("TopicA", 0)
        assert cq is not None
        cq.fill_blanks_to(3)
        s.put_message(inner(body=b"after"))  # queue offset 3, after two blanks
        g = s.get_message("TopicA", 0, 1, 32)
        assert g.status is GetStatus.FOUND and [m.body for m in decode_all(g)] == [b"after"]
        assert g.next_begin_offset == 4


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ("TAGS\x01a\x02KEYS\x01b\x02", "a"),
        ("XTAGS\x01z\x02TAGS\x01a\x02", "a"),
        ("XTAGS\x01z\x02", None),
        ("TAGS\x01a\x02TAGS\x01c", "c"),  # last duplicate wins
        ("KEYS\x01TAGS\x01\x02", None),
        ("", None),
    ],
)
def test_tags_from_wire_properties_string(tmp_path: Path, props: str, expected: str | None) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        s.put_message(MessageInner("TopicA", 0, b"x", properties=props))
        cq = s._queue("TopicA", 0)
        assert cq is not None and cq.entry(0)[2] == tag_code(expected)  # type: ignore[index]


def test_get_gives_runs_of_back_to_back_records(store: MessageStore) -> None:
    """Besides one view per record, a get without a tag filter gives ``runs``: one view per run of
    records lying back to back in the commit log (the pull body is their concatenation);
    ``per_message=False`` leaves out the per-record views; a tag filter takes the per-entry loop,
    which gives no runs."""
    store.put_messages([inner(queue_id=0, body=bytes([i]) * 50) for i in range(4)])
    g = store.get_message("TopicA", 0, 0, 32)
    assert g.status is GetStatus.FOUND and g.message_count == 4 and g.runs is not None
    assert len(g.runs) == 1 and bytes(g.runs[0]) == b"".join(g.buffers)
    assert len(g.runs[0]) == g.buffer_total_size
    store.put_message(inner(queue_id=1, body=b"other"))
    store.put_message(inner(queue_id=0, body=b"after"))
    g = store.get_message("TopicA", 0, 0, 32, per_message=False)
    assert g.message_count == 5 and g.buffers == [] and g.runs is not None and len(g.runs) == 2
    joined = b"".join(g.runs)
    assert len(joined) == g.buffer_total_size and g.next_begin_offset == 5
    assert [m.body for m in decode_records(joined)] == [bytes([i]) * 50 for i in range(4)] + [b"after"]
    g = store.get_message("TopicA", 0, 0, 3, tag_filter=lambda _code: True)
    assert g.message_count == 3 and g.runs is None
