"""Recovery: clean restart, crash restart, torn tails, garbage, consume-queue rebuild."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from _store_helpers import SMALL_CL, StepClock, inner, read_queue, small_config

from rocketpipe.store import MessageStore, PutResult, StoreConfig, StoreFileError
from rocketpipe.store.checkpoint import Checkpoint


def crash(store: MessageStore) -> None:
    """Drop a store without close(): what a killed process leaves (abort file, no final flush)."""
    store.commit_log.close()  # unmap so the test can rewrite files; nothing else is cleaned up


def fill(store: MessageStore, n: int, body_size: int = 700, queue_ids: tuple[int, ...] = (0, 1)) -> list[PutResult]:
    out = []
    for i in range(n):
        q = queue_ids[i % len(queue_ids)]
        out.append(store.put_message(inner(queue_id=q, body=bytes([i % 251]) * body_size, tags=f"T{i % 2}")))
    return out


def last_segment(root: Path) -> Path:
    return sorted((root / "commitlog").iterdir())[-1]


def test_clean_restart_trusts_files(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    assert (tmp_path / "abort").exists()
    results = fill(s, 200)
    end = s.get_max_phy_offset()
    s.close()
    assert not (tmp_path / "abort").exists()
    cp = Checkpoint.load(tmp_path / "checkpoint")
    assert cp is not None and cp.master_flushed_offset == end
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == end
        assert s2.get_max_offset("TopicA", 0) == 100 and s2.get_max_offset("TopicA", 1) == 100
        msgs = read_queue(s2, "TopicA", 1)
        assert [m.commit_log_offset for m in msgs] == [r.wrote_offset for r in results[1::2]]
        r = s2.put_message(inner(queue_id=1))
        assert r.queue_offset == 100 and r.wrote_offset >= end


def test_crash_restart_keeps_everything_written(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    fill(s, 50)
    s.flush()
    results = fill(s, 150)  # not flushed: still in the page cache, so on "disk" for the test
    end = s.get_max_phy_offset()
    crash(s)
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == end
        assert s2.get_max_offset("TopicA", 0) == 100
        msgs = read_queue(s2, "TopicA", 0)
        assert [m.queue_offset for m in msgs] == list(range(100))
        assert msgs[-1].commit_log_offset == results[-2].wrote_offset


@pytest.mark.parametrize("cut", [1, 30, 90, 150, 400])
def test_torn_tail_mid_record_is_truncated(tmp_path: Path, cut: int) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    results = fill(s, 40, body_size=300)
    crash(s)
    victim = results[-1]
    seg = last_segment(tmp_path)
    rel = victim.wrote_offset % SMALL_CL
    os.truncate(seg, rel + min(cut, victim.wrote_bytes - 1))  # tear the last record
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == victim.wrote_offset
        assert s2.get_max_offset("TopicA", 1) == 19  # the torn record (queue 1, offset 19) is gone
        assert s2.get_max_offset("TopicA", 0) == 20
        assert [m.queue_offset for m in read_queue(s2, "TopicA", 1)] == list(range(19))
        r = s2.put_message(inner(queue_id=1, body=b"again"))
        assert r.queue_offset == 19 and r.wrote_offset == victim.wrote_offset
        (last,) = read_queue(s2, "TopicA", 1, start=19)
        assert last.body == b"again"
    assert os.path.getsize(seg) == SMALL_CL  # extended back to the segment size


def test_damaged_record_mid_log_is_skipped_and_later_records_kept(tmp_path: Path) -> None:
    """Better than Java's recoverAbnormally (which truncates there): only the damaged record goes."""
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    results = fill(s, 30, body_size=200)
    end = s.get_max_phy_offset()
    crash(s)
    victim = results[20]
    with open(tmp_path / "commitlog" / "00000000000000000000", "r+b") as f:
        f.seek(victim.wrote_offset + 120)
        f.write(b"\xff" * 8)  # corrupt the body: CRC mismatch
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == end
        assert s2.damaged_records == 1
        assert s2.look_message_by_offset(victim.wrote_offset) is None
        assert s2.look_message_by_offset(results[25].wrote_offset) is not None
        assert s2.get_max_offset("TopicA", 0) == 15 and s2.get_max_offset("TopicA", 1) == 15
        assert [m.queue_offset for m in read_queue(s2, "TopicA", 0)] == [*range(10), *range(11, 15)]
        r = s2.put_message(inner(queue_id=0))
        assert r.queue_offset == 15 and r.wrote_offset == end


def test_garbage_after_last_record(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    fill(s, 10)
    end = s.get_max_phy_offset()
    crash(s)
    with open(last_segment(tmp_path), "r+b") as f:
        f.seek(end % SMALL_CL)
        f.write(os.urandom(3000))
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == end
        assert len(read_queue(s2, "TopicA", 0)) == 5
        raw = last_segment(tmp_path).read_bytes()
        assert raw[end % SMALL_CL : end % SMALL_CL + 3000] == bytes(3000)  # garbage zeroed


def test_plausible_stale_record_is_not_resurrected(tmp_path: Path) -> None:
    """A complete copy of a valid record at the wrong position fails the physical-offset check."""
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    r = fill(s, 3)
    end = s.get_max_phy_offset()
    crash(s)
    seg = last_segment(tmp_path)
    raw = seg.read_bytes()
    with open(seg, "r+b") as f:
        f.seek(end)
        f.write(raw[r[0].wrote_offset : r[0].wrote_offset + r[0].wrote_bytes])
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == end


def test_crash_across_segments_and_lost_next_segment(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    results = fill(s, 300, body_size=1000)
    crash(s)
    segs = sorted((tmp_path / "commitlog").iterdir())
    assert len(segs) >= 4
    segs[-1].unlink()  # the newest segment never reached the disk
    segs[-2].unlink()
    start_lost = int(segs[-2].name)
    kept = [r for r in results if r.wrote_offset < start_lost]
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == start_lost
        total = s2.get_max_offset("TopicA", 0) + s2.get_max_offset("TopicA", 1)
        assert total == len(kept)
        assert (
            read_queue(s2, "TopicA", 0)[-1].commit_log_offset
            == list(kept)[-2 if len(kept) % 2 == 0 else -1].wrote_offset
        )
        r = s2.put_message(inner(queue_id=0))
        assert r.wrote_offset == start_lost


def test_consume_queue_rebuilt_when_deleted(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    results = fill(s, 80)
    s.flush()
    crash(s)
    for p in (tmp_path / "consumequeue" / "TopicA" / "1").iterdir():
        p.unlink()
    (tmp_path / "checkpoint").unlink()  # no checkpoint: scan from the first segment
    with MessageStore(cfg) as s2:
        msgs = read_queue(s2, "TopicA", 1)
        assert [m.commit_log_offset for m in msgs] == [r.wrote_offset for r in results[1::2]]
        assert [m.tags for m in msgs] == ["T1"] * 40


def test_consume_queue_entries_beyond_commit_log_are_dropped(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg)
    s.load()
    results = fill(s, 20, body_size=300)
    crash(s)
    cut = results[12].wrote_offset
    os.truncate(last_segment(tmp_path), cut)  # the commit log lost its tail, the CQs did not
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == cut
        assert s2.get_max_offset("TopicA", 0) == 6 and s2.get_max_offset("TopicA", 1) == 6
        for q in (0, 1):
            assert all(m.commit_log_offset < cut for m in read_queue(s2, "TopicA", q))
        assert s2.put_message(inner(queue_id=0)).queue_offset == 6


def test_recovery_after_checkpoint_scans_only_the_tail(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    s = MessageStore(cfg, StepClock())
    s.load()
    fill(s, 200, body_size=1000)
    flushed = s.flush()
    more = fill(s, 10, body_size=1000)
    crash(s)
    cp = Checkpoint.load(tmp_path / "checkpoint")
    assert cp is not None and cp.master_flushed_offset == flushed and cp.physic_msg_timestamp > 0
    with MessageStore(cfg) as s2:
        assert s2.get_max_phy_offset() == more[-1].wrote_offset + more[-1].wrote_bytes
        assert s2.get_max_offset("TopicA", 0) + s2.get_max_offset("TopicA", 1) == 210


def test_repeated_crashes_keep_offsets_consistent(tmp_path: Path) -> None:
    cfg = small_config(tmp_path)
    expected = 0
    for _round in range(4):
        s = MessageStore(cfg)
        s.load()
        assert s.get_max_offset("TopicA", 0) == expected
        r = fill(s, 15, queue_ids=(0,))
        assert r[0].queue_offset == expected
        expected += 15
        crash(s)
    with MessageStore(cfg) as s:
        msgs = read_queue(s, "TopicA", 0)
        assert [m.queue_offset for m in msgs] == list(range(expected))


def test_segment_size_mismatch_is_reported(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        fill(s, 5)
    with pytest.raises(StoreFileError, match="mapped_file_size"):
        MessageStore(small_config(tmp_path, mapped_file_size_commit_log=SMALL_CL // 2)).load()


def test_checkpoint_layout(tmp_path: Path) -> None:
    cfg: StoreConfig = small_config(tmp_path)
    clock = StepClock()
    with MessageStore(cfg, clock) as s:
        fill(s, 3)
        end = s.get_max_phy_offset()
    raw = (tmp_path / "checkpoint").read_bytes()
    assert len(raw) == 4096
    phys_ts, logic_ts, index_ts, flushed, confirm = struct.unpack_from(">qqqqq", raw)
    assert (phys_ts, logic_ts, index_ts, flushed, confirm) == (clock.now, clock.now, 0, end, end)
