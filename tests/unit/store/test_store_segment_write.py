"""Segment.write: small appends are copied into the mapping, large ones go through the file
(pwritev); both are seen through the mapping and persist."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketpipe.store import segments
from rocketpipe.store.segments import Segment


@pytest.mark.parametrize(
    "width",
    [
        pytest.param(1, id="copied-into-the-mapping"),
        pytest.param(13, id="pwritev-more-parts-than-one-call-takes"),
    ],
)
def test_write_is_read_back_through_the_mapping_and_persists(tmp_path: Path, width: int) -> None:
    seg = Segment(tmp_path / "00000000000000000000", 0, 64 * 1024)
    parts = [bytes([i % 251]) * (width + i % 7) for i in range(2500)]  # > 1024 buffers
    total = sum(len(p) for p in parts)
    assert (total <= segments._COPY_MAX) == (width == 1)  # each case takes the path it names
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
