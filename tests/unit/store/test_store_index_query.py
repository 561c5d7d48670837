"""Key index through the store: query_message by KEYS / UNIQ_KEY, time ranges, restart and crash recovery."""

from __future__ import annotations

import logging
import os
import shutil
import struct
from pathlib import Path

import pytest
from _store_helpers import SMALL_CL, StepClock, small_config

from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.message import MessageExt, decode_record, properties_to_string
from rocketpipe.store import MessageInner, MessageStore, PutResult, QueryResult
from rocketpipe.store.index import KeyIndex

FOREVER = 1 << 62


def msg(
    topic: str = "TopicA",
    *,
    keys: str | None = None,
    uniq: str | None = None,
    body: bytes = b"x" * 200,
    wire: bool = False,
    sys_flag: int = 0,
    queue_id: int = 0,
) -> MessageInner:
    props: dict[str, str] = {"TAGS": "T"}
    if keys is not None:
        props["KEYS"] = keys
    if uniq is not None:
        props["UNIQ_KEY"] = uniq
    return MessageInner(
        topic,
        queue_id,
        body,
        properties=properties_to_string(props) if wire else props,
        sys_flag=sys_flag,
        born_timestamp=1_600_000_000_000,
        born_host="10.0.0.7:50000",
        store_host="127.0.0.1:10911",
    )


def decoded(r: QueryResult) -> list[MessageExt]:
    return [decode_record(b, 0)[0] for b in r.buffers]


def crash(store: MessageStore) -> None:
    """What a killed process leaves: no final flush, abort file stays."""
    store.commit_log.close()
    if store.index is not None:
        store.index.close()


def fill(store: MessageStore, n: int, start: int = 0) -> list[PutResult]:
    clock = store.clock
    assert isinstance(clock, StepClock)
    out = []
    for i in range(start, start + n):
        out.append(
            store.put_message(msg(keys=f"order-{i} mod{i % 3}", uniq=f"U{i:06d}", wire=bool(i % 2), queue_id=i % 2))
        )
        clock.advance(10)
    return out


def test_keys_and_unique_key_are_indexed_per_topic(tmp_path: Path) -> None:
    clock = StepClock()
    with MessageStore(small_config(tmp_path), clock) as s:
        a = s.put_message(msg(keys="k1 k2  shared", uniq="UA"))
        b = s.put_message(msg(keys="shared", uniq="UB", wire=True))
        c = s.put_message(msg("TopicB", keys="shared", uniq="UC"))
        s.put_message(msg(keys=None, uniq=None))  # nothing to index
        assert [m.commit_log_offset for m in decoded(s.query_message("TopicA", "k1", 64, 0, FOREVER))] == [
            a.wrote_offset
        ]
        assert [m.commit_log_offset for m in decoded(s.query_message("TopicA", "k2", 64, 0, FOREVER))] == [
            a.wrote_offset
        ]
        both = decoded(s.query_message("TopicA", "shared", 64, 0, FOREVER))
        assert [m.commit_log_offset for m in both] == [a.wrote_offset, b.wrote_offset]
        assert [m.body for m in both] == [b"x" * 200] * 2
        assert [m.commit_log_offset for m in decoded(s.query_message("TopicB", "shared", 64, 0, FOREVER))] == [
            c.wrote_offset
        ]
        r = s.query_message("TopicA", "UB", 64, 0, FOREVER, unique=True)
        assert [m.msg_id for m in decoded(r)] == ["UB"]
        assert r.index_last_update_phyoffset == c.wrote_offset and r.index_last_update_timestamp == clock.now
        assert s.query_message("TopicA", "", 64, 0, FOREVER).buffers == []
        assert s.query_message("TopicA", "nope", 64, 0, FOREVER).buffers == []
        assert s.query_message("TopicB", "UA", 64, 0, FOREVER).buffers == []
        assert s.query_message("TopicA", "k1", 0, 0, FOREVER).buffers == []
        # a KEYS word equal to another message's UNIQ_KEY is found by a key query, not a unique one
        s.put_message(msg(keys="UA"))
        assert len(s.query_message("TopicA", "UA", 64, 0, FOREVER).buffers) == 2
        assert [m.msg_id for m in decoded(s.query_message("TopicA", "UA", 64, 0, FOREVER, unique=True))] == ["UA"]


def test_batch_put_indexes_every_message(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        r = s.put_messages([msg(keys=f"b{i} batch", uniq=f"UB{i}") for i in range(5)])
        found = decoded(s.query_message("TopicA", "batch", 64, 0, FOREVER))
        assert [m.commit_log_offset for m in found] == [int(i[-16:], 16) for i in r.msg_ids]
        assert [m.queue_offset for m in decoded(s.query_message("TopicA", "UB3", 64, 0, FOREVER))] == [3]


def test_time_range_is_inclusive_and_newest_win_under_max_num(tmp_path: Path) -> None:
    clock = StepClock(1_000_000)
    with MessageStore(small_config(tmp_path), clock) as s:
        stamps = []
        for _ in range(100):
            stamps.append(clock.now)
            s.put_message(msg(keys="hot"))
            clock.advance(100)
        got = decoded(s.query_message("TopicA", "hot", 1000, 0, FOREVER))
        assert len(got) == 64  # maxMsgsNumBatch
        assert [m.store_timestamp for m in got] == stamps[-64:]  # newest, in commit-log order
        got = decoded(s.query_message("TopicA", "hot", 5, stamps[10], stamps[20]))
        assert [m.store_timestamp for m in got] == stamps[16:21]
        got = decoded(s.query_message("TopicA", "hot", 64, stamps[10], stamps[20]))
        assert [m.store_timestamp for m in got] == stamps[10:21]
        assert s.query_message("TopicA", "hot", 64, stamps[-1] + 1, FOREVER).buffers == []
        assert s.query_message("TopicA", "hot", 64, 0, stamps[0] - 1).buffers == []


def test_rollback_records_are_not_indexed_prepared_ones_are(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        s.put_message(msg(keys="txn", sys_flag=sf.TRANSACTION_ROLLBACK_TYPE))
        p = s.put_message(msg(keys="txn", sys_flag=sf.TRANSACTION_PREPARED_TYPE))
        assert [m.commit_log_offset for m in decoded(s.query_message("TopicA", "txn", 64, 0, FOREVER))] == [
            p.wrote_offset
        ]


def index_files(root: Path) -> list[Path]:
    return sorted((root / "index").iterdir())


def test_index_survives_clean_restart_without_rescan(tmp_path: Path) -> None:
    clock = StepClock()
    cfg = small_config(tmp_path)
    s = MessageStore(cfg, clock)
    s.load()
    results = fill(s, 300)  # rolls over several 64 KiB commit-log segments
    s.put_message(msg(keys=None))  # a keyless tail: the header's endPhyOffset still covers it
    s.close()
    assert [p.name for p in index_files(tmp_path)] and all(len(p.name) == 17 for p in index_files(tmp_path))
    assert not (tmp_path / "keyindex").exists()
    with MessageStore(cfg, clock) as s2:
        assert s2.index is not None
        assert (s2.index.loaded_records, s2.index.rebuilt_records) == (900, 0)  # 3 keys per message
        got = decoded(s2.query_message("TopicA", "order-123", 64, 0, FOREVER))
        assert [m.commit_log_offset for m in got] == [results[123].wrote_offset]
        assert len(s2.query_message("TopicA", "mod1", 1000, 0, FOREVER).buffers) == 64
        assert [m.msg_id for m in decoded(s2.query_message("TopicA", "U000299", 64, 0, FOREVER, unique=True))] == [
            "U000299"
        ]
        r = s2.query_message("TopicA", "order-0", 64, 0, FOREVER)
        assert r.index_last_update_phyoffset == results[-1].wrote_offset
        more = fill(s2, 5, start=300)
        assert [m.commit_log_offset for m in decoded(s2.query_message("TopicA", "order-302", 64, 0, FOREVER))] == [
            more[2].wrote_offset
        ]
    with MessageStore(cfg, clock) as s3:
        assert (s3.index.loaded_records, s3.index.rebuilt_records) == (915, 0)  # type: ignore[union-attr]


def test_index_is_rebuilt_after_a_crash(tmp_path: Path) -> None:
    clock = StepClock()
    cfg = small_config(tmp_path)
    s = MessageStore(cfg, clock)
    s.load()
    fill(s, 50)
    s.flush()
    results = fill(s, 150, start=50)  # queued in memory, never written: the index files lack them
    crash(s)
    with MessageStore(cfg, clock) as s2:
        assert s2.index is not None
        assert s2.index.loaded_records == 150 and s2.index.rebuilt_records == 150
        for i in (0, 49, 50, 199):
            assert [m.msg_id for m in decoded(s2.query_message("TopicA", f"U{i:06d}", 64, 0, FOREVER))] == [f"U{i:06d}"]
        assert len(s2.query_message("TopicA", "mod2", 1000, 0, FOREVER).buffers) == 64
        assert s2.query_message("TopicA", "x", 1, 0, FOREVER).index_last_update_phyoffset == results[-1].wrote_offset
    with MessageStore(cfg, clock) as s3:  # the rebuilt entries were written
        assert (s3.index.loaded_records, s3.index.rebuilt_records) == (600, 0)  # type: ignore[union-attr]


def test_damaged_index_header_and_deleted_index_are_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = StepClock()
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock) as s:
        fill(s, 100)
    (path,) = index_files(tmp_path)
    with open(path, "r+b") as f:  # indexCount (header bytes 36..39) beyond the file's capacity
        f.seek(36)
        f.write(struct.pack(">i", 0x7FFFFFF0))
    with caplog.at_level(logging.WARNING, logger="rocketpipe.store.index"), MessageStore(cfg, clock) as s2:
        assert s2.index is not None and (s2.index.loaded_records, s2.index.rebuilt_records) == (0, 100)
        assert [m.msg_id for m in decoded(s2.query_message("TopicA", "order-99", 64, 0, FOREVER))] == ["U000099"]
        assert len(s2.query_message("TopicA", "mod0", 64, 0, FOREVER).buffers) == 34
    damaged = [r for r in caplog.records if "damaged" in r.getMessage()]
    assert len(damaged) == 1 and "indexCount" in damaged[0].getMessage()
    shutil.rmtree(tmp_path / "index")
    with MessageStore(cfg, clock) as s4:
        assert s4.index is not None and (s4.index.loaded_records, s4.index.rebuilt_records) == (0, 100)
        assert [m.msg_id for m in decoded(s4.query_message("TopicA", "order-7", 64, 0, FOREVER))] == ["U000007"]


def test_an_older_keyindex_directory_is_replaced_by_a_rebuild(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = StepClock()
    cfg = small_config(tmp_path)
    with MessageStore(cfg, clock) as s:
        fill(s, 20)
    shutil.rmtree(tmp_path / "index")
    (tmp_path / "keyindex").mkdir()
    (tmp_path / "keyindex" / "keys.idx").write_bytes(b"\x00" * 64)
    with caplog.at_level(logging.INFO, logger="rocketpipe.store.index"), MessageStore(cfg, clock) as s2:
        assert s2.index is not None and s2.index.rebuilt_records == 20
        assert [m.msg_id for m in decoded(s2.query_message("TopicA", "order-3", 64, 0, FOREVER))] == ["U000003"]
    assert not (tmp_path / "keyindex").exists() and index_files(tmp_path)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "re-indexed 20 messages" in line and "keyindex of an older version" in line


def test_entries_past_a_truncated_commit_log_are_dropped(tmp_path: Path) -> None:
    clock = StepClock()
    cfg = small_config(tmp_path)
    s = MessageStore(cfg, clock)
    s.load()
    results = fill(s, 39)
    s.flush()  # commit log, checkpoint and index up to message 38
    results += fill(s, 1, start=39)
    assert s.index is not None
    s.index.write(*s.index.take_pending(0))  # the index has the victim; the commit log will lose it
    crash(s)
    victim = results[-1]
    seg = sorted((tmp_path / "commitlog").iterdir())[-1]
    os.truncate(seg, victim.wrote_offset % SMALL_CL + 20)  # tear the last record
    with MessageStore(cfg, clock) as s2:
        assert s2.get_max_phy_offset() == victim.wrote_offset
        assert s2.index is not None and s2.index.lookup("TopicA", "order-39") == []
        assert s2.query_message("TopicA", "order-39", 64, 0, FOREVER).buffers == []
        r = s2.put_message(msg(keys="fresh", uniq="UFRESH"))
        assert r.wrote_offset == victim.wrote_offset  # same offset, different message
        assert s2.query_message("TopicA", "order-39", 64, 0, FOREVER).buffers == []
        assert [m.msg_id for m in decoded(s2.query_message("TopicA", "fresh", 64, 0, FOREVER))] == ["UFRESH"]
        assert len(s2.query_message("TopicA", "order-38", 64, 0, FOREVER).buffers) == 1


def test_lookup_keeps_the_newest_and_index_can_be_disabled(tmp_path: Path) -> None:
    idx = KeyIndex(tmp_path / "index", max_hash_slot_num=8, max_index_num=16)
    idx.load(0, lambda start: iter(()))
    for off in range(0, 1000, 100):
        idx.add("T", {"KEYS": "hot", "UNIQ_KEY": f"u{off}"}, off, 0, off)
    assert idx.lookup("T", "hot", max_num=4) == [600, 700, 800, 900]  # queued, not yet written
    idx.write(*idx.take_pending(1000))
    assert idx.lookup("T", "hot", max_num=4) == [600, 700, 800, 900]  # from the files
    assert idx.lookup("T", "u0") == [0]
    idx.close()
    with MessageStore(small_config(tmp_path / "off", message_index_enable=False)) as s:
        s.put_message(msg(keys="k"))
        assert s.index is None
        assert s.query_message("TopicA", "k", 64, 0, FOREVER).buffers == []
    assert not (tmp_path / "off" / "index").exists()
