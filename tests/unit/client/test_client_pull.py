"""Pull-result processing (decode once, tag re-filter) and rebalance planning."""

from __future__ import annotations

import doctest

from rocketpipe.client.consumer import rebalance
from rocketpipe.client.consumer.process_queue import ProcessQueue
from rocketpipe.client.consumer.pull import process_pull_result
from rocketpipe.client.consumer.rebalance import plan_rebalance
from rocketpipe.client.rpc import PullRaw, PullStatus
from rocketpipe.protocol.bodies.heartbeat import SubscriptionData
from rocketpipe.protocol.message import MessageQueue, encode_record, java_string_hash

MQ = MessageQueue("T", "broker-a", 1)


def body(tags: list[str | None]) -> bytes:
    out = b""
    for i, t in enumerate(tags):
        props = {"TAGS": t} if t else {}
        out += encode_record(topic="T", body=f"m{i}".encode(), properties=props, queue_id=1, queue_offset=10 + i)
    return out


def raw(tags: list[str | None]) -> PullRaw:
    return PullRaw(PullStatus.FOUND, next_begin_offset=10 + len(tags), min_offset=0, max_offset=99, body=body(tags))


def test_decodes_and_annotates() -> None:
    msgs = process_pull_result(raw(["a", None]), MQ, SubscriptionData.build("T", "*"))
    assert [m.body for m in msgs] == [b"m0", b"m1"]
    assert [m.queue_offset for m in msgs] == [10, 11]
    assert all(m.broker_name == "broker-a" for m in msgs)
    assert msgs[0].properties["MIN_OFFSET"] == "0" and msgs[0].properties["MAX_OFFSET"] == "99"


def test_tag_refilter_drops_collisions_and_untagged() -> None:
    # "Aa" and "BB" have the same Java hash: the broker lets both through, the client must not
    assert java_string_hash("Aa") == java_string_hash("BB")
    sub = SubscriptionData.build("T", "Aa || c")
    msgs = process_pull_result(raw(["Aa", "BB", None, "c", "d"]), MQ, sub)
    assert [m.tags for m in msgs] == ["Aa", "c"]


def test_non_found_has_no_messages() -> None:
    assert process_pull_result(PullRaw(PullStatus.NO_NEW_MSG, 5, 0, 5, b""), MQ, None) == []


def test_rebalance_plan() -> None:
    assert doctest.testmod(rebalance).failed == 0
    q = [MessageQueue("T", "b", i) for i in range(3)]
    other = MessageQueue("U", "b", 0)
    held = {q[0]: ProcessQueue(0.0), q[1]: ProcessQueue(0.0), other: ProcessQueue(0.0)}
    plan = plan_rebalance("T", held, [q[0], q[1]], now=10.0)
    assert not plan.changed
    idle = plan_rebalance("T", held, [q[0], q[1]], now=500.0)  # 120 s without a pull: dropped
    assert idle.to_drop == [q[0], q[1]] and idle.to_add == []
    assert other not in plan_rebalance("T", held, [], now=1.0).to_drop
