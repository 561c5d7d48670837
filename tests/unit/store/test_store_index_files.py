"""The mapped key index (KeyIndex / IndexFile) on real files, with tiny slot and entry counts."""

from __future__ import annotations

import errno
import logging
import os
import random
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiled_loops import both_loops
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol import sysflag as sf
from rocketpipe.store import index_file
from rocketpipe.store.index import KeyIndex, ScannedRecord
from rocketpipe.store.index_file import HEADER_SIZE, file_size
from rocketpipe.store.index_hash import index_key_hash, index_key_hashes, java_string_hash

loop = both_loops(index_file, ("_compiled_put", "_compiled_put_built"))

SIZE = 100  # bytes of every fake commit-log record
T0 = 1_700_000_000_000


class FakeLog:
    """A commit log as the index sees it: records and ``scan(start)``, remembering the scans."""

    def __init__(self) -> None:
        self.records: list[ScannedRecord] = []
        self.starts: list[int] = []
        self.yielded = 0

    @property
    def end(self) -> int:
        return len(self.records) * SIZE

    def put(self, idx: KeyIndex, props: dict[str, str], ts: int, topic: str = "T", sys_flag: int = 0) -> int:
        offset = self.end
        self.records.append((topic, props, offset, SIZE, sys_flag, ts))
        idx.add(topic, props, offset, sys_flag, ts)
        return offset

    def scan(self, start: int) -> Iterator[ScannedRecord]:
        self.starts.append(start)
        for r in self.records:
            if r[2] >= start:
                self.yielded += 1
                yield r

    def cut(self, n: int) -> None:
        """Lose every record from the ``n``-th on (a torn commit-log tail)."""
        del self.records[n:]


def new_index(root: Path, slots: int = 4, num: int = 8) -> KeyIndex:
    return KeyIndex(root / "index", max_hash_slot_num=slots, max_index_num=num)


def started(root: Path, slots: int = 4, num: int = 8) -> tuple[FakeLog, KeyIndex]:
    """An empty commit log and a loaded index over it."""
    log = FakeLog()
    idx = new_index(root, slots, num)
    idx.load(0, log.scan)
    return log, idx


def reopened(root: Path, log: FakeLog, slots: int = 4, num: int = 8) -> KeyIndex:
    """The index loaded again from its files, as at a restart."""
    idx = new_index(root, slots, num)
    idx.load(log.end, log.scan)
    return idx


def flush(idx: KeyIndex) -> None:
    idx.write(*idx.take_pending(0))


def fill(idx: KeyIndex, log: FakeLog, n: int, start: int = 0, step_ms: int = 250) -> list[int]:
    """``n`` messages with UNIQ_KEY ``u<i>`` and KEYS ``k<i % 5>``, flushed every 7 messages."""
    offsets = []
    for i in range(start, start + n):
        offsets.append(log.put(idx, {"UNIQ_KEY": f"u{i}", "KEYS": f"k{i % 5}"}, T0 + i * step_ms))
        if i % 7 == 6:
            flush(idx)
    flush(idx)
    return offsets


def entries(idx: KeyIndex) -> int:
    return sum(f.entry_count for f in idx.files)


def test_java_string_hash_matches_known_java_values() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0  # Math.abs(MIN_VALUE) stays negative: 0
    assert java_string_hash("\u00e9") == 233
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units
    assert index_key_hash("topic#key") == abs(java_string_hash("topic#key"))


def test_batch_hashes_equal_one_by_one_hashes() -> None:
    rnd = random.Random(7)
    keys = [f"TopicA#{rnd.getrandbits(128):032X}" for _ in range(300)]  # one length: the lane path
    keys += [f"T#{'x' * rnd.randrange(1, 60)}{rnd.random()}" for _ in range(200)]
    keys += ["T#\u00e9\u00e8", "T#\U0001f600", "polygenelubricants"] * 30
    keys += ["polygenelubricants"[::-1]] * 40
    expected = []
    for k in keys:
        h = 0
        for unit in struct.unpack(f">{len(k.encode('utf-16-be')) // 2}H", k.encode("utf-16-be")):
            h = (h * 31 + unit) % 2**32
        signed = h - 2**32 if h >= 2**31 else h
        expected.append(0 if signed == -(2**31) else abs(signed))
    assert index_key_hashes(keys) == expected
    assert [index_key_hash(k) for k in keys] == expected


def test_keys_spread_over_several_files_and_survive_a_reload(tmp_path: Path) -> None:
    log, idx = started(tmp_path)
    offsets = fill(idx, log, 40)
    assert entries(idx) == 80 and len(idx.files) == 12  # 7 entries per file
    names = [f.name for f in idx.files]
    assert names == sorted(names) and all(len(n) == 17 and n.isdigit() for n in names)
    assert all(p.stat().st_size == file_size(4, 8) for p in (tmp_path / "index").iterdir())
    slots = {index_key_hash(f"T#k{j}") % 4 for j in range(5)}
    assert len(slots) < 5  # some keys share a slot: their chains interleave

    def answers(ix: KeyIndex) -> list[list[int]]:
        return [ix.lookup("T", f"u{i}") for i in range(40)] + [ix.lookup("T", f"k{j}") for j in range(5)]

    before = answers(idx)
    assert before[:40] == [[o] for o in offsets]
    assert before[40 + 3] == [offsets[i] for i in range(3, 40, 5)]
    assert idx.lookup("T", "k3", max_num=3) == [offsets[i] for i in (28, 33, 38)]
    assert idx.lookup("T", "nope") == [] and idx.lookup("Other", "k3") == []
    assert (idx.last_offset, idx.last_timestamp) == (offsets[-1], T0 + 39 * 250)
    idx.close()

    again = reopened(tmp_path, log)
    assert answers(again) == before
    assert (again.loaded_records, again.rebuilt_records) == (80, 0)
    assert log.starts[-1] == offsets[-1] and log.yielded == 1  # only the last message was looked at
    assert (again.last_offset, again.last_timestamp) == (offsets[-1], T0 + 39 * 250)
    again.close()


def test_slot_and_entry_counts_are_checked(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="max_index_num"):
        KeyIndex(tmp_path / "index", max_index_num=1)
    with pytest.raises(InvalidArgumentError, match="max_hash_slot_num"):
        KeyIndex(tmp_path / "index", max_hash_slot_num=0)


def test_colliding_keys_are_both_returned_for_the_caller_to_filter(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 16, 64)
    a = log.put(idx, {"KEYS": "Aa"}, T0)
    b = log.put(idx, {"KEYS": "BB"}, T0 + 1)
    assert idx.lookup("T", "Aa") == [a]  # queued keys match exactly
    flush(idx)
    assert idx.lookup("T", "Aa") == idx.lookup("T", "BB") == [a, b]  # same String.hashCode
    idx.close()


def test_time_range_selects_by_one_second_buckets_and_skips_nothing_in_range(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 4, 8)
    stamps = {}
    for i in range(60):
        ts = T0 + 123 + i * 700
        stamps[log.put(idx, {"KEYS": "hot"}, ts)] = ts
        if i % 5 == 4:
            flush(idx)
    flush(idx)
    assert len(idx.files) == 9
    for begin, end in (
        (T0 + 5_000, T0 + 9_000),
        (T0 + 20_450, T0 + 20_460),
        (T0, T0 + 100),
        (T0 + 41_000, T0 + 99_000),
    ):
        got = idx.lookup("T", "hot", max_num=1000, begin_ts=begin, end_ts=end)
        exact = [o for o, ts in stamps.items() if begin <= ts <= end]
        assert set(exact) <= set(got)
        assert all(begin - 999 <= stamps[o] <= end + 999 for o in got)
    for o, ts in stamps.items():  # a range of one millisecond still finds its message
        assert o in idx.lookup("T", "hot", max_num=1000, begin_ts=ts, end_ts=ts)
    assert idx.lookup("T", "hot", max_num=1000, begin_ts=T0 + 100_000, end_ts=T0 + 200_000) == []
    idx.close()


def test_crash_leaves_the_index_behind_and_only_the_tail_is_reindexed(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 8, 32)
    written = fill(idx, log, 30)
    queued = [log.put(idx, {"UNIQ_KEY": f"u{i}", "KEYS": f"k{i % 5}"}, T0 + i * 250) for i in range(30, 45)]
    idx.close()  # like a killed process: the queued keys never reach the files
    again = reopened(tmp_path, log, 8, 32)
    assert log.starts[-1] == written[-1] and log.yielded == 16
    assert (again.loaded_records, again.rebuilt_records) == (60, 15)
    assert entries(again) == 90
    assert [again.lookup("T", f"u{i}") for i in (0, 29, 30, 44)] == [
        [written[0]],
        [written[29]],
        [queued[0]],
        [queued[-1]],
    ]
    assert again.lookup("T", "k4") == [o for i, o in enumerate(written + queued) if i % 5 == 4]
    again.close()


def test_keyless_messages_move_the_restart_point(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 8, 32)
    fill(idx, log, 5)
    tail = [log.put(idx, {"TAGS": "t"}, T0 + 10_000 + i) for i in range(50)]
    log.put(idx, {"KEYS": "rolled"}, T0 + 20_000, sys_flag=sf.TRANSACTION_ROLLBACK_TYPE)  # never indexed
    flush(idx)
    idx.close()
    again = reopened(tmp_path, log, 8, 32)
    assert log.starts[-1] == tail[-1] + SIZE and log.yielded == 1 and again.rebuilt_records == 0
    assert again.lookup("T", "rolled") == []
    again.close()


def test_a_batch_cut_short_before_its_header_is_undone_and_redone(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 8, 64)
    fill(idx, log, 6)
    (path,) = (tmp_path / "index").iterdir()
    idx.sync()
    header = path.read_bytes()[:HEADER_SIZE]
    more = [log.put(idx, {"UNIQ_KEY": f"u{i}", "KEYS": f"k{i % 5}"}, T0 + i * 250) for i in range(6, 12)]
    flush(idx)  # entries and slots written ...
    idx.close()
    with open(path, "r+b") as f:  # ... but the process died before the header was updated
        f.write(header)
    again = reopened(tmp_path, log, 8, 64)
    assert (again.loaded_records, again.rebuilt_records) == (12, 6)
    assert entries(again) == 24  # each key once: the half-written entries were undone first
    assert again.lookup("T", "k1") == [o for i, o in enumerate(range(0, 12 * SIZE, SIZE)) if i % 5 == 1]
    assert again.lookup("T", "u11") == [more[-1]]
    again.close()


def test_a_message_split_across_two_files_is_not_indexed_twice(tmp_path: Path) -> None:
    log = FakeLog()
    idx = new_index(tmp_path, slots=4, num=4)  # 3 entries per file
    idx.load(0, log.scan)
    a = log.put(idx, {"UNIQ_KEY": "ua", "KEYS": "x"}, T0)
    b = log.put(idx, {"UNIQ_KEY": "ub", "KEYS": "y z"}, T0 + 5)  # keys 3..5: file 1 then file 2
    flush(idx)
    assert [f.entry_count for f in idx.files] == [3, 2]
    idx.close()
    again = reopened(tmp_path, log, 4, 4)
    assert again.rebuilt_records == 0 and entries(again) == 5
    assert [again.lookup("T", k) for k in ("ua", "x", "ub", "y", "z")] == [[a], [a], [b], [b], [b]]
    again.close()


def test_damaged_file_is_rebuilt_from_the_commit_log_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log, idx = started(tmp_path)
    offsets = fill(idx, log, 40)
    second = idx.files[1]
    first_end = idx.files[0].end_phy_offset
    idx.close()
    with open(second.path, "r+b") as f:  # endPhyOffset (bytes 24..31) below beginPhyOffset
        f.seek(24)
        f.write(struct.pack(">q", -5))
    again = new_index(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rocketpipe.store.index"):
        again.load(log.end, log.scan)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and second.name in warnings[0] and "10 later files" in warnings[0]
    assert log.starts[-1] == first_end
    assert (again.loaded_records, entries(again)) == (7, 80)
    assert [again.lookup("T", f"u{i}") for i in range(40)] == [[o] for o in offsets]
    again.close()
    os.truncate(again.directory / sorted(os.listdir(again.directory))[0], 100)  # wrong size: rebuilt too
    third = reopened(tmp_path, log)
    assert log.starts[-1] == 0 and third.rebuilt_records == 40 and entries(third) == 80
    third.close()


def test_entries_at_or_past_the_commit_log_end_are_dropped(tmp_path: Path) -> None:
    log, idx = started(tmp_path)
    offsets = fill(idx, log, 40)
    idx.close()
    log.cut(30)  # the commit log lost messages 30..39
    again = reopened(tmp_path, log)
    assert entries(again) == 60 and again.rebuilt_records == 0
    assert again.lookup("T", "u29") == [offsets[29]] and again.lookup("T", "u30") == []
    assert again.lookup("T", "k0") == [offsets[i] for i in range(0, 30, 5)]
    fresh = log.put(again, {"UNIQ_KEY": "fresh", "KEYS": "k0"}, T0 + 99_000)  # reuses offset 3000
    flush(again)
    assert fresh == offsets[30] and again.lookup("T", "u30") == [] and again.lookup("T", "fresh") == [fresh]
    again.close()


def test_delete_expired_removes_whole_old_files_but_never_the_last(tmp_path: Path) -> None:
    log, idx = started(tmp_path)
    offsets = fill(idx, log, 40)
    files = idx.files
    cut = files[4].end_phy_offset + 1
    assert idx.delete_expired(files[0].end_phy_offset) == 0
    assert idx.delete_expired(cut) == 5
    assert [f.name for f in idx.files] == [f.name for f in files[5:]]
    assert sorted(os.listdir(tmp_path / "index")) == [f.name for f in files[5:]]
    assert idx.lookup("T", "u0") == [] and idx.lookup("T", "u39") == [offsets[39]]
    assert idx.delete_expired(1 << 62) == 6 and len(idx.files) == 1
    assert idx.lookup("T", "u39") == [offsets[39]]
    idx.close()


def test_lookups_racing_the_writer_always_see_every_added_key(tmp_path: Path) -> None:
    log, idx = started(tmp_path, 4, 16)  # 15 entries per file: files are created during the race
    put_lock = threading.Lock()  # the store's put lock
    added = 0
    done = threading.Event()

    def writer() -> None:
        nonlocal added
        try:
            for i in range(1500):
                with put_lock:
                    log.put(idx, {"UNIQ_KEY": f"u{i}"}, T0 + i)
                    added = i + 1
                if i % 7 == 6:
                    with put_lock:
                        taken = idx.take_pending(0)
                    idx.write(*taken)  # the flush thread: outside the put lock
        finally:
            done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often
    t = threading.Thread(target=writer)
    t.start()
    checked = 0
    try:
        while not done.is_set():
            n = added
            for i in {0, n // 2, n - 1} if n else ():
                assert idx.lookup("T", f"u{i}") == [i * SIZE], (i, n)
                checked += 1
    finally:
        t.join()
        sys.setswitchinterval(old)
    assert checked > 0 and len(idx.files) == 100
    idx.close()


def test_a_full_disk_fails_the_write_and_the_next_write_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, idx = started(tmp_path, 4, 8)
    offsets = fill(idx, log, 5)
    queued = [log.put(idx, {"UNIQ_KEY": f"u{i}", "KEYS": f"k{i % 5}"}, T0 + i * 250) for i in range(5, 12)]
    real = os.posix_fallocate

    def disk_full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", disk_full)
    with pytest.raises(OSError, match="No space"):
        flush(idx)  # needs a new file: its header block cannot be reserved
    assert idx.lookup("T", "u11") == [queued[-1]]  # still answered from memory
    monkeypatch.setattr(os, "posix_fallocate", real)
    flush(idx)
    assert entries(idx) == 24
    assert [idx.lookup("T", f"u{i}") for i in range(12)] == [[o] for o in offsets + queued]
    idx.close()
