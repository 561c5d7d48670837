"""Segment.write: appends go through the file (pwritev) and are seen through the mapping."""

from __future__ import annotations

from pathlib import Path

from rocketpipe.store.segments import Segment


def test_write_of_more_parts_than_one_pwritev_takes_is_read_back_through_the_mapping(tmp_path: Path) -> None:
    seg = Segment(tmp_path / "00000000000000000000", 0, 64 * 1024)
    parts = [bytes([i % 251]) * (1 + i % 7) for i in range(2500)]  # > 1024 buffers: several calls
    total = sum(len(p) for p in parts)
    seg.write(100, parts, total)
    assert bytes(seg.view[100 : 100 + total]) == b"".join(parts)
    assert bytes(seg.view[:100]) == bytes(100)  # nothing before pos was touched
    assert bytes(seg.view[100 + total : 100 + total + 64]) == bytes(64)
    seg.flush(0, 100 + total)
    seg.close()
    reopened = Segment(tmp_path / "00000000000000000000", 0, 64 * 1024)
    assert bytes(reopened.view[100 : 100 + total]) == b"".join(parts)
    reopened.close()


def test_write_then_mapping_write_of_the_same_page_both_stick(tmp_path: Path) -> None:
    seg = Segment(tmp_path / "00000000000000000000", 0, 8192)
    seg.write(0, [b"a" * 10, b"b" * 10], 20)
    seg.view[5:7] = b"ZZ"  # a later in-place patch (as the roll to a new segment rewrites offsets)
    seg.write(20, [b"c" * 4], 4)
    assert bytes(seg.view[:24]) == b"aaaaaZZaaabbbbbbbbbbcccc"
    seg.close()
