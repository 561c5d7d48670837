"""``rocketpipe admin statsAll``: per topic and consumer group, the lag and the put / get rates
(L4, cli). Mirrors ``tools/command/stats/StatsAllSubCommand``.

The rates come from the brokers' statistics items (VIEW_BROKER_STATS_DATA); a broker without
them (rocketpipe's) contributes 0, as mqadmin treats any failure of that call.

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import handle_errors
from ._common import DEFAULT_NAMESRV, JsonOption, NamesrvOption, emit, run_admin, table
from .topic import DLQ_PREFIX, RETRY_PREFIX

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin


def register(app: typer.Typer) -> None:
    """Add ``statsAll`` to ``app``."""
    app.command("statsAll")(stats_all)


def _sum_24h(bsd: dict[str, Any]) -> int:
    """``StatsAllSubCommand.compute24HourSum``: the day's sum, else the hour's, else the minute's."""
    for key in ("statsDay", "statsHour", "statsMinute"):
        n = int((bsd.get(key) or {}).get("sum") or 0)
        if n:
            return n
    return 0


async def _rates(admin: Admin, addrs: list[str], name: str, key: str) -> tuple[float, int]:
    tps, total = 0.0, 0
    for addr in addrs:
        try:
            bsd = await admin.view_broker_stats_data(addr, name, key)
        except Exception:  # mqadmin ignores brokers without the item (or the request)
            continue
        tps += float((bsd.get("statsMinute") or {}).get("tps") or 0.0)
        total += _sum_24h(bsd)
    return tps, total


async def _topic_rows(admin: Admin, topic: str, active_only: bool) -> list[dict[str, Any]]:
    route = await admin.topic_route(topic)
    masters = [a for bd in route.broker_datas if (a := bd.broker_addrs.get(0)) is not None]
    groups = sorted(await admin.query_topic_consume_by_who(topic))
    in_tps, in_24h = await _rates(admin, masters, "TOPIC_PUT_NUMS", topic)
    rows: list[dict[str, Any]] = []
    if not groups:
        if not active_only or in_24h > 0:
            rows.append(
                {
                    "topic": topic,
                    "consumerGroup": None,
                    "accumulation": 0,
                    "inTps": in_tps,
                    "outTps": None,
                    "inMsg24Hour": in_24h,
                    "outMsg24Hour": None,
                }
            )
        return rows
    for g in groups:
        out_tps, out_24h = await _rates(admin, masters, "GROUP_GET_NUMS", f"{topic}@{g}")
        try:
            accumulation = max(0, (await admin.examine_consume_stats(g, topic)).compute_total_diff())
        except Exception:
            accumulation = 0
        if not active_only or in_24h > 0 or out_24h > 0:
            rows.append(
                {
                    "topic": topic,
                    "consumerGroup": g,
                    "accumulation": accumulation,
                    "inTps": in_tps,
                    "outTps": out_tps,
                    "inMsg24Hour": in_24h,
                    "outMsg24Hour": out_24h,
                }
            )
    return rows


@handle_errors
def stats_all(
    active_topic: Annotated[
        bool, typer.Option("--activeTopic", "-a", help="Only topics with traffic in 24 h.")
    ] = False,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Topic and consumer TPS stats (StatsAllSubCommand): per topic and group the accumulation
    (lag), put and get TPS over the last minute and message counts over 24 hours."""

    async def go(admin: Admin) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for t in sorted(await admin.fetch_all_topic_list()):
            if t.startswith((RETRY_PREFIX, DLQ_PREFIX)) or (topic and t != topic):
                continue
            try:
                rows.extend(await _topic_rows(admin, t, active_topic))
            except Exception:  # mqadmin skips a topic whose lookups fail
                continue
        return rows

    rows = run_admin(namesrv, go)

    def render(c: Console) -> None:
        t = table(
            "#Topic",
            "#Consumer Group",
            "#Accumulation",
            "#InTPS",
            "#OutTPS",
            "#InMsg24Hour",
            "#OutMsg24Hour",
            numeric=("#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"),
        )
        for r in rows:
            t.add_row(
                r["topic"],
                r["consumerGroup"] or "",
                str(r["accumulation"]),
                f"{r['inTps']:.2f}",
                "" if r["outTps"] is None else f"{r['outTps']:.2f}",
                str(r["inMsg24Hour"]),
                "NO_CONSUMER" if r["outMsg24Hour"] is None else str(r["outMsg24Hour"]),
            )
        c.print(t)

    emit(as_json, rows, render)
