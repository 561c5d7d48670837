"""Recall handles (``RecallMessageHandle``): Java's layout, and decoding as lenient and as strict as Java's."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.recall import RecallHandle, build_recall_handle, decode_recall_handle, timer_delete_key


def test_layout_is_url_safe_base64_of_five_space_separated_parts() -> None:
    handle = build_recall_handle("TopicA", "broker-a", "1700000005001", "7F0000010001")
    assert base64.urlsafe_b64decode(handle) == b"v1 TopicA broker-a 1700000005001 7F0000010001"
    assert decode_recall_handle(handle) == RecallHandle("TopicA", "broker-a", "1700000005001", "7F0000010001")
    assert timer_delete_key("TopicA", "7F0000010001") == "TopicA+7F0000010001"


@given(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FFF), min_size=1, max_size=40))
def test_round_trip_with_and_without_padding(topic: str) -> None:
    handle = build_recall_handle(topic, "b", "1", "ID")
    assert decode_recall_handle(handle).topic == topic
    assert decode_recall_handle(handle.rstrip("=")).topic == topic  # Java's decoder: padding optional


@pytest.mark.parametrize(
    "handle",
    [
        "",
        None,
        "not base64 !",
        base64.urlsafe_b64encode(b"v2 T b 1 ID").decode(),
        base64.urlsafe_b64encode(b"v1 T b 1").decode(),
    ],
)
def test_invalid_handles(handle: str | None) -> None:
    with pytest.raises(InvalidArgumentError, match="recall handle is invalid"):
        decode_recall_handle(handle)
