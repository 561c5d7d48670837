"""The send processor's direct header decoding agrees with the typed decoders."""

from __future__ import annotations

import pytest

from rocketpipe.broker.processors.send import decode_send_header
from rocketpipe.errors import HeaderError
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2

ATTRS = (
    "producer_group",
    "topic",
    "default_topic",
    "default_topic_queue_nums",
    "queue_id",
    "sys_flag",
    "born_timestamp",
    "flag",
    "properties",
    "reconsume_times",
    "unit_mode",
    "max_reconsume_times",
    "batch",
)

V2 = {
    "a": "pg",
    "b": "T",
    "c": "TBW102",
    "d": "4",
    "e": "3",
    "f": "1",
    "g": "1700000000000",
    "h": "0",
    "i": "UNIQ_KEY\x01X\x02",
    "j": "0",
    "k": "false",
    "m": "true",
}


def _typed(code: int, ext: dict[str, str]) -> SendMessageRequestHeader:
    if code == RequestCode.SEND_MESSAGE:
        return SendMessageRequestHeader.from_ext_fields(ext)
    return SendMessageRequestHeaderV2.from_ext_fields(ext).to_v1()


@pytest.mark.parametrize(
    "ext",
    [
        V2,
        {**V2, "l": "16", "k": "TRUE", "m": "no"},
        {k: v for k, v in V2.items() if k not in ("i", "j", "k", "m")},
        {**V2, "j": "x"},  # unparsable optional number: left at its default
        {**V2, "d": " 8 "},
    ],
)
def test_v2_and_v1_decode_like_the_typed_headers(ext: dict[str, str]) -> None:
    v1_ext = SendMessageRequestHeader(**{a: getattr(_typed(310, ext), a) for a in ATTRS}).to_ext_fields()
    for code, e in (
        (RequestCode.SEND_MESSAGE_V2, ext),
        (RequestCode.SEND_BATCH_MESSAGE, ext),
        (RequestCode.SEND_MESSAGE, v1_ext),
    ):
        fast = decode_send_header(RemotingCommand(code=code, ext_fields=dict(e)))
        typed = _typed(code, e)
        assert {a: getattr(fast, a) for a in ATTRS} == {a: getattr(typed, a) for a in ATTRS}


@pytest.mark.parametrize("drop", ["a", "b", "c", "d", "e", "g"])
def test_missing_required_field_raises_the_typed_error(drop: str) -> None:
    ext = {k: v for k, v in V2.items() if k != drop}
    with pytest.raises(HeaderError) as fast:
        decode_send_header(RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=ext))
    with pytest.raises(HeaderError) as typed:
        SendMessageRequestHeaderV2.from_ext_fields(ext)
    assert str(fast.value) == str(typed.value)


def test_unparsable_required_number_raises() -> None:
    with pytest.raises(HeaderError):
        decode_send_header(RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={**V2, "e": "q"}))
