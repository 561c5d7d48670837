"""rocketpipe.testing.serve_process: `rocketpipe serve` in its own process (demo, bench)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketpipe.client import SyncAdmin
from rocketpipe.testing.serve_process import ServeStartError, serve_process
from waiting import wait_until_sync


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/status").read_text().count("State:\tZ")


def test_serve_process_yields_working_addresses_and_stops(tmp_path: Path) -> None:
    with serve_process(
        tmp_path / "store",
        extra_args=("--max-transfer-count", "64", "--transaction-check-interval", "1500"),
        log_file=tmp_path / "s.log",
    ) as s:
        assert s.namesrv_addr.startswith("127.0.0.1:") and s.broker_addr.startswith("127.0.0.1:")
        admin = SyncAdmin(namesrv_addr=s.namesrv_addr)
        try:
            admin.create_topic("T", queue_nums=2, broker_addr=s.broker_addr)
            wait_until_sync(lambda: len(admin.topic_queues("T")) == 2, timeout=30, what="topic T routed")
        finally:
            admin.close()
        pid = s.pid
    assert not _alive(pid)
    started = (tmp_path / "s.log").read_text()
    assert "maxTransferCountOnMessageInMemory=64" in started and "transactionCheckInterval=1500" in started


def test_serve_process_that_cannot_start_says_why(tmp_path: Path) -> None:
    with (
        pytest.raises(ServeStartError, match=r"exited with 2.*--flush"),
        serve_process(tmp_path / "store", flush="bogus"),
    ):
        pass
