"""How SimpleConsumer turns a POP response into per-message receipt handles
(``MQClientAPIImpl.processPopResponse``), without a broker."""

from __future__ import annotations

from rocketpipe.client.consumer.simple import attach_receipt_handles, receipt_handle
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.headers.pop import PopMessageResponseHeader


def _msg(topic: str, qid: int, off: int, props: dict[str, str] | None = None) -> pm.MessageExt:
    return pm.MessageExt(topic=topic, body=b"x", properties=dict(props or {}), queue_id=qid, queue_offset=off)


def test_client_simple_handles_come_from_start_and_msg_offset_infos() -> None:
    rh = PopMessageResponseHeader(
        pop_time=1000,
        invisible_time=30_000,
        revive_qid=3,
        rest_num=0,
        start_offset_info="0 1 10;0 2 4",
        msg_offset_info="0 1 10,12;0 2 4",
    )
    msgs = [_msg("T", 1, 10), _msg("T", 2, 4), _msg("T", 1, 12)]
    out = attach_receipt_handles(msgs, topic="T", broker_name="b1", header=rh)
    assert [m.receipt_handle for m in out] == [
        "10 1000 30000 3 0 b1 1 10",
        "4 1000 30000 3 0 b1 2 4",
        "10 1000 30000 3 0 b1 1 12",
    ]
    assert all(m.broker_name == "b1" and m.first_pop_time == 1000 for m in out)


def test_client_simple_keeps_the_broker_handle_of_retry_messages() -> None:
    # a retry-topic message re-encoded by the broker: original topic, POP_CK already set
    broker_ck = "0 1000 30000 3 1 b1 0 5"
    rh = PopMessageResponseHeader(
        pop_time=1000,
        invisible_time=30_000,
        revive_qid=3,
        rest_num=0,
        start_offset_info="1 0 0;0 0 7",
        msg_offset_info="1 0 5;0 0 7",
    )
    out = attach_receipt_handles(
        [_msg("T", 0, 5, {"POP_CK": broker_ck, "1ST_POP_TIME": "1"}), _msg("T", 0, 7)],
        topic="T",
        broker_name="b1",
        header=rh,
    )
    assert out[0].receipt_handle == broker_ck and out[0].first_pop_time == 1
    assert receipt_handle(out[0]).real_topic("T", "cg") == "%RETRY%cg_T"
    assert out[1].receipt_handle == "7 1000 30000 3 0 b1 0 7"


def test_client_simple_legacy_response_without_offset_infos() -> None:
    rh = PopMessageResponseHeader(pop_time=5, invisible_time=6, revive_qid=0, rest_num=0)
    out = attach_receipt_handles([_msg("T", 0, 3), _msg("T", 0, 4)], topic="T", broker_name="b", header=rh)
    # checkpoint offset = the first message of the queue, message offset appended
    assert [m.receipt_handle for m in out] == ["3 5 6 0 0 b 0 3", "3 5 6 0 0 b 0 4"]
