"""The compiled key-index loop (``_index_put.c``) writes the same file bytes as the Python code."""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpipe.store import index_file
from rocketpipe.store.index_file import HEADER_SIZE, IndexFile, KeyEntry

T0 = 1_700_000_000_000

keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)  # no lone surrogates: keys are UTF-8
entry = st.tuples(keys, st.integers(0, 2**62), st.integers(T0 - 5_000, T0 + 2**31 * 1000 + 5_000))
batches = st.lists(st.lists(entry, min_size=1, max_size=40), min_size=1, max_size=4)
stale = st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 12)), max_size=5)  # (slot, value); past indexCount


def _write(path: Path, slots: int, num: int, stale_slots: list[tuple[int, int]], work: list[list[KeyEntry]]) -> bytes:
    f = IndexFile.create(path, slots, num, 0, 0)
    try:
        for slot, value in stale_slots:  # what a process killed half-way through a batch leaves
            struct.pack_into(">i", f._mm, HEADER_SIZE + (slot % slots) * 4, value)
        for batch in work:
            done = 0
            while done < len(batch) and not f.is_write_full:
                done += f.put_many(batch, done)
        f.sync()
    finally:
        f.close()
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return bytes(m)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(work=batches, stale_slots=stale, slots=st.integers(1, 7), num=st.integers(2, 60))
def test_compiled_and_python_loops_write_the_same_file(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    work: list[list[KeyEntry]],
    stale_slots: list[tuple[int, int]],
    slots: int,
    num: int,
) -> None:
    assert index_file._compiled_put_built is not None, "rocketpipe.store._index_put: not built (pip install -e .)"
    tmp = tmp_path_factory.mktemp("idx")
    with monkeypatch.context() as m:
        m.setattr(index_file, "_compiled_put", None)
        python = _write(tmp / "python", slots, num, stale_slots, work)
    with monkeypatch.context() as m:
        m.setattr(index_file, "_compiled_put", index_file._compiled_put_built)
        compiled = _write(tmp / "compiled", slots, num, stale_slots, work)
    assert compiled == python


def test_wide_keys_hash_as_java_utf16(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Latin-1, BMP and astral keys (1-, 2- and 4-byte str kinds) in one batch, compiled."""
    monkeypatch.setattr(index_file, "_compiled_put", index_file._compiled_put_built)
    work = [("T#caf\u00e9", 1, T0), ("T#\u4e2d\u6587", 2, T0), ("T#\U0001f600", 3, T0), ("polygenelubricants", 4, T0)]
    f = IndexFile.create(tmp_path / "f", 1 << 16, 16, 0, 0)
    try:
        assert f.put_many(work, 0) == 4
        got = [f.entry(p)[0] for p in range(1, 5)]
    finally:
        f.close()
    assert got == [index_file.index_key_hashes([k])[0] for k, _, _ in work]
    assert got[3] == 0  # abs(Integer.MIN_VALUE) overflows: Java's indexKeyHashMethod gives 0


def test_a_missing_slot_block_is_reserved_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_file, "_compiled_put", index_file._compiled_put_built)
    f = IndexFile.create(tmp_path / "f", 1 << 16, 16, 0, 0)  # 4 slot blocks of 64 KiB
    failures: list[int] = []

    def full(fd: int, offset: int, length: int) -> None:
        failures.append(offset)
        raise OSError(28, "No space left on device")

    try:
        monkeypatch.setattr(index_file, "_allocate", full)
        with pytest.raises(OSError):
            f.put_many([("T#a", 7, T0)], 0)
        assert failures and f.index_count == 1 and f.entry(1) == (0, 0, 0, 0)
        monkeypatch.undo()
        monkeypatch.setattr(index_file, "_compiled_put", index_file._compiled_put_built)
        assert f.put_many([("T#a", 7, T0)], 0) == 1
        assert f.entry(1)[1] == 7 and f.index_count == 2
    finally:
        f.close()
