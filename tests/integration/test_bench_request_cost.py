"""``bench/request_cost.py`` runs and prints a row per request kind (a smoke run: tiny counts, no timing asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "request_cost.py"


@pytest.mark.timeout(300)
def test_request_cost_prints_each_kind_warm_and_cold() -> None:
    requests, rounds, traced = 40, 2, 5
    out = subprocess.run(
        [
            sys.executable,
            str(_SCRIPT),
            *("--requests", str(requests), "--rounds", str(rounds), "--traced", str(traced)),
            *("--evict-kib", "64"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "CPU µs, cold (64 KiB)" in out.stdout
    # every replay answered once: warm-up, traced, timed warm, timed cold (a tenth per round)
    replays = min(2000, requests) + traced + requests * rounds + max(1, requests // 10) * rounds
    for kind in ("send", "send_batch", "pull"):
        row = re.search(rf"│ {kind} +│ ([\d.]+) +│ (-?[\d.]+) +│ ([\d,]+) +│ ([\d,]+) +│ ([\d,]+) +│", out.stdout)
        assert row is not None, out.stdout
        warm, cold, bytecodes, calls, responses = row.groups()
        assert float(warm) > 0
        assert float(cold) > 0  # a replay costs more than the clock pair subtracted from it
        assert int(bytecodes.replace(",", "")) > 500  # a request runs hundreds of bytecodes at least
        assert int(calls.replace(",", "")) > 10
        assert int(responses.replace(",", "")) == replays


def test_request_cost_refuses_a_negative_eviction() -> None:
    out = subprocess.run(
        [sys.executable, str(_SCRIPT), "--evict-kib", "-1"], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 2
    assert "--evict-kib must be >= 0" in out.stderr
