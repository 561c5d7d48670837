"""Property test: random puts, batches, reads, restarts and crashes across segment rollover."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _store_helpers import decode_all, inner, read_queue, small_config
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rocketpipe.protocol.message import decode_record, properties_to_string
from rocketpipe.store import GetResult, GetStatus, MessageStore

QUEUES = (0, 1, 2)

op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(QUEUES), st.integers(0, 9000)),
    st.tuples(st.just("batch"), st.sampled_from(QUEUES), st.lists(st.integers(0, 3000), min_size=1, max_size=12)),
    st.tuples(st.just("get"), st.sampled_from(QUEUES), st.integers(-2, 40), st.integers(1, 40)),
    st.tuples(st.just("restart")),
    st.tuples(st.just("crash")),
)


def _body(n: int, seq: int) -> bytes:
    return (seq.to_bytes(4, "big") * (n // 4 + 1))[: max(n, 4)]


def _same_as_the_entry_loop(store: MessageStore, q: int, off: int, n: int, g: GetResult) -> None:
    """A get without a tag filter (whose common case skips the per-entry loop) returns what the
    per-entry loop returns, for a plain cap and for a byte cap; its ``runs``, when given, hold the
    records' concatenation, also with ``per_message=False``."""
    for cap in (None, 2500):
        kw = {} if cap is None else {"max_total_bytes": cap}
        fast = g if cap is None else store.get_message("TopicA", q, off, n, **kw)
        loop = store.get_message("TopicA", q, off, n, tag_filter=lambda _code: True, **kw)
        assert (fast.status, fast.next_begin_offset, fast.message_count, fast.buffer_total_size) == (
            loop.status,
            loop.next_begin_offset,
            loop.message_count,
            loop.buffer_total_size,
        )
        assert [bytes(b) for b in fast.buffers] == [bytes(b) for b in loop.buffers]
        if fast.runs is not None:
            assert b"".join(fast.runs) == b"".join(fast.buffers)
            lean = store.get_message("TopicA", q, off, n, per_message=False, **kw)
            assert lean.buffers == [] and lean.runs is not None and b"".join(lean.runs) == b"".join(fast.buffers)
            assert (lean.next_begin_offset, lean.message_count) == (fast.next_begin_offset, fast.message_count)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=60))
def test_store_matches_model(ops: list[tuple]) -> None:
    model: dict[int, list[bytes]] = {q: [] for q in QUEUES}
    seq = 0
    with tempfile.TemporaryDirectory() as d:
        cfg = small_config(Path(d))
        store = MessageStore(cfg)
        store.load()
        try:
            for o in ops:
                kind = o[0]
                if kind == "put":
                    seq += 1
                    body = _body(o[2], seq)
                    r = store.put_message(inner(queue_id=o[1], body=body, tags=str(seq % 3)))
                    assert r.is_ok and r.queue_offset == len(model[o[1]])
                    model[o[1]].append(body)
                elif kind == "batch":
                    bodies = []
                    for n in o[2]:
                        seq += 1
                        bodies.append(_body(n, seq))
                    r = store.put_messages([inner(queue_id=o[1], body=b) for b in bodies])
                    assert r.is_ok and r.queue_offset == len(model[o[1]]) and r.msg_num == len(bodies)
                    model[o[1]].extend(bodies)
                elif kind == "get":
                    _, q, off, n = o
                    g = store.get_message("TopicA", q, off, n)
                    _same_as_the_entry_loop(store, q, off, n, g)
                    size = len(model[q])
                    if size == 0:
                        assert g.status in (GetStatus.NO_MATCHED_LOGIC_QUEUE, GetStatus.NO_MESSAGE_IN_QUEUE)
                        assert g.next_begin_offset == 0
                    elif off < 0:
                        assert g.status is GetStatus.OFFSET_TOO_SMALL and g.next_begin_offset == 0
                    elif off == size:
                        assert g.status is GetStatus.OFFSET_OVERFLOW_ONE and g.next_begin_offset == off
                    elif off > size:
                        assert g.status is GetStatus.OFFSET_OVERFLOW_BADLY and g.next_begin_offset == size
                    else:
                        assert g.status is GetStatus.FOUND
                        msgs = decode_all(g)
                        assert 1 <= len(msgs) <= n
                        assert [m.queue_offset for m in msgs] == list(range(off, off + len(msgs)))
                        assert [m.body for m in msgs] == model[q][off : off + len(msgs)]
                        assert g.next_begin_offset == off + len(msgs)
                else:
                    if kind == "restart":
                        store.close()
                    else:  # crash: no close; everything written is in the page cache
                        store.commit_log.close()
                    store = MessageStore(cfg)
                    store.load()
                    for q in QUEUES:
                        assert store.get_max_offset("TopicA", q) == len(model[q])
        finally:
            store.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 6000), min_size=1, max_size=40),
    pick=st.floats(0, 1, exclude_max=True),
    cut_frac=st.floats(0, 1, exclude_max=True),
    garbage=st.booleans(),
)
def test_recovery_cuts_exactly_at_the_torn_record(
    sizes: list[int], pick: float, cut_frac: float, garbage: bool
) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        cfg = small_config(root)
        store = MessageStore(cfg)
        store.load()
        results = [store.put_message(inner(queue_id=i % 2, body=_body(n, i))) for i, n in enumerate(sizes)]
        store.commit_log.close()  # crash
        k = int(pick * len(results))
        victim = results[k]
        cut = victim.wrote_offset + int(cut_frac * victim.wrote_bytes)
        seg_start = victim.wrote_offset - victim.wrote_offset % cfg.mapped_file_size_commit_log
        for p in (root / "commitlog").iterdir():
            if int(p.name) > seg_start:
                p.unlink()
        seg = root / "commitlog" / f"{seg_start:020d}"
        with open(seg, "rb") as f:
            f.seek(victim.wrote_offset - seg_start)
            original, _ = decode_record(f.read(victim.wrote_bytes))
        props_len = len(properties_to_string(original.properties).encode())
        # Garbage that lands only inside the properties text leaves a record that is valid by
        # every check Java makes too (BODYCRC covers the body only; the optional properties CRC,
        # enabledAppendPropCRC, is off by default): such a tear is undetectable by design.
        assume(not (garbage and cut >= victim.wrote_offset + victim.wrote_bytes - props_len))
        with open(seg, "r+b") as f:
            f.truncate(cut - seg_start)
            if garbage:
                f.seek(cut - seg_start)
                f.write(bytes(range(256)) * 4)
        with MessageStore(cfg) as s2:
            assert s2.get_max_phy_offset() == victim.wrote_offset
            for q in (0, 1):
                kept = [r for r in results[:k] if results.index(r) % 2 == q]
                assert s2.get_max_offset("TopicA", q) == len(kept)
                got = [m.commit_log_offset for m in read_queue(s2, "TopicA", q)]
                assert got == [r.wrote_offset for r in kept]
