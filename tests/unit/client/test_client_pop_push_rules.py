"""The push consumer's POP mode: pure rules (delay levels, max-reconsume decision, pop timeout,
flow-control counters), the assignment split and probe, strategy names, option checks."""

from __future__ import annotations

import asyncio
import doctest

import pytest

from rocketpipe import PushConsumer
from rocketpipe.client.consumer import assignment, pop_push
from rocketpipe.client.consumer.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_consistent_hash,
)
from rocketpipe.client.consumer.assignment import (
    AssignmentProbe,
    MessageQueueAssignment,
    MessageRequestMode,
    split_assignments,
    strategy_name,
)
from rocketpipe.client.consumer.pop_push import (
    POP_DELAY_LEVEL,
    PopConsumeRequest,
    PopProcessQueue,
    check_pop_settings,
    max_reconsume_decision,
    pop_invisible_delay,
    update_pop_retry_subscription,
)
from rocketpipe.errors import (
    InvalidArgumentError,
    RequestCodeNotSupportedError,
    RequestTimeoutError,
    TopicNotExistError,
)
from rocketpipe.protocol.bodies.heartbeat import SubscriptionData
from rocketpipe.protocol.headers.pop import ExtraInfo
from rocketpipe.protocol.message import MessageExt, MessageQueue


def test_doctests() -> None:
    assert doctest.testmod(pop_push).failed == 0
    assert doctest.testmod(assignment).failed == 0


def test_pop_delay_table_is_javas() -> None:
    # DefaultMQPushConsumerImpl.popDelayLevel (5.3.3), seconds
    assert POP_DELAY_LEVEL == (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)


@pytest.mark.parametrize(
    ("level", "reconsume_times", "seconds"),
    [
        (0, 0, 10),  # default context: level = reconsume_times
        (0, 1, 30),
        (0, 15, 7200),
        (0, 16, 7200),  # past the table: its last entry
        (0, 99, 7200),
        (1, 0, 30),  # an explicit level wins over reconsume_times
        (5, 9, 240),
        (16, 0, 7200),
        (-1, 0, None),  # Java indexes the table with it and fails: nothing is sent
        (-1, 3, None),
    ],
)
def test_pop_invisible_delay(level: int, reconsume_times: int, seconds: int | None) -> None:
    assert pop_invisible_delay(level, reconsume_times) == seconds


@pytest.mark.parametrize(
    ("age_ms", "decision"),
    [
        (0, -1),  # younger than the first level: no change (as Java's ArrayIndexOutOfBounds)
        (9_999, -1),
        (10_000, 1),  # reached level 0 (10 s) → level 1 (30 s)
        (29_999, 1),
        (30_000, 2),
        (7_199_999, 15),
        (7_200_000, 16),  # reached the last level → 16 → 7 200 s
        (14_400_000, 16),  # exactly 2 × 7 200 s: not yet given up
        (14_400_001, None),  # older: acknowledged (given up)
    ],
)
def test_max_reconsume_decision(age_ms: int, decision: int | None) -> None:
    born = 1_700_000_000_000
    assert max_reconsume_decision(born + age_ms, born) == decision


def test_max_reconsume_decision_then_delay() -> None:
    born = 1_700_000_000_000
    level = max_reconsume_decision(born + 45_000, born)
    assert level == 2 and pop_invisible_delay(level, 16) == 60
    assert pop_invisible_delay(max_reconsume_decision(born + 1_000, born) or 0, 16) is None


def test_pop_process_queue_counters() -> None:
    pq = PopProcessQueue(now=5.0)
    pq.inc_found_msg(3)
    assert pq.wait_ack_count == 3
    assert pq.ack() == 3 and pq.wait_ack_count == 2
    pq.dec_found_msg(2)
    assert pq.wait_ack_count == 0
    assert not pq.is_pull_expired(125.0) and pq.is_pull_expired(125.1)


def _popped(pop_time: int, invisible: int) -> MessageExt:
    m = MessageExt(topic="T", body=b"x", queue_id=0, queue_offset=7)
    m.properties["POP_CK"] = ExtraInfo(7, pop_time, invisible, 0, "0", "b", 0, 7).build()
    return m


def test_pop_consume_request_timeout() -> None:
    pq = PopProcessQueue()
    mq = MessageQueue("T", "b", -1)
    req = PopConsumeRequest.of([_popped(1_000, 60_000)], pq, mq)
    assert (req.pop_time, req.invisible_time) == (1_000, 60_000)
    assert not req.is_pop_timeout(60_999)
    assert req.is_pop_timeout(61_000)  # now − popTime ≥ invisibleTime
    bad = MessageExt(topic="T", body=b"x")
    assert PopConsumeRequest.of([bad], pq, mq).is_pop_timeout(0)  # no handle: treated as timed out
    assert PopConsumeRequest(msgs=[], pq=pq, mq=mq, pop_time=1, invisible_time=1).is_pop_timeout(0)


def test_split_assignments() -> None:
    pull_q, pop_q = MessageQueue("T", "b", 0), MessageQueue("T", "b", -1)
    pull, pop = split_assignments(
        [
            MessageQueueAssignment(pull_q),
            MessageQueueAssignment(pop_q, MessageRequestMode.POP),
            MessageQueueAssignment(MessageQueue("T", "c", 1), MessageRequestMode.PULL),
        ]
    )
    assert pull == {pull_q, MessageQueue("T", "c", 1)} and pop == {pop_q}
    assert split_assignments([]) == (set(), set())


def test_strategy_names_are_javas() -> None:
    assert strategy_name(allocate_averagely) == "AVG"
    assert strategy_name(allocate_averagely_by_circle) == "AVG_BY_CIRCLE"
    assert strategy_name(allocate_consistent_hash) == "CONSISTENT_HASH"

    class Named:
        name = "MY_STRATEGY"

        def __call__(self, *a: object) -> list[MessageQueue]:
            return []

    assert strategy_name(Named()) == "MY_STRATEGY"


def test_pop_retry_subscription_follows_mode() -> None:
    subs: dict[str, SubscriptionData] = {}
    assert update_pop_retry_subscription("T", "g", has_pull=True, has_pop=False, subscriptions=subs, now_ms=1)
    assert list(subs) == ["%RETRY%g_T"] and subs["%RETRY%g_T"].sub_string == "*"
    assert not update_pop_retry_subscription("T", "g", True, False, subs, 2)  # already there
    assert not update_pop_retry_subscription("T", "g", True, True, subs, 3)  # mixed: unchanged
    assert update_pop_retry_subscription("T", "g", False, True, subs, 4) and subs == {}
    assert not update_pop_retry_subscription("%RETRY%g", "g", True, False, subs, 5) and subs == {}


def _probe(outcomes: list[BaseException | None]) -> tuple[AssignmentProbe, list[float], object]:
    calls: list[float] = []

    async def query(timeout: float) -> None:
        calls.append(timeout)
        out = outcomes.pop(0)
        if out is not None:
            raise out

    return AssignmentProbe(), calls, query


def test_probe_broker_when_query_answers() -> None:
    probe, calls, query = _probe([None])
    assert asyncio.run(probe.use_broker("T", query)) is True
    assert asyncio.run(probe.use_broker("T", query)) is True  # remembered: no second query
    assert calls == [1.0] and probe.broker_topics == {"T"}


def test_probe_client_when_broker_lacks_the_command() -> None:
    probe, calls, query = _probe([RequestCodeNotSupportedError("4.x")])
    assert asyncio.run(probe.use_broker("T", query)) is False
    assert asyncio.run(probe.use_broker("T", query)) is False
    assert calls == [1.0] and probe.client_topics == {"T"}


def test_probe_timeouts_then_client() -> None:
    probe, calls, query = _probe([RequestTimeoutError("t")] * 3)
    assert asyncio.run(probe.use_broker("T", query)) is False
    assert calls == [1.0, 2.0, 3.0]  # QUERY_ASSIGNMENT_TIMEOUT / 3 × attempt


def test_probe_timeout_then_answer() -> None:
    probe, calls, query = _probe([RequestTimeoutError("t"), None])
    assert asyncio.run(probe.use_broker("T", query)) is True
    assert calls == [1.0, 2.0]


def test_probe_no_route_decides_nothing() -> None:
    probe, _, query = _probe([TopicNotExistError("none"), None])
    with pytest.raises(TopicNotExistError):
        asyncio.run(probe.use_broker("T", query))
    assert not probe.broker_topics and not probe.client_topics
    assert asyncio.run(probe.use_broker("T", query)) is True


def test_probe_retain_forgets_unsubscribed() -> None:
    probe = AssignmentProbe({"A", "B"}, {"C"})
    probe.retain(["A", "C"])
    assert probe.broker_topics == {"A"} and probe.client_topics == {"C"}


@pytest.mark.parametrize(
    ("kw", "ok"),
    [
        ({}, True),
        ({"pop_invisible_time": 5.0}, True),
        ({"pop_invisible_time": 300.0}, True),
        ({"pop_invisible_time": 4.999}, False),
        ({"pop_invisible_time": 300.001}, False),
        ({"pop_batch_nums": 1}, True),
        ({"pop_batch_nums": 0}, False),
        ({"pop_batch_nums": 33}, False),
        ({"pop_threshold_for_queue": 0}, False),
    ],
)
def test_pop_options_checked(kw: dict[str, float], ok: bool) -> None:
    args = {"pop_threshold_for_queue": 96, "pop_invisible_time": 60.0, "pop_batch_nums": 32, **kw}
    if ok:
        check_pop_settings(**args)  # type: ignore[arg-type]
        c = PushConsumer("cg", namesrv_addr="127.0.0.1:1", client_rebalance=False, **kw)  # type: ignore[arg-type]
        assert c.client_rebalance is False and c.uses_broker_rebalance
    else:
        with pytest.raises(InvalidArgumentError):
            check_pop_settings(**args)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            PushConsumer("cg", namesrv_addr="127.0.0.1:1", **kw)  # type: ignore[arg-type]


def test_push_consumer_defaults_are_javas() -> None:
    c = PushConsumer("cg", namesrv_addr="127.0.0.1:1")
    assert c.client_rebalance is True and not c.uses_broker_rebalance
    assert c.pop_queues() == []
    info_props = {
        "clientRebalance": "true",
        "popThresholdForQueue": "96",
        "popInvisibleTime": "60000",
        "popBatchNums": "32",
    }
    # running_info needs a loop (it reads loop time); the settings it reports are the defaults above
    props = asyncio.run(_running_info_props(c))
    assert {k: props[k] for k in info_props} == info_props


async def _running_info_props(c: PushConsumer) -> dict[str, str]:
    return c.running_info().properties
