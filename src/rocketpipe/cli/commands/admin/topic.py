"""``rocketpipe admin`` topic commands: ``topicList``, ``topicRoute``, ``topicStatus``,
``updateTopic``, ``deleteTopic`` (L4, cli).

Mirror ``tools/command/topic/{TopicList,TopicRoute,TopicStatus,UpdateTopic,DeleteTopic}SubCommand``.

Imports: the public API of :mod:`rocketpipe.client` (through :mod:`._common`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import handle_errors
from ._common import (
    DEFAULT_NAMESRV,
    JsonOption,
    NamesrvOption,
    either_broker_or_cluster,
    emit,
    human_time,
    java_bool,
    run_admin,
    table,
)

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin

#: MixAll.RETRY_GROUP_TOPIC_PREFIX / DLQ_GROUP_TOPIC_PREFIX
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
#: TopicSysFlag: unit topic / has unit subscription.
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2

TopicOption = Annotated[str, typer.Option("--topic", "-t", help="Topic name.")]


def perm_name(perm: int) -> str:
    """``PermName.perm2String``: ``RW-``, ``R--``, ``-W-`` … (read, write, inherit)."""
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


def register(app: typer.Typer) -> None:
    """Add the topic commands to ``app``."""
    app.command("topicList")(topic_list)
    app.command("topicRoute")(topic_route)
    app.command("topicStatus")(topic_status)
    app.command("updateTopic")(update_topic)
    app.command("updateTopicPerm")(update_topic_perm)
    app.command("deleteTopic")(delete_topic)
    app.command("topicClusterList")(topic_cluster_list)


@handle_errors
def topic_list(
    cluster_model: Annotated[
        bool, typer.Option("--clusterModel", "-c", help="Also print each topic's cluster and consumer groups.")
    ] = False,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Fetch all topic list from name server (TopicListSubCommand)."""

    async def go(admin: Admin) -> list[dict[str, Any]]:
        topics = sorted(await admin.fetch_all_topic_list())
        if not cluster_model:
            return [{"topic": t} for t in topics]
        info = await admin.examine_broker_cluster_info()
        cluster_of = {b: c for c, names in info.cluster_addr_table.items() for b in names}
        rows: list[dict[str, Any]] = []
        for t in topics:
            if t.startswith((RETRY_PREFIX, DLQ_PREFIX)):
                continue
            try:
                route = await admin.topic_route(t)
                cluster = next((cluster_of.get(bd.broker_name, "") for bd in route.broker_datas), "")
                groups = sorted(await admin.query_topic_consume_by_who(t))
            except Exception:
                continue
            for g in groups or [""]:
                rows.append({"clusterName": cluster, "topic": t, "consumerGroup": g})
        return rows

    rows = run_admin(namesrv, go)

    def render(c: Console) -> None:
        if not cluster_model:
            for r in rows:
                c.print(r["topic"], markup=False)
            return
        t = table("#Cluster Name", "#Topic", "#Consumer Group")
        for r in rows:
            t.add_row(r["clusterName"], r["topic"], r["consumerGroup"])
        c.print(t)

    emit(as_json, {"topicList": [r["topic"] for r in rows]} if not cluster_model else rows, render)


@handle_errors
def topic_route(
    topic: TopicOption,
    list_format: Annotated[
        bool, typer.Option("--list", "-l", help="List format (the table is always a list).")
    ] = False,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Examine topic route info (TopicRouteSubCommand): brokers, addresses, queues and perm."""
    route = run_admin(namesrv, lambda a: a.topic_route(topic))
    by_name = {bd.broker_name: bd for bd in route.broker_datas}
    rows: list[dict[str, Any]] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = by_name.get(qd.broker_name)
        rows.append(
            {
                "clusterName": bd.cluster if bd else "",
                "brokerName": qd.broker_name,
                "brokerAddrs": {str(k): v for k, v in sorted((bd.broker_addrs if bd else {}).items())},
                "readQueueNums": qd.read_queue_nums,
                "writeQueueNums": qd.write_queue_nums,
                "perm": qd.perm,
            }
        )

    def render(c: Console) -> None:
        t = table(
            "#ClusterName",
            "#BrokerName",
            "#BrokerAddrs",
            "#ReadQueue",
            "#WriteQueue",
            "#Perm",
            numeric=("#ReadQueue", "#WriteQueue"),
        )
        for r in rows:
            addrs = ", ".join(f"{k}:{v}" for k, v in r["brokerAddrs"].items())
            t.add_row(
                r["clusterName"],
                r["brokerName"],
                addrs,
                str(r["readQueueNums"]),
                str(r["writeQueueNums"]),
                perm_name(r["perm"]),
            )
        c.print(t)
        total_r = sum(r["readQueueNums"] for r in rows)
        total_w = sum(r["writeQueueNums"] for r in rows)
        c.print(f"Total: {len(rows)} broker(s), {total_r} read queue(s), {total_w} write queue(s)")

    emit(as_json, route.to_obj(), render)


@handle_errors
def topic_status(
    topic: TopicOption,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; the route is used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Examine topic status (TopicStatusSubCommand): min / max offset and last update per queue."""
    stats = run_admin(namesrv, lambda a: a.examine_topic_stats(topic))
    rows: list[dict[str, Any]] = [
        {
            "brokerName": mq.broker_name,
            "queueId": mq.queue_id,
            "minOffset": o.min_offset,
            "maxOffset": o.max_offset,
            "lastUpdateTimestamp": o.last_update_timestamp,
        }
        for mq, o in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
    ]

    def render(c: Console) -> None:
        t = table(
            "#Broker Name",
            "#QID",
            "#Min Offset",
            "#Max Offset",
            "#Last Updated",
            numeric=("#QID", "#Min Offset", "#Max Offset"),
        )
        for r in rows:
            last = human_time(r["lastUpdateTimestamp"]) if r["lastUpdateTimestamp"] else ""
            t.add_row(r["brokerName"], str(r["queueId"]), str(r["minOffset"]), str(r["maxOffset"]), last)
        c.print(t)

    emit(as_json, rows, render)


@handle_errors
def update_topic(
    topic: TopicOption,
    broker_addr: Annotated[str | None, typer.Option("--brokerAddr", "-b", help="Create on this broker.")] = None,
    cluster_name: Annotated[
        str | None, typer.Option("--clusterName", "-c", help="Create on every master of this cluster.")
    ] = None,
    read_queue_nums: Annotated[int, typer.Option("--readQueueNums", "-r", min=0, help="Read queues.")] = 8,
    write_queue_nums: Annotated[int, typer.Option("--writeQueueNums", "-w", min=0, help="Write queues.")] = 8,
    perm: Annotated[int, typer.Option("--perm", "-p", help="Permission: 2 write, 4 read, 6 both.")] = 6,
    order: Annotated[str | None, typer.Option("--order", "-o", help="Order topic (true|false).")] = None,
    unit: Annotated[str | None, typer.Option("--unit", "-u", help="Unit topic (true|false).")] = None,
    has_unit_sub: Annotated[str | None, typer.Option("--hasUnitSub", "-s", help="Has unit sub (true|false).")] = None,
    attributes: Annotated[str | None, typer.Option("--attributes", "-a", help="5.x attributes: +a=b,+c=d,-e.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update or create topic (UpdateTopicSubCommand) on a broker (-b) or a cluster's masters (-c).
    An order topic (-o true) also gets its orderConf (brokerName:writeQueueNums) in the name servers."""
    from rocketpipe.errors import RocketMQError

    either_broker_or_cluster(broker_addr, cluster_name, "updateTopic")
    sys_flag = (FLAG_UNIT if java_bool(unit) else 0) | (FLAG_UNIT_SUB if java_bool(has_unit_sub) else 0)
    is_order = java_bool(order)

    async def go(admin: Admin) -> tuple[list[str], str | None]:
        addrs = [broker_addr] if broker_addr else await admin.cluster_master_addrs(cluster_name)
        for addr in addrs:
            await admin.create_and_update_topic_config(
                addr,
                topic,
                read_queue_nums=read_queue_nums,
                write_queue_nums=write_queue_nums,
                perm=perm,
                order=is_order,
                topic_sys_flag=sys_flag,
                attributes=attributes,
            )
        if not is_order:
            return addrs, None
        # the name servers' orderTopicConf: brokerName:writeQueueNums per broker
        info = await admin.examine_broker_cluster_info()
        if broker_addr:
            name = next(
                (n for n, bd in info.broker_addr_table.items() if broker_addr in bd.broker_addrs.values()), None
            )
            if name is None:
                raise RocketMQError(f"broker {broker_addr} is not registered with the name server")
            conf = await admin.create_or_update_order_conf(topic, f"{name}:{write_queue_nums}", False)
        else:
            names = sorted(info.cluster_addr_table.get(cluster_name or "", ()))
            conf = await admin.create_or_update_order_conf(
                topic, ";".join(f"{n}:{write_queue_nums}" for n in names), True
            )
        return addrs, conf

    addrs, order_conf = run_admin(namesrv, go)
    config = {
        "topicName": topic,
        "readQueueNums": read_queue_nums,
        "writeQueueNums": write_queue_nums,
        "perm": perm,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": sys_flag,
        "order": is_order,
        "attributes": attributes or "",
    }

    def render(c: Console) -> None:
        if order_conf is not None:
            c.print(
                f"set {'broker' if broker_addr else 'cluster'} orderConf. isOrder=true, orderConf=[{order_conf}]",
                markup=False,
            )
        for a in addrs:
            c.print(f"create topic to {a} success.", markup=False)
        c.print(
            f"TopicConfig [topicName={topic}, readQueueNums={read_queue_nums}, writeQueueNums={write_queue_nums}, "
            f"perm={perm_name(perm)}, topicFilterType=SINGLE_TAG, topicSysFlag={sys_flag}, order={str(is_order).lower()}]",
            markup=False,
        )

    emit(as_json, {"brokerAddrs": addrs, "topicConfig": config, "orderConf": order_conf}, render)


@handle_errors
def delete_topic(
    topic: TopicOption,
    cluster_name: Annotated[str, typer.Option("--clusterName", "-c", help="Delete from this cluster's brokers.")],
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Delete topic from broker and NameServer (DeleteTopicSubCommand)."""
    addrs = run_admin(namesrv, lambda a: a.delete_topic(topic, cluster_name))

    def render(c: Console) -> None:
        c.print(f"delete topic [{topic}] from cluster [{cluster_name}] success.", markup=False)
        c.print(f"delete topic [{topic}] from NameServer success.", markup=False)

    emit(as_json, {"topic": topic, "clusterName": cluster_name, "brokerAddrs": addrs}, render)


@handle_errors
def update_topic_perm(
    topic: TopicOption,
    perm: Annotated[int, typer.Option("--perm", "-p", help="New permission: 2 write, 4 read, 6 both.")],
    broker_addr: Annotated[str | None, typer.Option("--brokerAddr", "-b", help="On this (master) broker.")] = None,
    cluster_name: Annotated[
        str | None, typer.Option("--clusterName", "-c", help="On every master of this cluster hosting the topic.")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update topic perm (UpdateTopicPermSubCommand): queue counts stay, the permission changes."""
    either_broker_or_cluster(broker_addr, cluster_name, "updateTopicPerm")

    async def go(admin: Admin) -> list[dict[str, Any]]:
        changes: list[dict[str, Any]] = []
        if broker_addr:
            tc = await admin.examine_topic_config(broker_addr, topic)
            targets = [
                (
                    broker_addr,
                    int(tc.get("readQueueNums", 0)),
                    int(tc.get("writeQueueNums", 0)),
                    int(tc.get("perm", 6)),
                    bool(tc.get("order", False)),
                    int(tc.get("topicSysFlag", 0)),
                )
            ]
        else:
            route = await admin.topic_route(topic)
            info = await admin.examine_broker_cluster_info()
            names = info.cluster_addr_table.get(cluster_name or "", set())
            masters = {bd.broker_name: bd.broker_addrs.get(0) for bd in route.broker_datas}
            targets = [
                (addr, qd.read_queue_nums, qd.write_queue_nums, qd.perm, False, qd.topic_sys_flag)
                for qd in route.queue_datas
                if qd.broker_name in names and (addr := masters.get(qd.broker_name)) is not None
            ]
        for addr, read, write, old, order, sys_flag in targets:
            if old == perm:
                changes.append({"brokerAddr": addr, "oldPerm": old, "perm": perm, "changed": False})
                continue
            await admin.create_and_update_topic_config(
                addr,
                topic,
                read_queue_nums=read,
                write_queue_nums=write,
                perm=perm,
                order=order,
                topic_sys_flag=sys_flag,
            )
            changes.append({"brokerAddr": addr, "oldPerm": old, "perm": perm, "changed": True})
        return changes

    changes = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for ch in changes:
            if ch["changed"]:
                c.print(
                    f"update topic perm from {ch['oldPerm']} to {perm} in {ch['brokerAddr']} success.", markup=False
                )
            else:
                c.print(f"new perm equals to the old one! ({ch['brokerAddr']})", markup=False)

    emit(as_json, changes, render)


@handle_errors
def topic_cluster_list(
    topic: TopicOption,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Get the clusters of a topic's brokers (TopicClusterSubCommand)."""

    async def go(admin: Admin) -> list[str]:
        route = await admin.topic_route(topic)
        return sorted({bd.cluster for bd in route.broker_datas})

    clusters = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for name in clusters:
            c.print(name, markup=False)

    emit(as_json, clusters, render)
