"""The demo end to end on the first 3,000 flights: exit status, reconciliation numbers, the picture."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

LIMIT = 3000
#: Flights among the first 3,000 whose number is a multiple of 1111 (the demo's retry subset).
RETRY_SUBSET = 4
#: delays.png: 12 × 6.4 inches at 100 dpi.
PICTURE_SIZE = (1200, 640)


@pytest.mark.timeout(420)
def test_demo_small_run_reconciles(tmp_path: Path) -> None:
    out_dir = tmp_path / "demo"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, COLUMNS="160")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rocketpipe",
            "demo",
            "--limit",
            str(LIMIT),
            "--out-dir",
            str(out_dir),
            "--max-offsets-per-trigger",
            "1000",
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Reconciliation" in proc.stdout
    assert "MISMATCH" not in proc.stdout
    picture = out_dir / "delays.png"
    printed = " ".join(proc.stdout.split())  # rich wraps long lines
    assert f"Outputs in {out_dir}: delays.png (1200×640," in printed
    assert "picture delays.png (alongside the shut-down) " in printed  # its build time, in the timings line

    summary = orjson.loads((out_dir / "summary.json").read_bytes())
    assert summary["ok"] is True
    assert summary["produced"] == LIMIT
    assert summary["retry_subset"] == RETRY_SUBSET
    assert summary["spark"]["rows_read"] == LIMIT
    assert summary["spark"]["distinct_msg_ids"] == LIMIT
    assert summary["spark"]["flights_aggregated"] == LIMIT
    assert summary["spark"]["batches"] >= 3  # maxOffsetsPerTrigger=1000 splits 3,000 rows
    assert summary["consumer"]["completed"] == LIMIT
    assert summary["consumer"]["failed_first"] == RETRY_SUBSET
    assert summary["consumer"]["redelivered_ok"] == RETRY_SUBSET
    assert summary["consumer"]["deliveries"] >= LIMIT + RETRY_SUBSET
    assert all(check["ok"] for check in summary["checks"])
    assert summary["outputs"]["picture"] == str(picture)
    assert summary["picture_error"] is None
    assert 0 < summary["timings_s"]["picture delays.png (alongside the shut-down)"] < 30

    data = picture.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == PICTURE_SIZE
    from matplotlib.image import imread

    assert imread(picture).shape[:2] == PICTURE_SIZE[::-1]

    stats = pq.read_table(out_dir / "delay_stats").to_pydict()
    assert sum(stats["flights"]) == LIMIT
    assert set(stats["origin"]) <= {"EWR", "JFK", "LGA"}
    # The first 3,000 rows are 1-4 January 2013: daily windows only for those days.
    assert {str(d)[:10] for d in stats["window_start"]} <= {"2013-01-01", "2013-01-02", "2013-01-03", "2013-01-04"}
    if summary["spark"]["query_restarts"] == 0:  # a restarted file sink may leave uncommitted files
        ids = pq.read_table(out_dir / "spark_msg_ids", columns=["msg_id"]).column("msg_id").to_pylist()
        assert len(ids) == len(set(ids)) == LIMIT
