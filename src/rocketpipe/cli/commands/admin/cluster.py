"""``rocketpipe admin`` cluster and broker commands: ``clusterList``, ``brokerStatus``,
``getBrokerConfig``, ``updateBrokerConfig``, ``cleanExpiredCQ`` (L4, cli).

Mirror ``tools/command/cluster/ClusterListSubCommand`` and ``tools/command/broker/{BrokerStatus,
UpdateBrokerConfig,CleanExpiredCQ}SubCommand``, ``broker/GetBrokerConfigCommand``.

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import handle_errors
from ._common import (
    DEFAULT_NAMESRV,
    BrokerAddrOption,
    ClusterNameOption,
    JsonOption,
    NamesrvOption,
    either_broker_or_cluster,
    emit,
    java_bool,
    run_admin,
    table,
)

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin


def register(app: typer.Typer) -> None:
    """Add the cluster and broker commands to ``app``."""
    app.command("clusterList")(cluster_list)
    app.command("brokerStatus")(broker_status)
    app.command("getBrokerConfig")(get_broker_config)
    app.command("updateBrokerConfig")(update_broker_config)
    app.command("cleanExpiredCQ")(clean_expired_cq)


def _tps(value: str | None) -> float:
    """First figure of a ``putTps`` / ``getTransferredTps`` value (``"tps10 tps60 tps600"``)."""
    try:
        return float((value or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


async def _addrs(admin: Admin, broker_addr: str | None, cluster_name: str | None) -> list[str]:
    return [broker_addr] if broker_addr else await admin.cluster_master_addrs(cluster_name)


@handle_errors
def cluster_list(
    more_stats: Annotated[
        bool, typer.Option("--moreStats", "-m", help="Accepted; the same columns are printed.")
    ] = False,
    interval: Annotated[int | None, typer.Option("--interval", "-i", help="Not supported (prints once).")] = None,
    cluster_name: Annotated[str | None, typer.Option("--clusterName", "-c", help="Only this cluster.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """List clusters and their brokers with version, TPS and today's message counts (ClusterListSubCommand)."""

    async def go(admin: Admin) -> list[dict[str, Any]]:
        info = await admin.examine_broker_cluster_info()
        rows = []
        for cluster in sorted(info.cluster_addr_table):
            if cluster_name is not None and cluster != cluster_name:
                continue
            for name in sorted(info.cluster_addr_table[cluster]):
                bd = info.broker_addr_table.get(name)
                for bid, addr in sorted((bd.broker_addrs if bd else {}).items()):
                    try:
                        kv = await admin.fetch_broker_runtime_stats(addr)
                    except Exception as e:  # Java prints the trace and a blank row; we say it in one line
                        typer.echo(f"clusterList: runtime stats of broker {addr} unavailable: {e!r}", err=True)
                        kv = {}
                    rows.append(
                        {
                            "clusterName": cluster,
                            "brokerName": name,
                            "brokerId": int(bid),
                            "brokerAddr": addr,
                            "version": kv.get("brokerVersionDesc", ""),
                            "inTps": _tps(kv.get("putTps")),
                            "outTps": _tps(kv.get("getTransferredTps") or kv.get("getTransferedTps")),
                            "msgPutTotalTodayNow": int(kv.get("msgPutTotalTodayNow", "0") or 0),
                            "msgGetTotalTodayNow": int(kv.get("msgGetTotalTodayNow", "0") or 0),
                            "commitLogDiskRatio": float(kv.get("commitLogDiskRatio", "0") or 0),
                            "activated": kv.get("brokerActive", "") == "true",
                        }
                    )
        return rows

    rows = run_admin(namesrv, go)

    def render(c: Console) -> None:
        t = table(
            "#Cluster Name",
            "#Broker Name",
            "#BID",
            "#Addr",
            "#Version",
            "#InTPS",
            "#OutTPS",
            "#InTotalToday",
            "#OutTotalToday",
            "#SPACE",
            "#ACTIVATED",
            numeric=("#BID", "#InTPS", "#OutTPS", "#InTotalToday", "#OutTotalToday", "#SPACE"),
        )
        for r in rows:
            t.add_row(
                r["clusterName"],
                r["brokerName"],
                str(r["brokerId"]),
                r["brokerAddr"],
                r["version"],
                f"{r['inTps']:.2f}",
                f"{r['outTps']:.2f}",
                str(r["msgPutTotalTodayNow"]),
                str(r["msgGetTotalTodayNow"]),
                f"{r['commitLogDiskRatio']:.4f}",
                str(r["activated"]).lower(),
            )
        c.print(t)

    emit(as_json, rows, render)


def _kv_output(as_json: bool, per_broker: dict[str, dict[str, str]]) -> None:
    def render(c: Console) -> None:
        for addr, kv in per_broker.items():
            t = table("#Key", "#Value", title=f"broker {addr}")
            for k, v in sorted(kv.items()):
                t.add_row(k, v)
            c.print(t)

    emit(as_json, per_broker, render)


@handle_errors
def broker_status(
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Fetch broker runtime status data (BrokerStatusSubCommand): GET_BROKER_RUNTIME_INFO's key/value table."""
    either_broker_or_cluster(broker_addr, cluster_name, "brokerStatus")

    async def go(admin: Admin) -> dict[str, dict[str, str]]:
        return {a: await admin.fetch_broker_runtime_stats(a) for a in await _addrs(admin, broker_addr, cluster_name)}

    _kv_output(as_json, run_admin(namesrv, go))


@handle_errors
def get_broker_config(
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Get broker config by cluster or special broker (GetBrokerConfigCommand)."""
    either_broker_or_cluster(broker_addr, cluster_name, "getBrokerConfig")

    async def go(admin: Admin) -> dict[str, dict[str, str]]:
        return {a: await admin.get_broker_config(a) for a in await _addrs(admin, broker_addr, cluster_name)}

    _kv_output(as_json, run_admin(namesrv, go))


@handle_errors
def update_broker_config(
    key: Annotated[str, typer.Option("--key", "-k", help="Config key.")],
    value: Annotated[str, typer.Option("--value", "-v", help="Config value.")],
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    update_all_broker: Annotated[
        str | None, typer.Option("--updateAllBroker", "-a", help="Include slaves (true|false).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update broker's config (UpdateBrokerConfigSubCommand) on -b or the brokers of -c."""
    either_broker_or_cluster(broker_addr, cluster_name, "updateBrokerConfig")
    all_brokers = java_bool(update_all_broker)

    async def go(admin: Admin) -> list[str]:
        if broker_addr:
            addrs = [broker_addr]
        elif all_brokers:
            info = await admin.examine_broker_cluster_info()
            addrs = sorted(
                a
                for n in info.cluster_addr_table.get(cluster_name or "", ())
                if n in info.broker_addr_table
                for a in info.broker_addr_table[n].broker_addrs.values()
            )
        else:
            addrs = await admin.cluster_master_addrs(cluster_name)
        for a in addrs:
            await admin.update_broker_config(a, {key: value})
        return addrs

    addrs = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for a in addrs:
            c.print(f"update broker config success, {a}", markup=False)

    emit(as_json, {"brokerAddrs": addrs, "key": key, "value": value}, render)


@handle_errors
def clean_expired_cq(
    broker_addr: BrokerAddrOption = None,
    cluster: Annotated[str | None, typer.Option("--cluster", "-c", help="Every master of this cluster.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Clean expired ConsumeQueue on broker (CleanExpiredCQSubCommand); every master without -b/-c."""

    async def go(admin: Admin) -> list[str]:
        addrs = [broker_addr] if broker_addr else await admin.cluster_master_addrs(cluster)
        for a in addrs:
            await admin.clean_expired_consume_queue(a)
        return addrs

    addrs = run_admin(namesrv, go)
    emit(as_json, {"brokerAddrs": addrs, "result": True}, lambda c: c.print(f"success: {', '.join(addrs)}"))
