"""The console's plain HTTP behaviour without a browser: time parsing and formatting, topic
kinds, cross-site POSTs refused, bad input answered 400, an unreachable cluster answered 502."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from rocketpipe.client import Admin
from rocketpipe.console import start_console
from rocketpipe.console.app import format_ms, format_num, parse_time
from rocketpipe.console.service import topic_kind, tps_of
from rocketpipe.testing.cluster import local_cluster


def test_times_are_utc_both_ways() -> None:
    assert parse_time("2024-02-29 12:34:56", 0) == 1709210096000
    assert parse_time("2024-02-29T12:34", 0) == 1709210040000
    assert parse_time("1709210096123", 0) == 1709210096123
    assert parse_time("-1", 0) == -1
    assert parse_time("  ", 42) == 42
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday", 0)
    assert format_ms(1709210096123) == "2024-02-29 12:34:56.123"
    assert format_ms(0) == "-"
    assert [format_num(v) for v in (26.250000000345608, 10.0, 0.0227, 7, None, "x")] == [
        "26.25",
        "10",
        "0.02",
        "7",
        "",
        "x",
    ]


def test_topic_kinds_and_tps_figures() -> None:
    assert [topic_kind(t) for t in ("Orders", "%RETRY%g", "%DLQ%g", "TBW102", "rmq_sys_wheel_timer")] == [
        "normal",
        "retry",
        "dlq",
        "system",
        "system",
    ]
    assert tps_of("12.5 10.0 9.0") == 12.5
    assert tps_of(None) == 0.0 and tps_of("n/a") == 0.0


async def test_cross_site_post_and_bad_input_are_refused(tmp_path: Path) -> None:
    async with local_cluster(tmp_path / "store") as c:
        h = await start_console("127.0.0.1", 0, c.namesrv_addr, allow_writes=True)
        try:
            async with httpx.AsyncClient(base_url=h.url) as http:
                evil = await http.post(
                    "/topics", data={"topic": "Evil", "queues": "1"}, headers={"Origin": "http://evil.example"}
                )
                assert evil.status_code == 403 and "cross-site" in evil.text
                sandboxed = await http.post(
                    "/topics", data={"topic": "Evil", "queues": "1"}, headers={"Origin": "null"}
                )
                assert sandboxed.status_code == 403
                same = await http.post("/topics", data={"topic": "Fine", "queues": "1"}, headers={"Origin": h.url})
                assert same.status_code == 303
                bad = await http.post("/topics", data={"topic": "Bad", "queues": "many"})
                assert bad.status_code == 400
                bad_time = await http.get("/messages", params={"topic": "Fine", "mode": "time", "begin": "soon"})
                assert bad_time.status_code == 400 and "not a time" in bad_time.text
            assert "Evil" not in await _topics(c.namesrv_addr)
        finally:
            await h.close()


async def _topics(namesrv_addr: str) -> set[str]:
    async with Admin(namesrv_addr) as admin:
        return await admin.fetch_all_topic_list()


async def test_unreachable_name_server_is_a_502_page() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    h = await start_console("127.0.0.1", 0, dead)
    try:
        async with httpx.AsyncClient(base_url=h.url, timeout=30) as http:
            page = await http.get("/cluster")
            assert page.status_code == 502 and "The cluster refused" in page.text
    finally:
        await h.close()
