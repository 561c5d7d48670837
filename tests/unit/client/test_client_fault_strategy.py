"""MQFaultStrategy: isolation times from latency, and queue choice around isolated brokers (Java 5.3.3)."""

from __future__ import annotations

import pytest

from rocketpipe.client.producer.fault import MQFaultStrategy
from rocketpipe.client.routing import RoundRobinSelector
from rocketpipe.protocol.message import MessageQueue


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


QUEUES = [MessageQueue("T", b, i) for b in ("broker-a", "broker-b") for i in range(2)]


@pytest.mark.parametrize(
    ("latency", "isolated_ms"),
    [(0, 0), (49, 0), (50, 0), (549, 0), (550, 2000), (1800, 5000), (3000, 6000), (5000, 10000), (15000, 30000)],
)
def test_isolation_time_follows_javas_tables(latency: int, isolated_ms: int) -> None:
    assert MQFaultStrategy(Clock(), True).compute_not_available_duration(latency) == isolated_ms


def test_a_failed_attempt_isolates_its_broker_for_10_s_and_a_broker_error_makes_it_unreachable() -> None:
    clock = Clock()
    fs = MQFaultStrategy(clock, True)
    fs.update_fault_item("broker-b", 3, isolation=True, reachable=False)
    assert not fs.is_available("broker-b") and not fs.is_reachable("broker-b")
    assert fs.is_available("broker-a") and fs.is_reachable("broker-a")  # never reported
    clock.ms += 9_999
    assert not fs.is_available("broker-b")
    clock.ms += 1
    assert fs.is_available("broker-b")
    assert not fs.is_reachable("broker-b")  # until an attempt reports it reachable again
    fs.update_fault_item("broker-b", 2, isolation=False, reachable=True)
    assert fs.is_reachable("broker-b") and fs.is_available("broker-b")


def test_a_short_isolation_never_shortens_a_longer_one() -> None:
    clock = Clock()
    fs = MQFaultStrategy(clock, True)
    fs.update_fault_item("broker-a", 20_000, isolation=False, reachable=True)  # 30 s
    fs.update_fault_item("broker-a", 600, isolation=False, reachable=True)  # 2 s
    clock.ms += 29_999
    assert not fs.is_available("broker-a")


def test_selection_skips_isolated_brokers_on_every_attempt() -> None:
    clock = Clock()
    fs = MQFaultStrategy(clock, True)
    fs.update_fault_item("broker-b", 5, isolation=True, reachable=True)
    sel = RoundRobinSelector(start=0)
    picked = {fs.select_one_message_queue(QUEUES, sel, None, False).broker_name for _ in range(20)}
    assert picked == {"broker-a"}
    clock.ms += 10_000
    picked = {fs.select_one_message_queue(QUEUES, sel, None, False).broker_name for _ in range(20)}
    assert picked == {"broker-a", "broker-b"}


def test_all_isolated_falls_back_to_reachable_then_to_any_queue_avoiding_the_last_broker() -> None:
    fs = MQFaultStrategy(Clock(), True)
    fs.update_fault_item("broker-a", 5, isolation=True, reachable=True)
    fs.update_fault_item("broker-b", 5, isolation=True, reachable=False)
    sel = RoundRobinSelector(start=0)
    assert {fs.select_one_message_queue(QUEUES, sel, None, False).broker_name for _ in range(8)} == {"broker-a"}
    # the reachable broker was the last one tried: nothing passes both filters, any queue is taken
    got = {fs.select_one_message_queue(QUEUES, sel, "broker-a", True).broker_name for _ in range(20)}
    assert got == {"broker-a", "broker-b"}


def test_disabled_records_nothing_and_is_plain_round_robin_avoiding_the_last_broker() -> None:
    fs = MQFaultStrategy(Clock(), False)
    fs.update_fault_item("broker-b", 50_000, isolation=True, reachable=False)
    assert fs.fault_item("broker-b") is None and fs.is_available("broker-b")
    sel = RoundRobinSelector(start=0)
    assert [fs.select_one_message_queue(QUEUES, sel, None, False) for _ in range(4)] == [
        QUEUES[1],
        QUEUES[2],
        QUEUES[3],
        QUEUES[0],
    ]
    assert all(fs.select_one_message_queue(QUEUES, sel, "broker-a", True).broker_name == "broker-b" for _ in range(6))


def test_select_where_gives_up_after_one_turn() -> None:
    sel = RoundRobinSelector(start=0)
    assert sel.select_where(QUEUES, lambda q: False) is None
    assert sel.select_where(QUEUES, lambda q: q.queue_id == 1 and q.broker_name == "broker-b") == QUEUES[3]
