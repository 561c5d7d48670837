"""Recall handles of delayed messages (L1, sans-IO): Java ``RecallMessageHandle`` (5.3.2+).

A broker that stores a timer message (``SendMessageProcessor.attachRecallHandle``; not for
batches or send-backs, not for ``%RETRY%`` topics) answers the send with a *recall handle*:
the URL-safe Base64 (with padding) of ``"v1 <topic> <brokerName> <timestamp> <msgId>"``,
space-separated, where ``timestamp`` is the stored ``TIMER_OUT_MS`` + 1 (ms; "consider of
floor") and ``msgId`` the message's ``UNIQ_KEY``. RECALL_MESSAGE sends the handle back; the
broker then stores a *delete* timer message for the same time, which makes the timer drop the
original (``TimerMessageStore.buildDeleteKey``: ``"<topic>+<msgId>"``).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final

from ..errors import InvalidArgumentError

__all__ = ["RecallHandle", "build_recall_handle", "decode_recall_handle", "timer_delete_key"]

VERSION_1: Final = "v1"


@dataclass(frozen=True, slots=True)
class RecallHandle:
    """A decoded v1 handle (Java ``RecallMessageHandle.HandleV1``).

    Attributes:
        topic: the message's (real) topic.
        broker_name: the broker that stored it.
        timestamp_str: its delivery step + 1, ms, as the handle carries it (a string, unchecked).
        message_id: its ``UNIQ_KEY``.
    """

    topic: str
    broker_name: str
    timestamp_str: str
    message_id: str


def build_recall_handle(topic: str, broker_name: str, timestamp_str: str, message_id: str) -> str:
    """``HandleV1.buildHandle``: no check of the parts, as Java's."""
    raw = " ".join((VERSION_1, topic, broker_name, timestamp_str, message_id))
    return base64.urlsafe_b64encode(raw.encode()).decode("ascii")


def decode_recall_handle(handle: str | None) -> RecallHandle:
    """``RecallMessageHandle.decodeHandle``.

    Raises:
        InvalidArgumentError: "recall handle is invalid" (empty, not Base64, not v1, fewer
            than 5 parts), Java's ``DecoderException`` message.
    """
    if not handle:
        raise InvalidArgumentError("recall handle is invalid")
    data = handle.encode()
    try:  # Java's URL decoder: padding optional, characters outside the alphabet refused
        raw = base64.b64decode(data + b"=" * (-len(data) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidArgumentError("recall handle is invalid") from None
    items = raw.split(" ")
    if items[0] != VERSION_1 or len(items) < 5:
        raise InvalidArgumentError("recall handle is invalid")
    return RecallHandle(items[1], items[2], items[3], items[4])


def timer_delete_key(topic: str, message_id: str) -> str:
    """``TimerMessageStore.buildDeleteKey``: the ``TIMER_DEL_UNIQKEY`` value that drops a message."""
    return f"{topic}+{message_id}"
