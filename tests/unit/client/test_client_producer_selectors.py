"""Queue selectors for ordered sends: Java's hashCode of the key and SelectMessageQueueByHash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpipe.client import select_by_hash, select_by_random
from rocketpipe.client.producer.selectors import java_hash_code
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.message import Message, MessageQueue

QUEUES = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(3)]
MSG = Message.build("T", b"x")


def test_java_hash_code_of_the_key_types() -> None:
    assert java_hash_code("hello") == 99162322  # "hello".hashCode()
    assert java_hash_code("") == 0
    assert java_hash_code(42) == 42  # Integer.hashCode
    assert java_hash_code(-(1 << 31)) == -(1 << 31)
    assert java_hash_code(1 << 40) == 256  # Long.hashCode: (int)(v ^ (v >>> 32))
    assert java_hash_code(-(1 << 40)) == -256
    assert java_hash_code(True) == 1231 and java_hash_code(False) == 1237
    assert java_hash_code(b"hello") == 99162322
    with pytest.raises(InvalidArgumentError, match="str or int"):
        java_hash_code(1.5)


def test_select_by_hash_keeps_the_sign_rule_of_java_remainder() -> None:
    # Java: Math.abs(hashCode % size); -7 % 6 == -1 in Java → queue 1
    assert select_by_hash(QUEUES, MSG, -7) is QUEUES[1]
    assert select_by_hash(QUEUES, MSG, 7) is QUEUES[1]
    assert select_by_hash(QUEUES, MSG, -(1 << 31)) is QUEUES[abs(-(1 << 31)) % 6]


@given(st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1), st.integers(min_value=1, max_value=64))
def test_select_by_hash_matches_java_truncating_remainder(h: int, n: int) -> None:
    queues = [MessageQueue("T", "b", i) for i in range(n)]
    java_rem = abs(h) % n * (1 if h >= 0 else -1)  # Java's % truncates toward zero
    assert select_by_hash(queues, MSG, h).queue_id == abs(java_rem)


def test_select_by_random_stays_in_range() -> None:
    assert {select_by_random(QUEUES, MSG, None) for _ in range(200)} <= set(QUEUES)
