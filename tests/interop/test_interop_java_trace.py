"""Message trace of the official Java clients (5.3.3, 4.9.8) through rocketpipe's broker.

``TraceScenario`` (tests/interop/java) sends with ``DefaultMQProducer(group, true, null)`` and
consumes with ``DefaultMQPushConsumer(group, true, null)`` against rocketpipe's ``local_cluster``
with ``trace_topic_enable`` (the broker creates ``RMQ_SYS_TRACE_TOPIC``). Both shut down, which
flushes their trace dispatchers. Then rocketpipe's :meth:`Admin.query_trace` and ``mqadmin
queryMsgTraceById`` (tools of the same version) must show each message's Pub (the producer
group, SEND_OK) and its consume records (SubBefore / SubAfter of the consumer group).

The 5.3.3 client's ``AsyncTraceDispatcher`` drops a consume record whose region is null; the
region comes from the consumed message's ``MSG_REGION`` property, which 5.x brokers (Apache's
and rocketpipe's) store on every message and Apache 4.9 does not. The 4.9.8 client sends the
records either way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from interop_support import JavaClient, create_topic, unique

from rocketpipe import Admin, TraceType, TraceView
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until

N = 3


async def views_of(admin: Admin, msg_id: str, types: set[TraceType], timeout: float = 20) -> list[TraceView]:
    """The trace views of ``msg_id`` once every type of ``types`` is there (``timeout`` seconds at most)."""
    views: list[TraceView] = []

    async def complete() -> bool:
        nonlocal views
        views = await admin.query_trace(msg_id)
        return types <= {v.trace_type for v in views}

    await wait_until(complete, timeout=timeout, what=f"{sorted(t.value for t in types)} traces of {msg_id}")
    return views


def mqadmin_rows(out: str, kind: str) -> list[list[str]]:
    """The ``Pub`` / ``Sub`` rows of ``mqadmin queryMsgTraceById``: type, group, client host,
    date, time, cost, status."""
    return [line.split() for line in out.splitlines() if re.match(rf"^{kind}\s", line)]


async def test_java_trace(java_client: JavaClient, tmp_path: Path) -> None:
    topic, pg, cg = unique("JavaTraceT"), unique("jtpg"), unique("jtcg")
    async with local_cluster(tmp_path / "store", trace_topic_enable=True) as c, Admin(c.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        res: dict[str, Any] = await java_client.run("TraceScenario", c.namesrv_addr, topic, pg, cg, str(N), "40")
        assert res["ok"], res.get("error")
        sends = res["sends"]
        assert [s["status"] for s in sends] == ["SEND_OK"] * N
        assert sorted(res["consumed"]) == sorted(s["msgId"] for s in sends)

        for i, s in enumerate(sends):
            views = await views_of(admin, s["msgId"], {TraceType.Pub})
            [pub] = [v for v in views if v.trace_type is TraceType.Pub]
            assert (pub.group_name, pub.topic, pub.tags, pub.keys, pub.status) == (
                pg,
                topic,
                "TagT",
                f"trace-key-{i}",
                "success",
            )
            assert (pub.offset_msg_id, pub.store_host) == (s["offsetMsgId"], c.broker_addr)
            assert pub.context.region_id == "DefaultRegion" and pub.context.trace_beans[0].body_length == len(
                f"trace-{i}"
            )

        rc, out = await java_client.mqadmin(c.namesrv_addr, "queryMsgTraceById", "-i", sends[0]["msgId"])
        assert rc == 0 and "Exception" not in out, out[-3000:]
        [pub_row] = mqadmin_rows(out, "Pub")
        assert pub_row[1] == pg and pub_row[-1] == "success", out

        sub_types = {TraceType.SubBefore, TraceType.SubAfter}
        for s in sends:
            views = await views_of(admin, s["msgId"], sub_types)
            [before] = [v for v in views if v.trace_type is TraceType.SubBefore]
            [after] = [v for v in views if v.trace_type is TraceType.SubAfter]
            assert (before.group_name, after.group_name, after.status) == (cg, cg, "success")
            assert before.context.request_id == after.context.request_id
            assert before.context.trace_beans[0].retry_times == 0

        rc, out = await java_client.mqadmin(c.namesrv_addr, "queryMsgTraceById", "-i", sends[0]["msgId"])
        [sub_row] = mqadmin_rows(out, "Sub")
        assert sub_row[1] == cg and sub_row[-1] == "success", out
