"""``rocketpipe admin`` message commands: ``queryMsgById``, ``queryMsgByKey``,
``queryMsgByOffset``, ``queryMsgByUniqueKey``, ``printMsg``, ``sendMessage``, ``consumeMessage``
and rocketpipe's ``resendMsgById`` (L4, cli).

Mirror ``tools/command/message/{QueryMsgById,QueryMsgByKey,QueryMsgByOffset,QueryMsgByUniqueKey,
PrintMessage}SubCommand`` and ``message/{SendMessage,ConsumeMessage}Command``. ``resendMsgById``
has no mqadmin counterpart: it puts a dead-lettered message back where its group consumes it.

Imports: the public API of :mod:`rocketpipe.client`, :mod:`rocketpipe.protocol.message`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from ...errors import EXIT_NOT_FOUND, EXIT_USAGE, fail, handle_errors
from ._common import (
    DEFAULT_NAMESRV,
    JsonOption,
    NamesrvOption,
    body_text,
    emit,
    java_bool,
    message_json,
    parse_timestamp,
    render_message,
    run_admin,
    short_time,
    table,
)
from .topic import DLQ_PREFIX, RETRY_PREFIX

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin, MessageExt, MessageQueue, SendResult

#: Properties a broker sets on a stored message; a resend leaves them out.
_STORE_PROPERTIES: Final = frozenset(
    {"MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "CLUSTER", "RECONSUME_TIME", "MAX_RECONSUME_TIMES"}
)
#: ``printMsg`` / ``consumeMessage`` read at most this many messages per pull.
_PULL_BATCH: Final = 32


def register(app: typer.Typer) -> None:
    """Add the message commands to ``app``."""
    app.command("queryMsgById")(query_msg_by_id)
    app.command("queryMsgByKey")(query_msg_by_key)
    app.command("queryMsgByOffset")(query_msg_by_offset)
    app.command("queryMsgByUniqueKey")(query_msg_by_unique_key)
    app.command("printMsg")(print_msg)
    app.command("sendMessage")(send_message)
    app.command("consumeMessage")(consume_message)
    app.command("queryMsgTraceById")(query_msg_trace_by_id)
    app.command("resendMsgById")(resend_msg_by_id)


def _ids(value: str) -> list[str]:
    return [i.strip() for i in value.split(",") if i.strip()]


def _resend_copy(msg: MessageExt, topic: str) -> Any:
    """A new :class:`~rocketpipe.client.Message` with ``msg``'s body, flag and user/system
    properties (``UNIQ_KEY`` kept, as Java's resend), minus what the store added."""
    from rocketpipe.client import Message

    props = {k: v for k, v in msg.properties.items() if k not in _STORE_PROPERTIES}
    return Message(topic=topic, body=msg.body, flag=msg.flag, properties=props)


def _send_result_json(r: SendResult) -> dict[str, Any]:
    return {
        "sendStatus": r.send_status.value,
        "msgId": r.msg_id,
        "offsetMsgId": r.offset_msg_id,
        "brokerName": r.message_queue.broker_name,
        "queueId": r.message_queue.queue_id,
        "queueOffset": r.queue_offset,
    }


async def _send(admin: Admin, msgs: list[Any], queue: MessageQueue | None = None) -> list[SendResult]:
    from rocketpipe.client import Producer

    out = []
    async with Producer(runtime=admin.runtime) as p:
        for m in msgs:
            out.append(await p.send(m, queue=queue))
    return out


async def _tracks(admin: Admin, msg: MessageExt) -> list[dict[str, Any]]:
    """``messageTrackDetail`` as JSON rows (empty when the lookup fails, as mqadmin prints and goes on)."""
    from rocketpipe.errors import RocketMQError

    try:
        found = await admin.message_track_detail(msg)
    except RocketMQError:
        return []
    return [
        {"consumerGroup": t.consumer_group, "trackType": t.track_type, "exceptionDesc": t.exception_desc} for t in found
    ]


def _render_tracks(c: Console, tracks: list[dict[str, Any]]) -> None:
    if not tracks:
        c.print("WARN: No Consumer")
        return
    t = table("#Consumer Group", "#Track Type", "#Exception Desc")
    for r in tracks:
        t.add_row(r["consumerGroup"], r["trackType"], r["exceptionDesc"] or "")
    c.print(t)


@handle_errors
def query_msg_by_id(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    msg_id: Annotated[str, typer.Option("--msgId", "-i", help="Message id(s), offset or unique; comma-separated.")],
    consumer_group: Annotated[
        str | None, typer.Option("--consumerGroup", "-g", help="With -d: push to that client.")
    ] = None,
    client_id: Annotated[str | None, typer.Option("--clientId", "-d", help="The consumer's client id.")] = None,
    send_message: Annotated[
        str | None, typer.Option("--sendMessage", "-s", help="true: send the message again.")
    ] = None,
    unit_name: Annotated[str | None, typer.Option("--unitName", "-u", help="Unit name (accepted, unused).")] = None,
    body_format: Annotated[
        str | None, typer.Option("--bodyFormat", "-f", help="Print the body in this charset.")
    ] = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; the route is used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query message by id (QueryMsgByIdSubCommand). With -g and -d the message is pushed to
    that consumer client (consumeMessageDirectly); with -s true it is sent again to its topic."""
    ids = _ids(msg_id)

    async def go(admin: Admin) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i in ids:
            msg = await admin.query_message_by_id(topic, i)
            entry: dict[str, Any] = {"message": message_json(msg, body_format)}
            if consumer_group and client_id:
                r = await admin.consume_message_directly(consumer_group, client_id, topic, msg.offset_msg_id)
                entry["consumeResult"] = {
                    "consumeResult": r.consume_result.value if r.consume_result else None,
                    "order": r.order,
                    "autoCommit": r.auto_commit,
                    "remark": r.remark,
                    "spentTimeMills": r.spent_time_mills,
                }
            elif java_bool(send_message):
                (sent,) = await _send(admin, [_resend_copy(msg, msg.topic)])
                entry["sendResult"] = _send_result_json(sent)
            else:
                entry["tracks"] = await _tracks(admin, msg)
            entry["_msg"] = msg
            out.append(entry)
        return out

    results = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for e in results:
            if "sendResult" in e:
                c.print(f"prepare resend msg. originalMsgId={e['message']['msgId']}", markup=False)
                _render_send(c, [e["sendResult"]])
            elif "consumeResult" in e:
                t = table("#Field", "#Value")
                for k, v in e["consumeResult"].items():
                    t.add_row(k, str(v))
                c.print(t)
            else:
                render_message(c, e["_msg"], body_format)
                _render_tracks(c, e["tracks"])

    emit(as_json, [{k: v for k, v in e.items() if k != "_msg"} for e in results], render)


@handle_errors
def query_msg_by_key(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    msg_key: Annotated[str, typer.Option("--msgKey", "-k", help="Message key.")],
    begin_timestamp: Annotated[int, typer.Option("--beginTimestamp", "-b", help="Store time from, epoch ms.")] = 0,
    end_timestamp: Annotated[int, typer.Option("--endTimestamp", "-e", help="Store time to, epoch ms.")] = 2**63 - 1,
    max_num: Annotated[int, typer.Option("--maxNum", "-m", min=1, help="Max messages per broker.")] = 64,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; the route is used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query message by key (QueryMsgByKeySubCommand): message id, queue and offset of each match."""
    result = run_admin(namesrv, lambda a: a.query_message(topic, msg_key, max_num, begin_timestamp, end_timestamp))
    rows: list[dict[str, Any]] = [
        {
            "msgId": m.msg_id,
            "offsetMsgId": m.offset_msg_id,
            "queueId": m.queue_id,
            "queueOffset": m.queue_offset,
            "storeTimestamp": m.store_timestamp,
        }
        for m in result.message_list
    ]

    def render(c: Console) -> None:
        t = table("#Message ID", "#QID", "#Offset", numeric=("#QID", "#Offset"))
        for r in rows:
            t.add_row(r["msgId"], str(r["queueId"]), str(r["queueOffset"]))
        c.print(t)

    emit(as_json, rows, render)


async def _pull_range(
    admin: Admin, mq: MessageQueue, start: int, end: int, limit: int | None = None
) -> list[MessageExt]:
    """Messages of ``mq`` with queue offsets in [start, end), at most ``limit``."""
    from rocketpipe.client import PullStatus
    from rocketpipe.protocol.message import decode_records

    out: list[MessageExt] = []
    offset = start
    while offset < end and (limit is None or len(out) < limit):
        want = min(_PULL_BATCH, end - offset)
        raw = await admin.pull_raw(mq, offset, want)
        if raw.status != PullStatus.FOUND:
            if raw.status == PullStatus.OFFSET_ILLEGAL and raw.next_begin_offset > offset:
                offset = raw.next_begin_offset
                continue
            break
        for m in decode_records(raw.body):
            if m.queue_offset >= end or (limit is not None and len(out) >= limit):
                break
            m.broker_name = mq.broker_name
            out.append(m)
        if raw.next_begin_offset <= offset:
            break
        offset = raw.next_begin_offset
    return out


async def _queues(admin: Admin, topic: str, broker_name: str | None, queue_id: int | None) -> list[MessageQueue]:
    queues = await admin.topic_queues(topic)
    return [
        q
        for q in queues
        if (broker_name is None or q.broker_name == broker_name) and (queue_id is None or q.queue_id == queue_id)
    ]


@handle_errors
def query_msg_by_offset(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    broker_name: Annotated[str, typer.Option("--brokerName", "-b", help="Broker name.")],
    queue_id: Annotated[int, typer.Option("--queueId", "-i", help="Queue id.")],
    offset: Annotated[int, typer.Option("--offset", "-o", min=0, help="Queue offset.")],
    body_format: Annotated[
        str | None, typer.Option("--bodyFormat", "-f", help="Print the body in this charset.")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query message by queue offset (QueryMsgByOffsetSubCommand)."""
    from rocketpipe.client import MessageQueue

    mq = MessageQueue(topic, broker_name, queue_id)
    msgs = run_admin(namesrv, lambda a: _pull_range(a, mq, offset, offset + 1, 1))
    if not msgs:
        raise fail(f"no message at {broker_name} queue {queue_id} offset {offset}", EXIT_NOT_FOUND)
    emit(as_json, message_json(msgs[0], body_format), lambda c: render_message(c, msgs[0], body_format))


@handle_errors
def query_msg_by_unique_key(
    msg_id: Annotated[str, typer.Option("--msgId", "-i", help="Unique key (client msg id).")],
    topic: Annotated[str, typer.Option("--topic", "-t", help="The topic of the message.")],
    consumer_group: Annotated[
        str | None, typer.Option("--consumerGroup", "-g", help="With -d: push to that client.")
    ] = None,
    client_id: Annotated[str | None, typer.Option("--clientId", "-d", help="The consumer's client id.")] = None,
    show_all: Annotated[bool, typer.Option("--showAll", "-a", help="Print every stored copy (at most 32).")] = False,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Cluster name (accepted; the route is used).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query message by unique key (QueryMsgByUniqueKeySubCommand)."""

    async def go(admin: Admin) -> tuple[list[MessageExt], Any]:
        msgs = await admin.query_message_by_unique_key(topic, msg_id)
        if not msgs:
            return msgs, None
        if consumer_group and client_id:
            r = await admin.consume_message_directly(consumer_group, client_id, topic, msgs[0].offset_msg_id)
            return msgs, r
        return msgs, await _tracks(admin, msgs[0])

    msgs, pushed = run_admin(namesrv, go)
    tracks: list[dict[str, Any]] | None = None
    if isinstance(pushed, list):
        tracks, pushed = pushed, None
    if not msgs:
        raise fail(f"no message of unique key {msg_id} in topic {topic}", EXIT_NOT_FOUND)
    shown = msgs if show_all else msgs[:1]
    data: dict[str, Any] = {"messages": [message_json(m) for m in shown]}
    if tracks is not None:
        data["tracks"] = tracks
    if pushed is not None:
        data["consumeResult"] = {
            "consumeResult": pushed.consume_result.value if pushed.consume_result else None,
            "remark": pushed.remark,
        }

    def render(c: Console) -> None:
        for m in shown:
            render_message(c, m)
        if tracks is not None:
            _render_tracks(c, tracks)
        if pushed is not None:
            c.print(f"consumeResult: {data['consumeResult']['consumeResult']}", markup=False)

    emit(as_json, data, render)


def _tag_filter(expr: str | None) -> set[str] | None:
    """Tags of a ``TagA || TagB`` expression; None = every message (``*`` or none)."""
    if expr is None or expr.strip() in ("", "*"):
        return None
    return {t.strip() for t in expr.split("||") if t.strip()}


@handle_errors
def print_msg(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    charset_name: Annotated[str, typer.Option("--charsetName", "-c", help="Body charset.")] = "UTF-8",
    sub_expression: Annotated[str | None, typer.Option("--subExpression", "-s", help="Tags: TagA || TagB.")] = None,
    begin_timestamp: Annotated[
        str | None, typer.Option("--beginTimestamp", "-b", help="From: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS.")
    ] = None,
    end_timestamp: Annotated[
        str | None, typer.Option("--endTimestamp", "-e", help="To: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS.")
    ] = None,
    print_body: Annotated[str, typer.Option("--printBody", "-d", help="Print bodies (true|false).")] = "true",
    lmq_parent_topic: Annotated[str | None, typer.Option("--lmqParentTopic", "-l", help="Not supported.")] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Print the messages of every queue of a topic, optionally within a store-time range (PrintMessageSubCommand)."""
    begin = parse_timestamp(begin_timestamp) if begin_timestamp else None
    end = parse_timestamp(end_timestamp) if end_timestamp else None
    tags = _tag_filter(sub_expression)
    with_body = java_bool(print_body, True)

    async def go(admin: Admin) -> list[dict[str, Any]]:
        out = []
        for mq in await admin.topic_queues(topic):
            lo = await admin.min_offset(mq) if begin is None else await admin.search_offset(mq, begin)
            hi = await admin.max_offset(mq) if end is None else await admin.search_offset(mq, end)
            msgs = [m for m in await _pull_range(admin, mq, lo, hi) if tags is None or m.tags in tags]
            out.append(
                {
                    "brokerName": mq.broker_name,
                    "queueId": mq.queue_id,
                    "minOffset": lo,
                    "maxOffset": hi,
                    "messages": msgs,
                }
            )
        return out

    queues = run_admin(namesrv, go)

    def one(m: MessageExt) -> dict[str, Any]:
        d = {
            "msgId": m.msg_id,
            "queueOffset": m.queue_offset,
            "tags": m.tags,
            "keys": m.keys,
            "storeTimestamp": m.store_timestamp,
        }
        if with_body:
            d["body"] = body_text(m.body, charset_name)
        return d

    data = [
        {**{k: v for k, v in q.items() if k != "messages"}, "messages": [one(m) for m in q["messages"]]} for q in queues
    ]

    def render(c: Console) -> None:
        t = table("#Broker Name", "#QID", "#Offset", "#MsgId", "#Tags", "#Body", numeric=("#QID", "#Offset"))
        for q in data:
            for m in q["messages"]:
                t.add_row(
                    q["brokerName"],
                    str(q["queueId"]),
                    str(m["queueOffset"]),
                    m["msgId"],
                    m["tags"] or "",
                    m.get("body", "") or "",
                )
        c.print(t)
        c.print(f"{sum(len(q['messages']) for q in data)} message(s) in {len(data)} queue(s)")

    emit(as_json, data, render)


def _render_send(c: Console, rows: list[dict[str, Any]]) -> None:
    t = table("#Broker Name", "#QID", "#Send Result", "#MsgId", numeric=("#QID",))
    for r in rows:
        t.add_row(r["brokerName"], str(r["queueId"]), r["sendStatus"], r["msgId"])
    c.print(t)


@handle_errors
def send_message(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    body: Annotated[str, typer.Option("--body", "-p", help="UTF-8 body.")],
    key: Annotated[str | None, typer.Option("--key", "-k", help="Message keys.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", "-c", help="Message tags.")] = None,
    broker: Annotated[str | None, typer.Option("--broker", "-b", help="Send to this broker (name).")] = None,
    qid: Annotated[int | None, typer.Option("--qid", "-i", help="Send to this queue (with -b).")] = None,
    msg_trace_enable: Annotated[
        str | None, typer.Option("--msgTraceEnable", "-m", help="Not supported (false).")
    ] = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Send a message (SendMessageCommand); -b and -i pick the queue."""
    from rocketpipe.client import Message, MessageQueue

    if qid is not None and broker is None:
        raise fail("sendMessage: -i/--qid needs -b/--broker", EXIT_USAGE)
    msg = Message.build(topic, body.encode(), tags=tags, keys=key)

    async def go(admin: Admin) -> list[SendResult]:
        queue = None
        if broker is not None:
            if qid is not None:
                queue = MessageQueue(topic, broker, qid)
            else:
                qs = [q for q in await admin.topic_queues(topic) if q.broker_name == broker]
                if not qs:
                    raise fail(f"topic {topic} has no queue on broker {broker}", EXIT_NOT_FOUND)
                queue = qs[0]
        return await _send(admin, [msg], queue)

    rows = [_send_result_json(r) for r in run_admin(namesrv, go)]
    emit(as_json, rows[0], lambda c: _render_send(c, rows))


@handle_errors
def consume_message(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic name.")],
    broker_name: Annotated[str | None, typer.Option("--brokerName", "-b", help="Only this broker.")] = None,
    queue_id: Annotated[int | None, typer.Option("--queueId", "-i", help="Only this queue.")] = None,
    offset: Annotated[int | None, typer.Option("--offset", "-o", min=0, help="From this queue offset.")] = None,
    consumer_group: Annotated[
        str | None, typer.Option("--consumerGroup", "-g", help="Accepted; no offset is committed.")
    ] = None,
    begin_timestamp: Annotated[
        str | None, typer.Option("--beginTimestamp", "-s", help="From: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS.")
    ] = None,
    end_timestamp: Annotated[
        str | None, typer.Option("--endTimestamp", "-e", help="To: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS.")
    ] = None,
    message_number: Annotated[int, typer.Option("--MessageNumber", "-c", min=1, help="Messages to read.")] = 128,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Consume (read) messages of a topic or one queue, from an offset or a time (ConsumeMessageCommand).

    Pulls without a group's state: nothing is committed."""
    if offset is not None and (broker_name is None or queue_id is None):
        raise fail("consumeMessage: -o/--offset needs -b/--brokerName and -i/--queueId", EXIT_USAGE)
    begin = parse_timestamp(begin_timestamp) if begin_timestamp else None
    end = parse_timestamp(end_timestamp) if end_timestamp else None

    async def go(admin: Admin) -> list[MessageExt]:
        out: list[MessageExt] = []
        for mq in await _queues(admin, topic, broker_name, queue_id):
            left = message_number - len(out)
            if left <= 0:
                break
            if offset is not None:
                lo = offset
            elif begin is not None:
                lo = await admin.search_offset(mq, begin)
            else:
                lo = await admin.min_offset(mq)
            hi = await admin.max_offset(mq) if end is None else await admin.search_offset(mq, end)
            out.extend(await _pull_range(admin, mq, lo, hi, left))
        return out

    msgs = run_admin(namesrv, go)
    rows = [{**message_json(m), "body": body_text(m.body, "utf-8")} for m in msgs]

    def render(c: Console) -> None:
        t = table("#Broker Name", "#QID", "#Offset", "#MsgId", "#Body", numeric=("#QID", "#Offset"))
        for r in rows:
            t.add_row(r["brokerName"], str(r["queueId"]), str(r["queueOffset"]), r["msgId"], r["body"] or "")
        c.print(t)
        c.print(f"Consume ok: {len(rows)} message(s)")

    emit(as_json, rows, render)


@handle_errors
def resend_msg_by_id(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Where the message is, e.g. %DLQ%<group>.")],
    msg_id: Annotated[str, typer.Option("--msgId", "-i", help="Message id(s), offset or unique; comma-separated.")],
    consumer_group: Annotated[
        str | None, typer.Option("--consumerGroup", "-g", help="Group to redeliver to (default: from the %DLQ% topic).")
    ] = None,
    to_original: Annotated[
        bool, typer.Option("--toOriginalTopic", "-o", help="Send to the original topic instead of %RETRY%<group>.")
    ] = False,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Send stored messages again (rocketpipe; mqadmin's nearest is ``queryMsgById -s true``,
    which sends to the message's own topic). A message of ``%DLQ%<group>`` goes to
    ``%RETRY%<group>`` (only that group consumes it again, as after a consumer's send-back; its
    consumers see the original topic) or, with -o, to its original topic (every group)."""
    group = consumer_group or (topic[len(DLQ_PREFIX) :] if topic.startswith(DLQ_PREFIX) else None)
    ids = _ids(msg_id)

    async def go(admin: Admin) -> list[dict[str, Any]]:
        out = []
        for i in ids:
            msg = await admin.query_message_by_id(topic, i)
            original = msg.properties.get("RETRY_TOPIC") or msg.topic
            if to_original or group is None:
                dest = original
            else:
                dest = RETRY_PREFIX + group
            copy = _resend_copy(msg, dest)
            if dest.startswith(RETRY_PREFIX):
                copy.properties["RETRY_TOPIC"] = original
            (sent,) = await _send(admin, [copy])
            out.append({"originalMsgId": i, "fromTopic": msg.topic, "toTopic": dest, **_send_result_json(sent)})
        return out

    rows = run_admin(namesrv, go)

    def render(c: Console) -> None:
        t = table(
            "#Original MsgId", "#From", "#To", "#Broker Name", "#QID", "#Send Result", "#MsgId", numeric=("#QID",)
        )
        for r in rows:
            t.add_row(
                r["originalMsgId"],
                r["fromTopic"],
                r["toTopic"],
                r["brokerName"],
                str(r["queueId"]),
                r["sendStatus"],
                r["msgId"],
            )
        c.print(t)

    emit(as_json, rows, render)


@handle_errors
def query_msg_trace_by_id(
    msg_id: Annotated[str, typer.Option("--msgId", "-i", help="Message id (the unique key).")],
    trace_topic: Annotated[
        str, typer.Option("--traceTopic", "-t", help="Where the traces were sent.")
    ] = "RMQ_SYS_TRACE_TOPIC",
    begin_timestamp: Annotated[int, typer.Option("--beginTimestamp", "-b", help="Store time from, epoch ms.")] = 0,
    end_timestamp: Annotated[int, typer.Option("--endTimestamp", "-e", help="Store time to, epoch ms.")] = 2**63 - 1,
    max_num: Annotated[int, typer.Option("--maxNum", "-c", min=1, help="Trace messages per broker.")] = 64,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Query a message trace (QueryMsgTraceByIdSubCommand): the Pub records, then each consumer
    group's SubAfter records (group, client host, time, cost, status)."""
    views = run_admin(
        namesrv,
        lambda a: a.query_trace(msg_id, trace_topic, max_num=max_num, begin_ms=begin_timestamp, end_ms=end_timestamp),
    )
    rows: list[dict[str, Any]] = [
        {
            "type": v.trace_type.name,
            "groupName": v.group_name,
            "clientHost": v.client_host,
            "timeStamp": v.time_stamp,
            "costTime": v.cost_time,
            "status": v.status,
            "topic": v.topic,
        }
        for v in views
    ]

    def render(c: Console) -> None:
        pubs = [r for r in rows if r["type"] == "Pub"]
        if pubs:
            t = table("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
            for r in pubs:
                t.add_row(
                    "Pub",
                    r["groupName"],
                    r["clientHost"],
                    short_time(r["timeStamp"]),
                    f"{r['costTime']}ms",
                    r["status"],
                )
            c.print(t)
        subs = [r for r in rows if r["type"] == "SubAfter"]
        for group in sorted({r["groupName"] for r in subs}):
            t = table("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
            for r in subs:
                if r["groupName"] == group:
                    t.add_row(
                        "Sub", group, r["clientHost"], short_time(r["timeStamp"]), f"{r['costTime']}ms", r["status"]
                    )
            c.print(t)
        if not rows:
            c.print(f"no trace of message {msg_id} in {trace_topic}", markup=False)

    emit(as_json, rows, render)
