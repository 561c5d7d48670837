"""Micro-benchmark of the message store's hot paths with 1 KiB bodies.

Run: ``.venv/bin/python bench/store_bench.py [--count N] [--repeat R] [--string-props]``.
Prints, best of ``R`` runs (the machine is shared and noisy; compare lines of one run only):
the codec alone (``encode_record``, the anchor), single puts, batched puts (x32), puts with a
commit-log fsync after each put / each 32-message group (SYNC_FLUSH without / with group
commit), one final flush, and ``get_message`` reads of 32 messages.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketpipe.protocol.message import encode_record, properties_to_string
from rocketpipe.store import MessageInner, MessageStore, StoreConfig

_PROPS = {"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "7F0000010001000000000000000000AA", "WAIT": "true"}


def _msgs(n: int, body: bytes, string_props: bool) -> list[MessageInner]:
    props: dict[str, str] | str = properties_to_string(_PROPS) if string_props else dict(_PROPS)
    return [
        MessageInner(
            "BenchTopic",
            0,
            body,
            properties=props,
            born_timestamp=1,
            born_host="127.0.0.1:5555",
            store_host="127.0.0.1:10911",
        )
        for _ in range(n)
    ]


def _best(repeat: int, fn: Callable[[MessageStore], int], cfg_for: Callable[[], StoreConfig]) -> float:
    """Best items/s of ``repeat`` runs, each on a fresh store; ``fn`` returns the item count."""
    best = 0.0
    for _ in range(repeat):
        with MessageStore(cfg_for()) as store:
            t0 = time.perf_counter()
            n = fn(store)
            best = max(best, n / (time.perf_counter() - t0))
    return best


def run(count: int, repeat: int, string_props: bool, root: Path) -> None:
    msgs = _msgs(count, os.urandom(1024), string_props)
    serial = iter(range(1_000_000))

    def cfg() -> StoreConfig:
        return StoreConfig(
            root_dir=root / str(next(serial)),
            mapped_file_size_commit_log=256 * 1024 * 1024,
        )

    def line(name: str, rate: float, note: str = "") -> None:
        print(f"{name:22s}: {rate:10.0f} msg/s  ({1e6 / rate:6.2f} us/msg)  {note}")

    best = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        for m in msgs:
            encode_record(
                topic=m.topic,
                body=m.body,
                properties=m.properties,
                queue_id=0,
                born_host=m.born_host,
                store_host=m.store_host,
            )
        best = max(best, count / (time.perf_counter() - t0))
    line("encode_record only", best, "[anchor: codec cost alone]")

    def single(s: MessageStore) -> int:
        for m in msgs:
            s.put_message(m)
        return count

    def batched(s: MessageStore) -> int:
        for i in range(0, count, 32):
            s.put_messages(msgs[i : i + 32])
        return count

    n_sync = min(count, 2000)

    def sync_each(s: MessageStore) -> int:
        for m in msgs[:n_sync]:
            s.put_message(m)
            s.flush(consume_queues=False)
        return n_sync

    def sync_group(s: MessageStore) -> int:
        for i in range(0, count, 32):
            s.put_messages(msgs[i : i + 32])
            s.flush(consume_queues=False)
        return count

    line("put_message", _best(repeat, single, cfg))
    line("put_messages x32", _best(repeat, batched, cfg))
    line("put + fsync each", _best(repeat, sync_each, cfg), "(SYNC_FLUSH, no group commit)")
    line("put x32 + fsync", _best(repeat, sync_group, cfg), "(one fsync per 32-message group)")

    with MessageStore(cfg()) as store:
        batched(store)
        t0 = time.perf_counter()
        store.flush()
        print(
            f"{'flush all':22s}: {(time.perf_counter() - t0) * 1e3:10.1f} ms for {store.get_max_phy_offset() / 1e6:.0f} MB"
        )
        t0 = time.perf_counter()
        off = n = 0
        while True:
            r = store.get_message("BenchTopic", 0, off, 32)
            if not r.message_count:
                break
            n += r.message_count
            off = r.next_begin_offset
        line("get_message x32", n / (time.perf_counter() - t0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="parent of the scratch store (default: system temp)")
    ap.add_argument(
        "--string-props",
        action="store_true",
        help="pass properties as the wire string (as the broker can) instead of a dict",
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        run(a.count, a.repeat, a.string_props, Path(d))


if __name__ == "__main__":
    main()
