"""Retry / DLQ naming and arithmetic."""

from __future__ import annotations

import doctest

from rocketpipe.client.consumer import retry
from rocketpipe.client.consumer.retry import (
    default_delay_level,
    dlq_topic,
    effective_max_reconsume_times,
    is_retry_topic,
    restore_retry_topic,
    retry_topic,
)
from rocketpipe.protocol.message import MessageExt


def test_doctests() -> None:
    assert doctest.testmod(retry).failed == 0


def test_names() -> None:
    assert retry_topic("cg") == "%RETRY%cg"
    assert dlq_topic("cg") == "%DLQ%cg"
    assert is_retry_topic("%RETRY%cg") and not is_retry_topic("cg") and not is_retry_topic("%DLQ%cg")


def test_delay_and_max() -> None:
    assert [default_delay_level(n) for n in range(3)] == [3, 4, 5]
    assert effective_max_reconsume_times(-1) == 16
    assert effective_max_reconsume_times(0) == 0


def test_restore_retry_topic() -> None:
    m = MessageExt(topic="%RETRY%cg", body=b"x", properties={"RETRY_TOPIC": "Orders"})
    restore_retry_topic(m, "cg")
    assert m.topic == "Orders"
    other = MessageExt(topic="%RETRY%other", body=b"x", properties={"RETRY_TOPIC": "Orders"})
    restore_retry_topic(other, "cg")
    assert other.topic == "%RETRY%other"
    plain = MessageExt(topic="%RETRY%cg", body=b"x")
    restore_retry_topic(plain, "cg")
    assert plain.topic == "%RETRY%cg"
