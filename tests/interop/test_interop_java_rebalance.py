"""Official Java push consumers (5.3.3, 4.9.8) rebalancing a topic that lives on two rocketpipe
broker groups (``local_cluster(brokers=2)``: ``broker-a`` and ``broker-b`` in one cluster).

``RebalanceScenario`` (tests/interop/java) starts three ``DefaultMQPushConsumer`` members of one
group (each its own client instance, in one JVM) on a topic with 4 queues on each broker, and
waits until their assignments have settled: all 8 queues held, each member's share what Java's
own ``AllocateMessageQueueAveragely`` gives it for the three client ids. Over the 8 queues sorted
by broker and queue id that is 3 / 3 / 2 queues (the test checks it against its own reckoning),
and the middle member holds queues of both brokers. Only then does the
test send (rocketpipe's producer, spread over both brokers), so no queue changes hands while
messages flow. Then:

* every message is consumed exactly once, from the queue it was sent to, by the member that
  holds that queue (and pulled it from that queue); both brokers' queues were consumed. Counted
  up to the shutdown: each member leaving hands its queues to those still running, which may
  consume again what came after the last offset commit — at-least-once, as on Apache;
* while the members run, their committed offsets (every second, and with their pulls) sit on
  the broker that owns each queue and equal each queue's message count. (Not after shutdown:
  members leaving one by one hand their queues over, and a member that took a queue with a stale
  offset persists that on its own shutdown — a client-side race, Apache's broker alike.)

The rebalance interval is 1 s (``rocketmq.client.rebalance.waitInterval``, 20 s by default) so
that a member that missed a NOTIFY_CONSUMER_IDS_CHANGED still settles within the test, and the
members heartbeat every second (``heartbeatBrokerInterval``, 30 s by default): a member whose
queues change bumps its subscription version and heartbeats only when no heartbeat round is
running, so one broker may keep its old version and answer its pulls SUBSCRIPTION_NOT_LATEST until
the next heartbeat — a race of the Java client (seen with 5.3.3), not of the broker.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from interop_support import JavaClient, unique

from rocketpipe import Message, Producer, SendStatus
from rocketpipe.testing.cluster import create_topic_on_brokers, local_cluster
from waiting import wait_until

QUEUES = 4  # per broker
MEMBERS = 3
N = 48


def allocate_averagely(queues: list[str], members: int) -> list[list[str]]:
    """AllocateMessageQueueAveragely for every member index: contiguous slices of the sorted queues."""
    out: list[list[str]] = []
    size, rest = divmod(len(queues), members)
    start = 0
    for i in range(members):
        n = size + (1 if i < rest else 0)
        out.append(queues[start : start + n])
        start += n
    return out


async def test_java_push_consumers_rebalance_across_two_brokers(java_client: JavaClient, tmp_path: Path) -> None:
    topic, group = unique("JavaRebalance2B"), unique("jrb")
    sync = tmp_path / "sync"
    sync.mkdir()
    async with local_cluster(tmp_path / "store", brokers=2) as c:
        await create_topic_on_brokers(c.namesrv_addr, topic, QUEUES, c.broker_addrs)
        java = asyncio.create_task(
            java_client.run(
                "RebalanceScenario",
                c.namesrv_addr,
                topic,
                group,
                str(MEMBERS),
                str(2 * QUEUES),
                str(N),
                str(sync),
                "80",
                timeout=110,
                jvm_props={"rocketmq.client.rebalance.waitInterval": "1000"},
            )
        )
        await wait_until(lambda: (sync / "ready").exists() or java.done(), timeout=90, what="assignments settled")
        assert not java.done(), await java  # the scenario gave up before its members settled
        async with Producer(unique("pg"), namesrv_addr=c.namesrv_addr) as p:
            sent = [await p.send(Message.build(topic, f"rb-{i}")) for i in range(N)]
        expected = {
            b.config.broker_name: dict(
                Counter(s.message_queue.queue_id for s in sent if s.message_queue.broker_name == b.config.broker_name)
            )
            for b in c.brokers
        }
        committed: dict[str, dict[int, int]] = {}

        def offsets_committed() -> bool:  # the queues that have messages or a non-zero offset
            for b in c.brokers:
                name = b.config.broker_name
                by_queue = b.offsets.queue_offsets(group, topic).items()
                committed[name] = {q: o for q, o in by_queue if o or q in expected[name]}
            return committed == expected or java.done()

        await wait_until(lambda: (sync / "consumed").exists() or java.done(), timeout=60, what="every message consumed")
        # the running members commit every second (persistConsumerOffsetInterval) and with their pulls
        await wait_until(offsets_committed, timeout=20, what=f"offsets {expected} on the two brokers")
        (sync / "stop").touch()
        res = await java

    assert {s.send_status for s in sent} == {SendStatus.SEND_OK}
    assert res["ready"] and res["done"], res
    assert committed == expected  # each broker keeps the offsets of its own queues
    all_queues = sorted(f"{topic}/{b}/{q}" for b in ("broker-a", "broker-b") for q in range(QUEUES))
    at_ready = res["assignedAtReady"]
    assert sorted(at_ready) == sorted(allocate_averagely(all_queues, MEMBERS))
    assert res["assignedAtEnd"] == at_ready  # nothing moved while consuming ...
    for member, queues in enumerate(at_ready):  # ... not even for a moment (polled every 20 ms)
        history = [a for _, m, a in res["assignmentChanges"] if m == member]
        assert history[-1] == queues and history.count(queues) == 1, (member, history)
    spanning = [a for a in at_ready if {q.split("/")[1] for q in a} == {"broker-a", "broker-b"}]
    assert len(spanning) == 1  # the middle member holds queues of both brokers

    where = {s.msg_id: (s.message_queue.broker_name, s.message_queue.queue_id) for s in sent}
    bodies: Counter[str] = Counter()
    for member, deliveries in enumerate(res["deliveries"]):
        held = {(q.split("/")[1], int(q.split("/")[2])) for q in res["assignedAtEnd"][member]}
        for d in deliveries:
            bodies[d["body"]] += 1
            assert (d["brokerName"], d["queueId"]) == where[d["msgId"]]
            assert d["pulledFrom"] == f"{d['brokerName']}/{d['queueId']}"  # the queue the member pulled
            assert (d["brokerName"], d["queueId"]) in held, (member, d)
            assert d["reconsumeTimes"] == 0
    assert bodies == Counter(f"rb-{i}" for i in range(N))  # each message exactly once
    assert {d["brokerName"] for ds in res["deliveries"] for d in ds} == {"broker-a", "broker-b"}

    assert set(expected) == {"broker-a", "broker-b"} and all(expected.values())  # both brokers got messages
