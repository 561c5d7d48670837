"""``rocketpipe admin`` consumer- and producer-group commands: ``updateSubGroup``,
``deleteSubGroup``, ``consumerProgress``, ``consumerConnection``, ``consumerStatus``,
``producerConnection``, ``resetOffsetByTime``, ``setConsumeMode`` (L4, cli).

Mirror ``tools/command/consumer/{UpdateSubGroup,ConsumerProgress,ConsumerStatus,SetConsumeMode}SubCommand``,
``consumer/DeleteSubscriptionGroupCommand``, ``connection/{Consumer,Producer}ConnectionSubCommand`` and
``offset/ResetOffsetByTimeCommand``.

Imports: the public API of :mod:`rocketpipe.client`, :mod:`rocketpipe.protocol.bodies.admin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from ...errors import EXIT_USAGE, fail, handle_errors
from ._common import (
    DEFAULT_NAMESRV,
    BrokerAddrOption,
    ClusterNameOption,
    JsonOption,
    NamesrvOption,
    either_broker_or_cluster,
    emit,
    java_bool,
    parse_timestamp,
    run_admin,
    short_time,
    table,
    version_desc,
)
from .topic import DLQ_PREFIX, RETRY_PREFIX

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin
    from rocketpipe.protocol.bodies.consumer import ConsumerConnection


def register(app: typer.Typer) -> None:
    """Add the group commands to ``app``."""
    app.command("updateSubGroup")(update_sub_group)
    app.command("deleteSubGroup")(delete_sub_group)
    app.command("consumerProgress")(consumer_progress)
    app.command("consumerConnection")(consumer_connection)
    app.command("consumerStatus")(consumer_status)
    app.command("producerConnection")(producer_connection)
    app.command("resetOffsetByTime")(reset_offset_by_time)
    app.command("setConsumeMode")(set_consume_mode)


def _opt_bool(value: str | None, default: bool) -> bool:
    return java_bool(value) if value is not None else default


@handle_errors
def update_sub_group(
    group: Annotated[str, typer.Option("--groupName", "-g", help="Consumer group name.")],
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    consume_enable: Annotated[str | None, typer.Option("--consumeEnable", "-s", help="true|false.")] = None,
    consume_from_min_enable: Annotated[
        str | None, typer.Option("--consumeFromMinEnable", "-m", help="true|false.")
    ] = None,
    consume_broadcast_enable: Annotated[
        str | None, typer.Option("--consumeBroadcastEnable", "-d", help="true|false.")
    ] = None,
    consume_message_orderly: Annotated[
        str | None, typer.Option("--consumeMessageOrderly", "-o", help="true|false.")
    ] = None,
    retry_queue_nums: Annotated[int | None, typer.Option("--retryQueueNums", "-q", help="Retry queues.")] = None,
    retry_max_times: Annotated[
        int | None, typer.Option("--retryMaxTimes", "-r", help="Redeliveries before the DLQ.")
    ] = None,
    group_retry_policy: Annotated[
        str | None, typer.Option("--groupRetryPolicy", "-p", help="5.x retry policy JSON.")
    ] = None,
    broker_id: Annotated[int | None, typer.Option("--brokerId", "-i", help="Consume from this broker id.")] = None,
    which_broker_when_consume_slowly: Annotated[
        int | None, typer.Option("--whichBrokerWhenConsumeSlowly", "-w", help="Broker id when consuming slowly.")
    ] = None,
    notify_consumer_ids_changed: Annotated[
        str | None, typer.Option("--notifyConsumerIdsChanged", "-a", help="true|false.")
    ] = None,
    attributes: Annotated[str | None, typer.Option("--attributes", help="5.x attributes: +a=b,+c=d,-e.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update or create subscription group (UpdateSubGroupSubCommand) on -b or every master of -c."""
    from rocketpipe.protocol.bodies.admin import SubscriptionGroupConfig

    either_broker_or_cluster(broker_addr, cluster_name, "updateSubGroup")
    policy: dict[str, Any] | None = None
    if group_retry_policy:
        try:
            policy = orjson.loads(group_retry_policy)
        except orjson.JSONDecodeError:
            raise fail("-p/--groupRetryPolicy must be JSON", EXIT_USAGE) from None
    attrs: dict[str, str] = {}
    for part in (attributes or "").split(","):
        if part.strip():
            k, _, v = part.strip().partition("=")
            attrs[k] = v
    # UpdateSubGroupSubCommand starts from a config with broadcast and from-min consumption off
    base = SubscriptionGroupConfig(group_name=group, consume_broadcast_enable=False, consume_from_min_enable=False)
    cfg = SubscriptionGroupConfig(
        group_name=group,
        consume_enable=_opt_bool(consume_enable, base.consume_enable),
        consume_from_min_enable=_opt_bool(consume_from_min_enable, base.consume_from_min_enable),
        consume_broadcast_enable=_opt_bool(consume_broadcast_enable, base.consume_broadcast_enable),
        consume_message_orderly=_opt_bool(consume_message_orderly, base.consume_message_orderly),
        retry_queue_nums=retry_queue_nums if retry_queue_nums is not None else base.retry_queue_nums,
        retry_max_times=retry_max_times if retry_max_times is not None else base.retry_max_times,
        group_retry_policy=policy,
        broker_id=broker_id if broker_id is not None else base.broker_id,
        which_broker_when_consume_slowly=(
            which_broker_when_consume_slowly
            if which_broker_when_consume_slowly is not None
            else base.which_broker_when_consume_slowly
        ),
        notify_consumer_ids_changed_enable=_opt_bool(
            notify_consumer_ids_changed, base.notify_consumer_ids_changed_enable
        ),
        attributes=attrs,
    )

    async def go(admin: Admin) -> list[str]:
        addrs = [broker_addr] if broker_addr else await admin.cluster_master_addrs(cluster_name)
        for addr in addrs:
            await admin.create_and_update_subscription_group_config(addr, cfg)
        return addrs

    addrs = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for a in addrs:
            c.print(f"create subscription group to {a} success.", markup=False)
        t = table("#Field", "#Value")
        for k, v in cfg.to_obj().items():
            t.add_row(k, str(v).lower() if isinstance(v, bool) else str(v))
        c.print(t)

    emit(as_json, {"brokerAddrs": addrs, "subscriptionGroupConfig": cfg.to_obj()}, render)


@handle_errors
def delete_sub_group(
    group: Annotated[str, typer.Option("--groupName", "-g", help="Subscription group name.")],
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    remove_offset: Annotated[
        str | None, typer.Option("--removeOffset", "-r", help="Also remove its offsets (true|false).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Delete subscription group from broker (DeleteSubscriptionGroupCommand). With -c the
    group's %RETRY% and %DLQ% topics are deleted from the cluster too, as mqadmin does."""
    either_broker_or_cluster(broker_addr, cluster_name, "deleteSubGroup")
    clean = java_bool(remove_offset)

    async def go(admin: Admin) -> dict[str, Any]:
        addrs = [broker_addr] if broker_addr else await admin.cluster_master_addrs(cluster_name)
        for addr in addrs:
            await admin.delete_subscription_group(addr, group, clean)
        deleted: list[str] = []
        if not broker_addr and cluster_name:
            for topic in (RETRY_PREFIX + group, DLQ_PREFIX + group):
                try:
                    await admin.delete_topic(topic, cluster_name)
                    deleted.append(topic)
                except Exception:
                    pass
        return {"groupName": group, "brokerAddrs": addrs, "clusterName": cluster_name, "deletedTopics": deleted}

    result = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for a in result["brokerAddrs"]:
            where = f" in cluster [{cluster_name}]" if not broker_addr else ""
            c.print(f"delete subscription group [{group}] from broker [{a}]{where} success.", markup=False)
        for t in result["deletedTopics"]:
            c.print(f"delete topic [{t}] from cluster [{cluster_name}] success.", markup=False)

    emit(as_json, result, render)


@handle_errors
def consumer_progress(
    group: Annotated[str | None, typer.Option("--groupName", "-g", help="Consumer group name.")] = None,
    topic: Annotated[str | None, typer.Option("--topicName", "-t", help="Only this topic.")] = None,
    show_client_ip: Annotated[
        str | None, typer.Option("--showClientIP", "-s", help="Show the client of each queue (true|false).")
    ] = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; routes are used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query consumer's progress (ConsumerProgressSubCommand): per queue broker offset, consumer
    offset, diff (lag = broker − consumer offset) and inflight; without -g one line per group."""
    show_ip = java_bool(show_client_ip)

    if group is None:
        groups = run_admin(namesrv, _all_groups)

        def render_groups(c: Console) -> None:
            t = table(
                "#Group",
                "#Count",
                "#Version",
                "#Type",
                "#Model",
                "#TPS",
                "#Diff Total",
                numeric=("#Count", "#TPS", "#Diff Total"),
            )
            for g in groups:
                t.add_row(
                    g["group"],
                    str(g["count"]),
                    g["version"],
                    g["consumeType"],
                    g["messageModel"],
                    str(g["consumeTps"]),
                    str(g["diffTotal"]),
                )
            c.print(t)

        emit(as_json, groups, render_groups)
        return

    async def go(admin: Admin) -> dict[str, Any]:
        stats = await admin.examine_consume_stats(group, topic)
        owners: dict[tuple[str, str, int], str] = {}
        if show_ip:
            owners = await _queue_owners(admin, group)
        rows = []
        for mq, w in sorted(
            stats.offset_table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)
        ):
            row: dict[str, Any] = {
                "topic": mq.topic,
                "brokerName": mq.broker_name,
                "queueId": mq.queue_id,
                "brokerOffset": w.broker_offset,
                "consumerOffset": w.consumer_offset,
                "diff": w.broker_offset - w.consumer_offset,
                "inflight": w.pull_offset - w.consumer_offset,
                "lastTimestamp": w.last_timestamp,
            }
            if show_ip:
                row["clientIP"] = owners.get((mq.topic, mq.broker_name, mq.queue_id), "N/A")
            rows.append(row)
        return {
            "group": group,
            "queues": rows,
            "consumeTps": stats.consume_tps,
            "diffTotal": sum(r["diff"] for r in rows),
            "inflightTotal": sum(r["inflight"] for r in rows),
        }

    data = run_admin(namesrv, go)

    def render(c: Console) -> None:
        cols = ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset"]
        cols += ["#Client IP"] if show_ip else []
        cols += ["#Diff", "#Inflight", "#LastTime"]
        t = table(*cols, numeric=("#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight"))
        for r in data["queues"]:
            cells = [r["topic"], r["brokerName"], str(r["queueId"]), str(r["brokerOffset"]), str(r["consumerOffset"])]
            cells += [r["clientIP"]] if show_ip else []
            cells += [str(r["diff"]), str(r["inflight"]), short_time(r["lastTimestamp"])]
            t.add_row(*cells)
        c.print(t)
        c.print(f"Consume TPS: {data['consumeTps']:.2f}")
        c.print(f"Consume Diff Total: {data['diffTotal']}")
        c.print(f"Consume Inflight Total: {data['inflightTotal']}")

    emit(as_json, data, render)


async def _all_groups(admin: Admin) -> list[dict[str, Any]]:
    """One line per ``%RETRY%<group>`` topic of the name server (the groups list of mqadmin)."""
    out = []
    for t in sorted(await admin.fetch_all_topic_list()):
        if not t.startswith(RETRY_PREFIX):
            continue
        g = t[len(RETRY_PREFIX) :]
        entry: dict[str, Any] = {
            "group": g,
            "count": 0,
            "version": "OFFLINE",
            "consumeType": "",
            "messageModel": "",
            "consumeTps": 0,
            "diffTotal": 0,
        }
        try:
            stats = await admin.examine_consume_stats(g)
            entry["consumeTps"] = int(stats.consume_tps)
            entry["diffTotal"] = stats.compute_total_diff()
        except Exception:
            pass
        try:
            cc = await admin.examine_consumer_connection_info(g)
            entry["count"] = len(cc.connection_set)
            entry["version"] = version_desc(min(c.version for c in cc.connection_set))
            entry["consumeType"] = "PUSH" if cc.consume_type == "CONSUME_PASSIVELY" else "PULL"
            entry["messageModel"] = cc.message_model or ""
        except Exception:
            pass
        out.append(entry)
    return out


async def _queue_owners(admin: Admin, group: str) -> dict[tuple[str, str, int], str]:
    """Queue → client IP from each online client's running info (mqadmin -s true)."""
    owners: dict[tuple[str, str, int], str] = {}
    try:
        cc = await admin.examine_consumer_connection_info(group)
    except Exception:
        return owners
    for conn in cc.connection_set:
        try:
            info = await admin.get_consumer_running_info(group, conn.client_id)
        except Exception:
            continue
        ip = conn.client_id.split("@", 1)[0]
        for mq in info.mq_table:
            owners[(mq.topic, mq.broker_name, mq.queue_id)] = ip
    return owners


def _connection_rows(cc: ConsumerConnection) -> list[dict[str, Any]]:
    return [
        {
            "clientId": c.client_id,
            "clientAddr": c.client_addr,
            "language": c.language,
            "version": c.version,
            "versionDesc": version_desc(c.version),
        }
        for c in cc.connection_set
    ]


@handle_errors
def consumer_connection(
    group: Annotated[str, typer.Option("--consumerGroup", "-g", help="Consumer group name.")],
    broker_addr: BrokerAddrOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query consumer's socket connection, client version and subscription (ConsumerConnectionSubCommand)."""
    cc = run_admin(namesrv, lambda a: a.examine_consumer_connection_info(group, broker_addr))
    data: dict[str, Any] = {
        "connectionSet": _connection_rows(cc),
        "subscriptionTable": {t: s.sub_string for t, s in sorted(cc.subscription_table.items())},
        "consumeType": cc.consume_type,
        "messageModel": cc.message_model,
        "consumeFromWhere": cc.consume_from_where,
    }

    def render(c: Console) -> None:
        t = table("#ClientId", "#ClientAddr", "#Language", "#Version")
        for r in data["connectionSet"]:
            t.add_row(r["clientId"], r["clientAddr"], r["language"], r["versionDesc"])
        c.print(t)
        s = table("#Topic", "#SubExpression", title="Below is subscription:")
        for topic, expr in data["subscriptionTable"].items():
            s.add_row(topic, expr)
        c.print(s)
        c.print(f"ConsumeType: {cc.consume_type}", markup=False)
        c.print(f"MessageModel: {cc.message_model}", markup=False)
        c.print(f"ConsumeFromWhere: {cc.consume_from_where}", markup=False)

    emit(as_json, data, render)


@handle_errors
def consumer_status(
    group: Annotated[str, typer.Option("--consumerGroup", "-g", help="Consumer group name.")],
    client_id: Annotated[str | None, typer.Option("--clientId", "-i", help="One client's running info.")] = None,
    broker_addr: BrokerAddrOption = None,
    jstack: Annotated[bool, typer.Option("--jstack", "-s", help="Ask for the client's thread stacks.")] = False,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query consumer's internal data structure (ConsumerStatusSubCommand): with -i one client's
    running info (properties, subscriptions, queues); without, every client of the group."""

    async def go(admin: Admin) -> list[dict[str, Any]]:
        if client_id:
            ids = [client_id]
        else:
            cc = await admin.examine_consumer_connection_info(group, broker_addr)
            ids = [c.client_id for c in cc.connection_set]
        out = []
        for cid in ids:
            info = await admin.get_consumer_running_info(group, cid, jstack)
            out.append(
                {
                    "clientId": cid,
                    "properties": dict(sorted(info.properties.items())),
                    "subscriptionSet": sorted(f"{s.topic}:{s.sub_string}" for s in info.subscription_set),
                    "mqTable": [
                        {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, **pq}
                        for mq, pq in sorted(info.mq_table.items(), key=lambda kv: str(kv[0]))
                    ],
                    "jstack": info.jstack,
                }
            )
        return out

    infos = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for info in infos:
            c.print(f"[bold]{info['clientId']}[/]")
            p = table("#Property", "#Value")
            for k, v in info["properties"].items():
                p.add_row(k, str(v))
            c.print(p)
            q = table(
                "#Topic",
                "#Broker Name",
                "#QID",
                "#Commit Offset",
                "#Cached Msgs",
                numeric=("#QID", "#Commit Offset", "#Cached Msgs"),
            )
            for r in info["mqTable"]:
                q.add_row(
                    r["topic"],
                    r["brokerName"],
                    str(r["queueId"]),
                    str(r.get("commitOffset", "")),
                    str(r.get("cachedMsgCount", "")),
                )
            c.print(q)

    emit(as_json, infos, render)


@handle_errors
def producer_connection(
    group: Annotated[str, typer.Option("--producerGroup", "-g", help="Producer group name.")],
    topic: Annotated[str, typer.Option("--topic", "-t", help="A topic the group sends to (finds the brokers).")],
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query producer's socket connection and client version (ProducerConnectionSubCommand)."""
    conns = run_admin(namesrv, lambda a: a.examine_producer_connection_info(group, topic))
    rows: list[dict[str, Any]] = [
        {
            "clientId": c.client_id,
            "clientAddr": c.client_addr,
            "language": c.language,
            "version": c.version,
            "versionDesc": version_desc(c.version),
        }
        for c in conns
    ]

    def render(c: Console) -> None:
        t = table("#Index", "#ClientId", "#ClientAddr", "#Language", "#Version", numeric=("#Index",))
        for i, r in enumerate(rows, 1):
            t.add_row(f"{i:04d}", r["clientId"], r["clientAddr"], r["language"], r["versionDesc"])
        c.print(t)

    emit(as_json, rows, render)


@handle_errors
def reset_offset_by_time(
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group.")],
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic.")],
    timestamp: Annotated[str, typer.Option("--timestamp", "-s", help="now | epoch ms | yyyy-MM-dd#HH:mm:ss:SSS.")],
    force: Annotated[
        str | None, typer.Option("--force", "-f", help="Move offsets forward too (true|false); 5.x brokers ignore it.")
    ] = None,
    broker: Annotated[
        str | None, typer.Option("--broker", "-b", help="With -q: one queue on this broker address.")
    ] = None,
    queue: Annotated[int | None, typer.Option("--queue", "-q", help="With -b: the queue id.")] = None,
    offset: Annotated[
        int | None, typer.Option("--offset", "-o", help="With -b/-q: this offset, not the timestamp's.")
    ] = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; the route is used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Reset consumer offset by timestamp, without client restart (ResetOffsetByTimeCommand).

    With -b and -q one queue is set (to -o, else to the timestamp's offset). Otherwise every
    queue: the broker resets the running consumers (5.x: server side); when a 4.x broker answers
    CONSUMER_NOT_ONLINE the offsets are committed directly, as mqadmin's fallback."""
    from rocketpipe.errors import BrokerError
    from rocketpipe.protocol.codes import ResponseCode

    ts = parse_timestamp(timestamp)
    is_force = _opt_bool(force, True)
    if broker is not None and queue is not None and queue >= 0:
        broker_addr, queue_id = broker, queue

        async def one(admin: Admin) -> int:
            target = offset if offset is not None else await admin.search_offset_on(broker_addr, topic, queue_id, ts)
            await admin.reset_offset_by_queue_id(broker_addr, group, topic, queue_id, target)
            return target

        target = run_admin(namesrv, one)
        data: dict[str, Any] = {
            "group": group,
            "topic": topic,
            "timestamp": ts,
            "brokerAddr": broker,
            "queueId": queue,
            "offset": target,
        }
        emit(as_json, data, lambda c: c.print(f"reset consumer offset to {target}", markup=False))
        return

    async def every(admin: Admin) -> dict[str, Any]:
        try:
            table_ = await admin.reset_offset_by_timestamp(topic, group, ts, is_force)
        except BrokerError as exc:
            if exc.response_code != ResponseCode.CONSUMER_NOT_ONLINE:
                raise
            stats = await admin.reset_offset_by_timestamp_old(group, topic, ts, is_force)
            rows = [
                {
                    "brokerName": r.broker_name,
                    "queueId": r.queue_id,
                    "brokerOffset": r.broker_offset,
                    "consumerOffset": r.consumer_offset,
                    "timestampOffset": r.timestamp_offset,
                    "offset": r.rollback_offset,
                }
                for r in stats
            ]
            return {"group": group, "topic": topic, "timestamp": ts, "old": True, "offsets": rows}
        rows = [
            {"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": o}
            for mq, o in sorted(table_.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
        ]
        return {"group": group, "topic": topic, "timestamp": ts, "old": False, "offsets": rows}

    result = run_admin(namesrv, every)

    def render(c: Console) -> None:
        c.print(f"reset consumer offset of group[{group}], topic[{topic}] to timestamp[{ts}]", markup=False)
        cols: tuple[str, ...]
        keys: tuple[str, ...]
        if result["old"]:
            cols = ("#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#resetOffset")
            keys = ("brokerName", "queueId", "brokerOffset", "consumerOffset", "timestampOffset", "offset")
        else:
            cols, keys = ("#brokerName", "#queueId", "#offset"), ("brokerName", "queueId", "offset")
        t = table(*cols, numeric=cols[1:])
        for r in result["offsets"]:
            t.add_row(*(str(r[k]) for k in keys))
        c.print(t)

    emit(as_json, result, render)


@handle_errors
def set_consume_mode(
    topic: Annotated[str, typer.Option("--topicName", "-t", help="Topic name.")],
    group: Annotated[str, typer.Option("--groupName", "-g", help="Consumer group name.")],
    mode: Annotated[str, typer.Option("--mode", "-m", help="PULL or POP.")],
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    pop_share_queue_num: Annotated[
        int, typer.Option("--popShareQueueNum", "-q", min=0, help="POP: queues shared.")
    ] = 0,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Set consume message mode, PULL or POP (SetConsumeModeSubCommand; 5.x brokers)."""
    either_broker_or_cluster(broker_addr, cluster_name, "setConsumeMode")
    addrs = run_admin(
        namesrv,
        lambda a: a.set_message_request_mode(
            topic, group, mode, pop_share_queue_num, cluster_name=cluster_name, broker_addr=broker_addr
        ),
    )

    def render(c: Console) -> None:
        for a in addrs:
            c.print(f"set consume mode to {a} success.", markup=False)
        c.print(
            f"topic[{topic}] group[{group}] consume mode[{mode.upper()}] popShareQueueNum[{pop_share_queue_num}]",
            markup=False,
        )

    emit(
        as_json,
        {
            "brokerAddrs": addrs,
            "topic": topic,
            "group": group,
            "mode": mode.upper(),
            "popShareQueueNum": pop_share_queue_num,
        },
        render,
    )
