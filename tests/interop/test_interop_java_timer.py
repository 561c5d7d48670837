"""5.x timer messages of the official Java client 5.3.3 → rocketpipe's broker, Apache 5.3.3 the control.

``TimerScenario`` (tests/interop/java) starts a ``DefaultMQPushConsumer`` (queues assigned before
any send), then sends with the client's own timer API: ``Message.setDelayTimeMs(3000)``
(``TIMER_DELAY_MS``), ``setDelayTimeSec(2)`` (``TIMER_DELAY_SEC``), ``setDeliverTimeMs(now + 4000)``
(``TIMER_DELIVER_MS``), a plain message, and ``setDelayTimeSec`` beyond ``timerMaxDelaySec`` (3 days).
The same scenario runs against rocketpipe's ``local_cluster`` and Apache 5.3.3 (the session's
``apache_5``, ``timerWheelEnable``, ``timerPrecisionMs`` 1 000). On both:

* the plain message arrives at once; each timer message is stored again (``storeTimestamp``) and
  received never before the time asked for: the broker rounds that time down to
  ``timerPrecisionMs`` (``TIMER_OUT_MS``; one step earlier when it falls on a step, as
  ``HookUtils``) and delivers a step once it has passed (Apache's wheel dequeues a slot when its
  write cursor is past it) — so at most one step late (plus load). rocketpipe used to deliver
  at the start of the step, up to 1 s early; fixed in ``broker/timer.py``;
* the delivered copy carries the properties Apache's ``TimerMessageStore`` gives it: the client's
  ``TIMER_*`` property, ``TIMER_OUT_MS``, ``TIMER_ENQUEUE_MS``, ``TIMER_DEQUEUE_MS``,
  ``REAL_TOPIC`` / ``REAL_QID`` — exactly the same set of property names on both brokers.
  One value differs: Apache's ``TIMER_ENQUEUE_MS`` is its timer log's time cursor (the enqueue
  time rounded down to the step), rocketpipe's the enqueue time itself;
* the send beyond three days is refused with ``MQBrokerException`` code 13 (MESSAGE_ILLEGAL).

Only the 5.x client: 4.9.8's ``Message`` has no timer API (the scenario would send nothing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop_support import JavaClient, Target, create_topic_on, unique

from rocketpipe.testing.apache import ApacheCluster
from rocketpipe.testing.cluster import local_cluster

#: timerPrecisionMs of both brokers: the due time is rounded down to it.
PRECISION_MS = 1000
#: How late a timer message may arrive on a loaded two-core machine (the timer wheel itself is
#: exact to PRECISION_MS; this bounds "not much later").
LATE_MS = 15_000
#: The label → client property and due time (ms after the send) of TimerScenario's timer messages.
TIMERS = {
    "delayMs": ("TIMER_DELAY_MS", 3000),
    "delaySec": ("TIMER_DELAY_SEC", 2000),
    "deliverMs": ("TIMER_DELIVER_MS", 4000),
}
#: The properties of every copy a 5.3.3 push consumer gets from a 5.x broker (Apache's and rocketpipe's).
DELIVERED_PROPS = {
    "CLUSTER",
    "CONSUME_START_TIME",
    "KEYS",
    "MAX_OFFSET",
    "MIN_OFFSET",
    "MSG_REGION",
    "TAGS",
    "TRACE_ON",
    "UNIQ_KEY",
    "WAIT",
    "label",
}
#: What the timer store adds to every delivered copy (TimerMessageStore.convertMessage and the dequeue).
TIMER_ADDED = {"TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "REAL_TOPIC", "REAL_QID"}


@dataclass
class TimerBroker:
    kind: str
    namesrv_addr: str


@pytest.fixture(params=["rocketpipe", "apache-5"])
async def timer_broker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TimerBroker]:
    if request.param == "rocketpipe":
        async with local_cluster(tmp_path / "store") as c:
            yield TimerBroker("rocketpipe", c.namesrv_addr)
        return
    ac: ApacheCluster = request.getfixturevalue("apache_5")
    yield TimerBroker("apache-5", ac.namesrv_addr)


@pytest.mark.parametrize(
    ("java_client", "timer_broker"), [("java-5", "rocketpipe"), ("java-5", "apache-5")], indirect=True
)
async def test_java_timer_messages(java_client: JavaClient, timer_broker: TimerBroker) -> None:
    topic = unique("JavaTimer")
    await create_topic_on(Target(timer_broker.kind, timer_broker.namesrv_addr, "", ""), topic, 2)
    res: dict[str, Any] = await java_client.run(
        "TimerScenario", timer_broker.namesrv_addr, topic, unique("jtimer"), "60", timeout=100
    )
    assert res["timerApi"] is True
    sends, deliveries = res["sends"], res["deliveries"]
    labels = sorted(d["properties"]["label"] for d in deliveries)
    assert res["done"], f"not every message delivered: {labels}"
    assert labels == ["delayMs", "delaySec", "deliverMs", "now"]  # each once, tooFar never

    too_far = sends["tooFar"]
    assert too_far.get("responseCode") == 13, too_far  # MESSAGE_ILLEGAL (WHEEL_TIMER_MSG_ILLEGAL)
    assert "max delay 259200000ms" in too_far["errorMessage"]

    got = {d["properties"]["label"]: d for d in deliveries}
    for label, d in got.items():
        sent = sends[label]
        assert sent["result"]["status"] == "SEND_OK", sent
        assert d["msgId"] == sent["result"]["msgId"] and d["topic"] == topic
        assert (d["body"], d["keys"], d["tags"]) == (f"timer-{label}", f"key-{label}", "TagTimer")
        assert set(d["properties"]) == DELIVERED_PROPS | (
            {TIMERS[label][0]} | TIMER_ADDED if label in TIMERS else set()
        )

    now = got["now"]
    assert now["receivedAtMs"] - sends["now"]["sentAtMs"] < LATE_MS

    for label, (prop, after_ms) in TIMERS.items():
        d, sent, props = got[label], sends[label], got[label]["properties"]
        assert props[prop] == sent["properties"][prop]  # the client's own property, kept
        out_ms, enq_ms, deq_ms = (int(props[k]) for k in ("TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS"))
        if label == "deliverMs":
            asked = res["deliverAtMs"]
            assert props[prop] == str(asked)
            assert out_ms == rounded_down(asked)
        else:  # the broker adds the delay to its clock on receipt: at or after sentAtMs
            asked = sent["sentAtMs"] + after_ms
            assert asked - PRECISION_MS <= out_ms <= d["bornTimestamp"] + after_ms + 5_000
        # never before the requested time: a step is delivered once it has passed
        assert d["receivedAtMs"] >= d["storeTimestamp"] >= deq_ms >= out_ms + PRECISION_MS >= asked, (label, d)
        assert d["receivedAtMs"] - (out_ms + PRECISION_MS) < LATE_MS, (label, d)
        # Apache writes its timer log's time cursor (the enqueue time rounded down to the
        # step), rocketpipe the enqueue time itself: both within one step of the send
        assert sent["sentAtMs"] - PRECISION_MS <= enq_ms <= deq_ms
        assert (props["REAL_TOPIC"], props["REAL_QID"]) == (topic, str(d["queueId"]))


def rounded_down(deliver_ms: int) -> int:
    """HookUtils: the delivery time rounded down to the step, one step earlier when on a step."""
    if deliver_ms % PRECISION_MS == 0:
        return deliver_ms - PRECISION_MS
    return deliver_ms // PRECISION_MS * PRECISION_MS
