"""Flushing: ASYNC vs SYNC semantics, thread safety of flush() against puts, json_file atomicity."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest
from _store_helpers import inner, read_queue, small_config

from rocketpipe.errors import ClientClosedError
from rocketpipe.store import MessageStore, load_json, save_json


@pytest.mark.parametrize("flush_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_put_does_not_flush_and_flush_covers_the_put(tmp_path: Path, flush_type: str) -> None:
    with MessageStore(small_config(tmp_path, flush_disk_type=flush_type)) as s:
        start = s.flushed_offset
        r = s.put_message(inner())
        assert s.flushed_offset == start  # no fsync inline, whatever the mode
        flushed = s.flush()
        assert flushed == s.flushed_offset == r.wrote_offset + r.wrote_bytes
        assert s.flush() == flushed  # idempotent


def test_flush_least_pages_threshold(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        r = s.put_message(inner(body=b"x" * 100))
        assert s.flush(least_pages=4) == 0  # fewer than 4 dirty pages: nothing synced
        for _ in range(20):
            r = s.put_message(inner(body=b"x" * 1000))
        assert s.flush(least_pages=4) == r.wrote_offset + r.wrote_bytes


def test_flush_commit_log_only_leaves_checkpoint(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as s:
        s.put_message(inner())
        before = (tmp_path / "checkpoint").read_bytes() if (tmp_path / "checkpoint").exists() else b""
        s.flush(consume_queues=False)
        after = (tmp_path / "checkpoint").read_bytes() if (tmp_path / "checkpoint").exists() else b""
        assert before == after
        s.flush()
        assert (tmp_path / "checkpoint").read_bytes() != before


def test_flush_in_worker_thread_while_putting(tmp_path: Path) -> None:
    """Group-commit shape: a worker flushes repeatedly while the owner thread appends."""
    with MessageStore(small_config(tmp_path)) as s:
        stop = threading.Event()
        flushed: list[int] = []
        errors: list[BaseException] = []

        def flusher() -> None:
            try:
                while not stop.is_set():
                    flushed.append(s.flush())
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=flusher)
        t.start()
        try:
            results = [s.put_message(inner(queue_id=i % 3, body=b"y" * 500)) for i in range(600)]
        finally:
            stop.set()
            t.join(timeout=30)
        assert not t.is_alive() and errors == []
        assert flushed == sorted(flushed)  # monotonic
        end = results[-1].wrote_offset + results[-1].wrote_bytes
        assert s.flush() == end
        assert sum(len(read_queue(s, "TopicA", q)) for q in range(3)) == 600


def test_close_is_idempotent_and_flush_after_close_raises(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path))
    s.load()
    s.put_message(inner())
    s.close()
    s.close()
    assert s.is_closed
    with pytest.raises(ClientClosedError):
        s.flush()


def test_reads_survive_close_with_outstanding_buffers(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path))
    s.load()
    s.put_message(inner(body=b"held"))
    held = s.get_message("TopicA", 0, 0, 1).buffers
    s.close()  # must not raise although a reader still holds a view
    assert b"held" in bytes(held[0])


# ---------------------------------------------------------------------------- json_file


def test_save_and_load_json_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "config" / "consumerOffset.json"
    assert load_json(p) is None
    save_json(p, {"offsetTable": {"T@g": {"0": 5}}})
    assert load_json(p) == {"offsetTable": {"T@g": {"0": 5}}}
    assert not (tmp_path / "config" / "consumerOffset.json.tmp").exists()


def test_save_json_keeps_previous_as_bak(tmp_path: Path) -> None:
    p = tmp_path / "topics.json"
    save_json(p, {"v": 1})
    save_json(p, {"v": 2})
    assert orjson.loads((tmp_path / "topics.json.bak").read_bytes()) == {"v": 1}
    assert load_json(p) == {"v": 2}


def test_load_json_falls_back_to_bak(tmp_path: Path) -> None:
    p = tmp_path / "delayOffset.json"
    save_json(p, {"v": 1})
    save_json(p, {"v": 2})
    p.write_bytes(b'{"v": 3, "trunc')  # torn write of the main file
    assert load_json(p) == {"v": 1}
    p.unlink()
    assert load_json(p) == {"v": 1}
    p.write_bytes(b"")
    assert load_json(p) == {"v": 1}


def test_save_json_failure_leaves_old_file(tmp_path: Path) -> None:
    p = tmp_path / "groups.json"
    save_json(p, {"ok": True})
    with pytest.raises(TypeError):
        save_json(p, {"bad": object()})
    assert load_json(p) == {"ok": True}


def test_save_json_concurrent_saves_of_one_file_do_not_share_a_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    p = tmp_path / "topics.json"
    save_json(p, {"v": 0})
    barrier = threading.Barrier(2, timeout=10)
    local = threading.local()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if not getattr(local, "synced", False):  # the first fsync of a save is its temp file's
            local.synced = True
            barrier.wait()  # both saves have written their temp file before either renames it

    monkeypatch.setattr(os, "fsync", fsync)
    errors: list[BaseException] = []

    def run(v: int) -> None:
        try:
            save_json(p, {"v": v})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(v,)) for v in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert load_json(p) in ({"v": 1}, {"v": 2})
    assert list(tmp_path.glob("*.tmp")) == []


def test_save_json_failed_write_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    p = tmp_path / "consumerOffset.json"
    save_json(p, {"ok": True})

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "EIO")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        save_json(p, {"new": True})
    monkeypatch.undo()
    assert load_json(p) == {"ok": True}
    assert list(tmp_path.glob("*.tmp")) == []
