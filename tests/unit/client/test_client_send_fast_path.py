"""The producer's send hot path builds exactly what the typed V2 header would (no behaviour
change from skipping the dataclass), and the send response maps like the typed decoder."""

from __future__ import annotations

import pytest

from rocketpipe.client import Producer
from rocketpipe.client.rpc import SendStatus, send_result
from rocketpipe.errors import HeaderError, InvalidArgumentError
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.message import Message, MessageQueue


@pytest.mark.parametrize("topic", ["T", "%RETRY%g"])
@pytest.mark.parametrize(
    "props", [{}, {"UNIQ_KEY": "ABC", "TAGS": "t", "RECONSUME_TIME": "2", "MAX_RECONSUME_TIMES": "5"}]
)
@pytest.mark.parametrize("batch", [False, True])
def test_ext_fields_equal_typed_header(topic: str, props: dict[str, str], batch: bool) -> None:
    p = Producer("pg", namesrv_addr="127.0.0.1:9876", default_topic_queue_nums=6)
    for qid, sys_flag, flag in ((0, 0, 0), (3, 1, 7)):
        typed = p._header(topic, qid, sys_flag, flag, props, batch).to_ext_fields()
        fast = p._ext_fields(topic, qid, sys_flag, flag, props, batch)
        typed.pop("g"), fast.pop("g")  # born timestamps read the clock twice
        assert fast == typed


def test_ext_fields_follow_setting_changes() -> None:
    p = Producer("pg", namesrv_addr="127.0.0.1:9876")
    p._ext_fields("T", 0, 0, 0, {}, False)
    p.create_topic_key = "OTHER"
    p.default_topic_queue_nums = 9
    e = p._ext_fields("T", 0, 0, 0, {}, False)
    assert (e["c"], e["d"]) == ("OTHER", "9")


def _resp(ext: dict[str, str], code: int = ResponseCode.SUCCESS) -> RemotingCommand:
    return RemotingCommand(code=code, ext_fields=ext)


def test_send_result_reuses_queue_and_maps_fields() -> None:
    mq = MessageQueue("T", "b", 2)
    r = send_result(
        _resp(
            {
                "msgId": "M",
                "queueId": "2",
                "queueOffset": "7",
                "transactionId": "U",
                "MSG_REGION": "R",
                "TRACE_ON": "false",
            }
        ),
        mq,
        "U",
    )
    assert (r.send_status, r.offset_msg_id, r.queue_offset, r.transaction_id, r.region_id, r.trace_on) == (
        SendStatus.SEND_OK,
        "M",
        7,
        "U",
        "R",
        False,
    )
    assert r.message_queue is mq
    other = send_result(_resp({"msgId": "M", "queueId": "3", "queueOffset": "0"}), mq, "U")
    assert other.message_queue == MessageQueue("T", "b", 3)
    assert other.trace_on is True


def test_send_result_bad_header_raises_like_the_typed_decoder() -> None:
    mq = MessageQueue("T", "b", 2)
    with pytest.raises(HeaderError):
        send_result(_resp({"msgId": "M", "queueOffset": "7"}), mq, "U")
    with pytest.raises(HeaderError):
        send_result(_resp({"msgId": "M", "queueId": "x", "queueOffset": "7"}), mq, "U")
    degraded = send_result(
        _resp({"msgId": "M", "queueId": "2", "queueOffset": "1"}, ResponseCode.FLUSH_DISK_TIMEOUT), mq, "U"
    )
    assert degraded.send_status is SendStatus.FLUSH_DISK_TIMEOUT


@pytest.mark.parametrize(
    ("msgs", "error"),
    [
        ([], "at least one message"),
        ([Message.build("%RETRY%g", b"a")], "retry group"),
        ([Message.build("A", b"a"), Message.build("B", b"b")], "same topic"),
        ([Message.build("A", b"a"), Message.build("A", b"b", delay_time_level=2)], "delay levels"),
        ([Message.build("A", b"a"), Message("A", b"", 0, {})], "must not be empty"),
        ([Message.build("A", b"a"), Message.build("A", b"x" * 65)], "exceeds max_message_size 64"),
        ([Message.build("A b", b"a")], "topic"),
    ],
)
async def test_send_batch_refuses_a_bad_batch_before_any_io(msgs: list[Message], error: str) -> None:
    """send_batch's per-message checks (Java's ``batch(...)`` + ``Validators.checkMessage``) raise
    before the producer starts: no name server is reachable at this address."""
    p = Producer("pg", namesrv_addr="127.0.0.1:9", max_message_size=64)
    with pytest.raises(InvalidArgumentError, match=error):
        await p.send_batch(msgs)
    assert all(m.unique_key is None for m in msgs)  # no keys assigned to a refused batch
