"""Message queue selectors for ``Producer.send(msg, selector=..., arg=...)`` (L3, pure functions).

A selector is any callable ``(queues, msg, arg) -> MessageQueue``: ``queues`` are the topic's
writable queues in route order (broker name, then queue id), ``msg`` the message being sent,
``arg`` the caller's argument (typically an order id). Mirrors ``MessageQueueSelector`` and its
stock implementations in ``org.apache.rocketmq.client.producer.selector``.

>>> from rocketpipe.protocol.message import Message, MessageQueue
>>> qs = [MessageQueue("T", "b", i) for i in range(4)]
>>> select_by_hash(qs, Message.build("T", b"x"), "order-7").queue_id
2
>>> select_by_hash(qs, Message.build("T", b"x"), -7).queue_id
3
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeAlias

from ...errors import InvalidArgumentError
from ...protocol.message import Message, MessageQueue, int32, java_string_hash

#: ``MessageQueueSelector.select(List<MessageQueue> mqs, Message msg, Object arg)``.
MessageQueueSelector: TypeAlias = Callable[[Sequence[MessageQueue], Message, object], MessageQueue]


def java_hash_code(arg: object) -> int:
    """Java's ``hashCode()`` of ``arg`` as a signed 32-bit int, for the types an order key is.

    ``str`` → ``String.hashCode``; ``bool`` → ``Boolean.hashCode`` (1231 / 1237); ``int`` in
    the int32 range → ``Integer.hashCode`` (the value), otherwise ``Long.hashCode``
    (``(int)(v ^ (v >>> 32))``); ``bytes`` → ``String.hashCode`` of its UTF-8 text.

    Raises:
        InvalidArgumentError: ``arg`` is of another type (pass a ``str`` or ``int`` key, or a
            selector of your own).
    """
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        if -(1 << 31) <= arg < (1 << 31):
            return arg
        v = arg & 0xFFFFFFFFFFFFFFFF
        return int32(v ^ (v >> 32))
    if isinstance(arg, str):
        return java_string_hash(arg)
    if isinstance(arg, bytes):
        return java_string_hash(arg.decode("utf-8", "surrogateescape"))
    raise InvalidArgumentError(
        f"select_by_hash needs a str or int arg, got {type(arg).__name__}; pass a key or your own selector"
    )


def select_by_hash(queues: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """The queue at ``abs(hashCode(arg) % len(queues))`` (Java's remainder keeps the sign).

    Mirrors ``SelectMessageQueueByHash``: the same ``arg`` always lands on the same queue while
    the queue count is unchanged, so messages of one order stay in order.
    """
    h = java_hash_code(arg)
    n = len(queues)
    return queues[abs(h) % n]  # |h rem n| == |h| mod n


def select_by_random(queues: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """A uniformly random queue. Mirrors ``SelectMessageQueueByRandom``."""
    return queues[random.randrange(len(queues))]
