"""What the trace hooks record (:mod:`rocketpipe.client.trace.hooks`), with a recording dispatcher
and a fake clock (no event loop): Java's ``SendMessageTraceHookImpl``,
``EndTransactionTraceHookImpl`` and ``ConsumeMessageTraceHookImpl`` rules."""

from __future__ import annotations

import pytest

from rocketpipe.client.consumer.push_controls import ConsumeMessageContext
from rocketpipe.client.rpc import SendResult, SendStatus
from rocketpipe.client.trace import ConsumeTraceHook, MessageType, SendTracer, TraceContext, TraceType
from rocketpipe.client.trace.hooks import pub_message_type
from rocketpipe.protocol.message import Message, MessageExt, MessageQueue
from rocketpipe.testing.clock import FakeClock

MQ = MessageQueue("T", "broker-a", 0)


class Recorder:
    """Stands in for a TraceDispatcher: keeps what the hooks append."""

    trace_topic_name = "RMQ_SYS_TRACE_TOPIC"

    def __init__(self) -> None:
        self.contexts: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> bool:
        self.contexts.append(ctx)
        return True


def _result(
    status: SendStatus = SendStatus.SEND_OK, region: str | None = "DefaultRegion", on: bool = True
) -> SendResult:
    return SendResult(status, "UNIQ1", "OFF1", MQ, 7, region_id=region, trace_on=on)


def _tracer() -> tuple[SendTracer, Recorder, FakeClock]:
    rec, clock = Recorder(), FakeClock(1_000_000)
    return SendTracer(rec, "pg", clock), rec, clock  # type: ignore[arg-type]


def test_pub_record_of_an_answered_send() -> None:
    tracer, rec, clock = _tracer()
    msg = Message.build("T", b"hello", tags="TagA", keys=["k1", "k2"])
    begin = tracer.now_ms()
    clock.advance(0.012)
    tracer.on_sent("T", msg.properties, "127.0.0.1:10911", 5, begin, _result())
    [ctx] = rec.contexts
    assert (ctx.trace_type, ctx.time_stamp, ctx.region_id, ctx.group_name) == (
        TraceType.Pub,
        1_000_000,
        "DefaultRegion",
        "pg",
    )
    assert (ctx.cost_time, ctx.is_success) == (12, True)
    [b] = ctx.trace_beans
    assert (b.topic, b.msg_id, b.offset_msg_id, b.tags, b.keys) == ("T", "UNIQ1", "OFF1", "TagA", "k1 k2")
    assert (b.store_host, b.body_length, b.msg_type, b.store_time) == (
        "127.0.0.1:10911",
        5,
        MessageType.Normal_Msg,
        1_000_006,
    )


def test_pub_is_failed_for_a_degraded_store_status_and_absent_without_region_or_trace_switch() -> None:
    tracer, rec, _ = _tracer()
    tracer.on_sent("T", {}, "h:1", 1, tracer.now_ms(), _result(SendStatus.FLUSH_DISK_TIMEOUT))
    tracer.on_sent("T", {}, "h:1", 1, tracer.now_ms(), _result(region=None))
    tracer.on_sent("T", {}, "h:1", 1, tracer.now_ms(), _result(on=False))
    tracer.on_sent("RMQ_SYS_TRACE_TOPIC", {}, "h:1", 1, tracer.now_ms(), _result())
    assert [c.is_success for c in rec.contexts] == [False]
    assert rec.contexts[0].trace_beans[0].tags is None and rec.contexts[0].trace_beans[0].keys is None


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, MessageType.Normal_Msg),
        ({"TRAN_MSG": "true"}, MessageType.Trans_Msg_Half),
        ({"DELAY": "3"}, MessageType.Delay_Msg),
        ({"__STARTDELIVERTIME": "1"}, MessageType.Delay_Msg),
        ({"TRAN_MSG": "true", "DELAY": "1"}, MessageType.Delay_Msg),  # Java checks the delay last
        ({"TIMER_DELAY_MS": "5000"}, MessageType.Normal_Msg),  # the 5.x hook does not look at timers
    ],
)
def test_pub_message_type(props: dict[str, str], expected: MessageType) -> None:
    assert pub_message_type(props) is expected


def test_end_transaction_record() -> None:
    tracer, rec, _ = _tracer()
    msg = Message.build("Tx", b"b", tags="t", keys="tk")
    tracer.on_end_transaction(
        "Tx", msg.properties, "ID", "10.0.0.1:10911", "ID", "ROLLBACK_MESSAGE", from_transaction_check=False
    )
    tracer.on_end_transaction("Tx", {"MSG_REGION": "east"}, "ID2", None, None, "UNKNOW", from_transaction_check=True)
    a, b = rec.contexts
    assert (a.trace_type, a.region_id, a.group_name, a.time_stamp) == (
        TraceType.EndTransaction,
        "DefaultRegion",
        "pg",
        1_000_000,
    )
    ab = a.trace_beans[0]
    assert (ab.msg_type, ab.transaction_state, ab.transaction_id, ab.from_transaction_check) == (
        MessageType.Trans_msg_Commit,
        "ROLLBACK_MESSAGE",
        "ID",
        False,
    )
    assert (ab.topic, ab.tags, ab.keys, ab.store_host) == ("Tx", "t", "tk", "10.0.0.1:10911")
    assert b.region_id == "east" and b.trace_beans[0].from_transaction_check is True


def _ext(msg_id: str, **props: str) -> MessageExt:
    return MessageExt(
        topic="T",
        body=b"x",
        properties={"UNIQ_KEY": msg_id, **props},
        store_size=99,
        store_timestamp=5,
        reconsume_times=1,
    )


def _hook() -> tuple[ConsumeTraceHook, Recorder, FakeClock]:
    rec, clock = Recorder(), FakeClock(2_000_000)
    return ConsumeTraceHook(rec, clock), rec, clock  # type: ignore[arg-type]


def test_sub_before_and_after_share_the_request_id_and_split_the_cost() -> None:
    hook, rec, clock = _hook()
    msgs = [_ext("A", KEYS="ka", MSG_REGION="east"), _ext("B", TRACE_ON="false"), _ext("C", TAGS="tc")]
    ctx = ConsumeMessageContext(consumer_group="cg", msg_list=msgs, mq=MQ)
    hook.consume_message_before(ctx)
    clock.advance(0.031)
    ctx.success = False
    ctx.props["ConsumeContextType"] = "EXCEPTION"
    hook.consume_message_after(ctx)
    before, after = rec.contexts
    assert before.trace_type is TraceType.SubBefore and after.trace_type is TraceType.SubAfter
    assert [b.msg_id for b in before.trace_beans] == ["A", "C"]  # TRACE_ON=false left out
    assert (before.time_stamp, after.time_stamp) == (2_000_000, 2_000_031)
    assert before.request_id and before.request_id == after.request_id
    assert (after.cost_time, after.is_success, after.context_code) == (10, False, 2)  # 31 ms / 3 messages
    assert after.region_id == before.region_id == "DefaultRegion"  # the last traced message has none
    assert after.group_name == "cg" and after.trace_beans is before.trace_beans
    a = before.trace_beans[0]
    assert (a.keys, a.retry_times, a.body_length, a.store_time) == ("ka", 1, 99, 5)
    assert before.trace_beans[1].tags == "tc"


def test_region_comes_from_the_message_and_nothing_is_recorded_for_untraced_batches() -> None:
    hook, rec, _ = _hook()
    ctx = ConsumeMessageContext(consumer_group="cg", msg_list=[_ext("A", MSG_REGION="east")], mq=MQ)
    hook.consume_message_before(ctx)
    ctx.success = True
    ctx.props["ConsumeContextType"] = "SUCCESS"
    hook.consume_message_after(ctx)
    assert [(c.region_id, c.context_code) for c in rec.contexts] == [("east", 0), ("east", 0)]
    off = ConsumeMessageContext(consumer_group="cg", msg_list=[_ext("B", TRACE_ON="false")], mq=MQ)
    hook.consume_message_before(off)
    hook.consume_message_after(off)
    hook.consume_message_after(ConsumeMessageContext(consumer_group="cg", msg_list=[_ext("C")], mq=MQ))
    assert len(rec.contexts) == 2


def test_polled_batch_is_one_successful_pair() -> None:
    hook, rec, _ = _hook()
    hook.polled("lg", [_ext("A"), _ext("B")], MQ)
    before, after = rec.contexts
    assert (before.trace_type, after.trace_type, after.is_success, after.cost_time, after.context_code) == (
        TraceType.SubBefore,
        TraceType.SubAfter,
        True,
        0,
        0,
    )
    assert [b.msg_id for b in after.trace_beans] == ["A", "B"] and after.group_name == "lg"


def test_hook_name() -> None:
    hook, _, _ = _hook()
    assert hook.hook_name() == "ConsumeMessageTraceHook"
