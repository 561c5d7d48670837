"""Lite pull consumer: queue bookkeeping, flow control, settings and API guards (no network)."""

from __future__ import annotations

import pytest

from rocketpipe.client.consumer.listener import MessageModel
from rocketpipe.client.consumer.lite_pull import LitePullConsumer, SubscriptionType
from rocketpipe.client.consumer.lite_pull_queues import (
    PULL_DELAY_WHEN_CACHE_FLOW_CONTROL,
    AssignedQueues,
    LitePullSettings,
    lite_flow_control_delay,
)
from rocketpipe.client.consumer.process_queue import ProcessQueue
from rocketpipe.errors import ClientClosedError, InvalidArgumentError
from rocketpipe.protocol.message import MessageExt, MessageQueue

NS = "127.0.0.1:9876"


def mq(i: int, topic: str = "T") -> MessageQueue:
    return MessageQueue(topic, "b", i)


def msg(offset: int, size: int = 10) -> MessageExt:
    return MessageExt(topic="T", body=b"x" * size, queue_offset=offset)


# ---------------------------------------------------------------------------- AssignedQueues


def test_update_adds_removes_and_drops() -> None:
    aq = AssignedQueues()
    ch = aq.update([mq(0), mq(1), mq(2)])
    assert ch.added == [mq(0), mq(1), mq(2)] and ch.removed == [] and ch.changed
    pq1 = aq.get(mq(1)).pq  # type: ignore[union-attr]
    aq.pause([mq(0)])
    ch = aq.update([mq(0), mq(2), mq(3)])
    assert ch.added == [mq(3)] and ch.removed == [mq(1)]
    assert pq1.dropped
    assert aq.is_paused(mq(0))  # kept queues keep their state
    assert aq.queues() == [mq(0), mq(2), mq(3)]
    assert not aq.update([mq(0), mq(2), mq(3)]).changed


def test_update_of_one_topic_leaves_other_topics_alone() -> None:
    aq = AssignedQueues()
    aq.update([mq(0, "A"), mq(1, "A"), mq(0, "B")])
    ch = aq.update([mq(1, "A"), mq(7, "B")], "A")  # B queues in the list are ignored
    assert ch.removed == [mq(0, "A")] and ch.added == []
    assert aq.queues() == [mq(1, "A"), mq(0, "B")]
    assert aq.remove_topic("B") == [mq(0, "B")]
    assert aq.queues() == [mq(1, "A")]


def test_pause_ignores_unassigned_queues() -> None:
    aq = AssignedQueues()
    aq.update([mq(0)])
    aq.pause([mq(0), mq(9)])
    assert aq.is_paused(mq(0)) and not aq.is_paused(mq(9))
    aq.resume([mq(0)])
    assert not aq.is_paused(mq(0))


def test_next_pull_offset_prefers_a_pending_seek() -> None:
    aq = AssignedQueues()
    aq.update([mq(0)])
    assert aq.take_next_pull_offset(mq(0)) == -1  # unknown: compute from ConsumeFromWhere
    st = aq.get(mq(0))
    assert st is not None
    aq.update_pull_offset(mq(0), 40, st.pq)
    assert aq.take_next_pull_offset(mq(0)) == 40
    old_pq = st.pq
    new_pq = aq.seek(mq(0), 7)
    assert old_pq.dropped and new_pq is st.pq and not new_pq.dropped
    # while the seek is pending, results of pulls are not recorded
    aq.update_pull_offset(mq(0), 50, new_pq)
    assert aq.take_next_pull_offset(mq(0)) == 7
    assert aq.consume_offset(mq(0)) == 7  # a seek becomes the consume offset
    assert aq.take_next_pull_offset(mq(0)) == 40  # the seek was consumed once
    aq.update_pull_offset(mq(0), 8, old_pq)  # stale ProcessQueue: ignored
    assert aq.take_next_pull_offset(mq(0)) == 40
    aq.update_pull_offset(mq(0), 8, new_pq)
    assert aq.take_next_pull_offset(mq(0)) == 8


def test_seek_resets_the_commit_arithmetic() -> None:
    aq = AssignedQueues()
    aq.update([mq(0)])
    st = aq.get(mq(0))
    assert st is not None
    st.pq.put_messages([msg(i) for i in range(90, 100)])
    pq = aq.seek(mq(0), 3)
    batch = [msg(3), msg(4)]
    pq.put_messages(batch)
    # a backward seek must not report the old queue_offset_max + 1
    assert pq.remove_messages(batch) == 5


def test_seek_rejects_unassigned_and_negative() -> None:
    aq = AssignedQueues()
    aq.update([mq(0)])
    with pytest.raises(InvalidArgumentError):
        aq.seek(mq(1), 0)
    with pytest.raises(InvalidArgumentError):
        aq.seek(mq(0), -1)


def test_consume_offsets_skip_unknown_and_stale() -> None:
    aq = AssignedQueues()
    aq.update([mq(0), mq(1), mq(2)])
    st0, st2 = aq.get(mq(0)), aq.get(mq(2))
    assert st0 is not None and st2 is not None
    aq.update_consume_offset(mq(0), 12, st0.pq)
    aq.update_consume_offset(mq(1), -1)  # ignored
    aq.update_consume_offset(mq(2), 5, ProcessQueue())  # stale pq: ignored
    aq.update_consume_offset(mq(9), 5)  # unassigned: ignored
    assert aq.consume_offsets() == {mq(0): 12}
    st0.pq.dropped = True
    assert aq.consume_offsets() == {}


# ---------------------------------------------------------------------------- flow control


def test_flow_control_for_all_requests() -> None:
    s = LitePullSettings(pull_batch_size=10, pull_threshold_for_all=100)
    pq = ProcessQueue()
    assert lite_flow_control_delay(10, pq, s) is None  # 10 * 10 == 100: not above
    assert lite_flow_control_delay(11, pq, s) == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL


def test_flow_control_per_queue_count_size_span() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(0), msg(1), msg(2)])
    assert lite_flow_control_delay(0, pq, LitePullSettings(pull_threshold_for_queue=3)) is None
    assert (
        lite_flow_control_delay(0, pq, LitePullSettings(pull_threshold_for_queue=2))
        == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    )
    assert lite_flow_control_delay(0, pq, LitePullSettings(consume_max_span=1)) == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    big = ProcessQueue()
    big.put_messages([msg(0, 2 * 1024 * 1024)])
    assert (
        lite_flow_control_delay(0, big, LitePullSettings(pull_threshold_size_for_queue=1))
        == PULL_DELAY_WHEN_CACHE_FLOW_CONTROL
    )
    assert lite_flow_control_delay(0, big, LitePullSettings(pull_threshold_size_for_queue=2)) is None


# ---------------------------------------------------------------------------- settings


def test_settings_defaults_match_java() -> None:
    s = LitePullSettings()
    assert (
        s.pull_batch_size,
        s.pull_threshold_for_all,
        s.pull_threshold_for_queue,
        s.pull_threshold_size_for_queue,
    ) == (10, 10_000, 1_000, 100)
    assert (s.consume_max_span, s.poll_timeout, s.auto_commit, s.auto_commit_interval) == (2_000, 5.0, True, 5.0)
    assert (s.broker_suspend_max_time, s.consumer_timeout_when_suspend, s.consumer_pull_timeout) == (20.0, 30.0, 10.0)


@pytest.mark.parametrize(
    "kw",
    [
        {"pull_batch_size": 0},
        {"pull_threshold_for_all": 0},
        {"auto_commit_interval": 0.5},
        {"poll_timeout": -1.0},
        {"broker_suspend_max_time": 20.0, "consumer_timeout_when_suspend": 10.0},
    ],
)
def test_settings_validation(kw: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        LitePullSettings(**kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- consumer API guards


def test_consumer_rejects_bad_construction() -> None:
    with pytest.raises(InvalidArgumentError):
        LitePullConsumer("", namesrv_addr=NS)
    with pytest.raises(InvalidArgumentError):
        LitePullConsumer("DEFAULT_CONSUMER", namesrv_addr=NS)
    with pytest.raises(InvalidArgumentError):
        LitePullConsumer("g", namesrv_addr=NS, message_model=MessageModel.BROADCASTING)
    with pytest.raises(InvalidArgumentError):
        LitePullConsumer("g")
    with pytest.raises(InvalidArgumentError):
        LitePullConsumer("g", namesrv_addr=NS, auto_commit_interval=0.1)


async def test_subscribe_and_assign_are_mutually_exclusive() -> None:
    c = LitePullConsumer("g", namesrv_addr=NS)
    c.subscribe("T", "a || b")
    assert c.subscription_type is SubscriptionType.SUBSCRIBE
    assert c.subscriptions() == {"T": "a || b"}
    with pytest.raises(InvalidArgumentError):
        c.assign([mq(0)])
    c2 = LitePullConsumer("g", namesrv_addr=NS)
    c2.assign([mq(0), mq(1)])
    assert c2.assignment() == [mq(0), mq(1)]
    with pytest.raises(InvalidArgumentError):
        c2.subscribe("T")
    with pytest.raises(InvalidArgumentError):
        c2.assign([])
    await c.close()
    await c2.close()


async def test_operations_need_a_running_consumer() -> None:
    c = LitePullConsumer("g", namesrv_addr=NS)
    c.assign([mq(0)])
    with pytest.raises(ClientClosedError):
        await c.poll(0)
    with pytest.raises(ClientClosedError):
        await c.seek(mq(0), 0)
    with pytest.raises(ClientClosedError):
        await c.committed(mq(0))
    await c.close()
    with pytest.raises(ClientClosedError):
        c.assign([mq(1)])
    with pytest.raises(ClientClosedError):
        await c.poll(0)
    assert [m async for m in c] == []  # iteration over a closed consumer ends at once


def test_heartbeat_data_is_consume_actively() -> None:
    c = LitePullConsumer("g", namesrv_addr=NS)
    c.subscribe("T", "x")
    cd = c.consumer_data()
    assert cd.consume_type == "CONSUME_ACTIVELY"
    assert cd.message_model == "CLUSTERING"
    assert [s.topic for s in cd.subscription_data_set] == ["T"]
    assert c.subscribed_topics() == ["T"]
    a = LitePullConsumer("g2", namesrv_addr=NS)
    a.assign([mq(0, "A"), mq(0, "B")])
    assert a.consumer_data().subscription_data_set == []
    assert a.subscribed_topics() == ["A", "B"]  # routes are still needed to find the brokers
