"""ProcessQueue accounting and flow-control decisions."""

from __future__ import annotations

from rocketpipe.client.consumer.process_queue import (
    PULL_DELAY_WHEN_FLOW_CONTROL,
    FlowControlLimits,
    ProcessQueue,
    flow_control_delay,
)
from rocketpipe.protocol.message import MessageExt


def msg(offset: int, size: int = 10) -> MessageExt:
    return MessageExt(topic="T", body=b"x" * size, queue_offset=offset)


def test_put_counts_and_ignores_duplicates() -> None:
    pq = ProcessQueue()
    assert pq.put_messages([msg(5), msg(6, 20)]) == 2
    assert pq.put_messages([msg(6, 20), msg(7)]) == 1
    assert (pq.msg_count, pq.msg_size, pq.queue_offset_max) == (3, 40, 7)
    assert pq.max_span() == 2


def test_remove_returns_smallest_remaining_offset() -> None:
    pq = ProcessQueue()
    m = [msg(i) for i in range(10, 15)]
    pq.put_messages(m)
    # finishing a later message never moves the commit offset past the oldest unfinished one
    assert pq.remove_messages([m[2], m[4]]) == 10
    assert pq.remove_messages([m[0]]) == 11
    assert pq.remove_messages([m[1], m[3]]) == 15  # empty now: queue_offset_max + 1
    assert (pq.msg_count, pq.msg_size) == (0, 0)
    assert pq.remove_messages([m[1]]) == -1  # already empty: no update


def test_out_of_order_put_keeps_sorted_offsets() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(20), msg(10), msg(15)])
    assert pq.first_offset() == 10
    assert pq.max_span() == 10
    assert pq.remove_messages([msg(10)]) == 15


def test_remove_unknown_message_changes_nothing() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(1)])
    assert pq.remove_messages([msg(99)]) == 1
    assert pq.msg_count == 1


def test_pull_expiry() -> None:
    pq = ProcessQueue(now=100.0)
    assert not pq.is_pull_expired(219.0)
    assert pq.is_pull_expired(221.0)


def test_flow_control_by_count() -> None:
    limits = FlowControlLimits(
        pull_threshold_for_queue=3, pull_threshold_size_for_queue=100, consume_concurrently_max_span=2000
    )
    pq = ProcessQueue()
    pq.put_messages([msg(i) for i in range(3)])
    assert flow_control_delay(pq, limits) is None  # 3 is not over 3
    pq.put_messages([msg(3)])
    assert flow_control_delay(pq, limits) == PULL_DELAY_WHEN_FLOW_CONTROL == 0.05


def test_flow_control_by_size() -> None:
    limits = FlowControlLimits(
        pull_threshold_for_queue=1000, pull_threshold_size_for_queue=1, consume_concurrently_max_span=2000
    )
    pq = ProcessQueue()
    pq.put_messages([msg(0, 1024 * 1024)])
    assert flow_control_delay(pq, limits) is None
    pq.put_messages([msg(1, 1)])
    assert flow_control_delay(pq, limits) == 0.05


def test_flow_control_by_span() -> None:
    limits = FlowControlLimits()
    pq = ProcessQueue()
    pq.put_messages([msg(0), msg(2000)])
    assert flow_control_delay(pq, limits) is None
    pq.put_messages([msg(2001)])
    assert flow_control_delay(pq, limits) == 0.05
    pq.remove_messages([msg(0)])
    assert flow_control_delay(pq, limits) is None


def test_defaults_mirror_java() -> None:
    limits = FlowControlLimits()
    assert (
        limits.pull_threshold_for_queue,
        limits.pull_threshold_size_for_queue,
        limits.consume_concurrently_max_span,
    ) == (1000, 100, 2000)


def test_remove_in_order_prefix_and_out_of_order_give_the_same_state() -> None:
    # the oldest messages in order leave the offset list in one slice; any other order one by one
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        pq = ProcessQueue()
        m = [msg(i, 10 + i) for i in range(5)]
        pq.put_messages(m)
        assert pq.remove_messages([m[i] for i in order] + [m[0]]) == 3  # a repeat is ignored
        assert (pq.msg_count, pq.msg_size, pq.first_offset(), pq.max_span()) == (2, 27, 3, 1)
        assert pq.first_message() is m[3] and pq.contains(m[4]) and not pq.contains(m[0])
    pq = ProcessQueue()
    pq.put_messages([msg(7), msg(3), msg(5)])
    assert pq.queue_offset_max == 7 and pq.first_offset() == 3
    assert pq.put_messages([msg(4)]) == 1 and pq.queue_offset_max == 7  # below the max: inserted in place
    assert pq.remove_messages([msg(3), msg(4)]) == 5
    assert pq.remove_messages([msg(7), msg(5)]) == 8
