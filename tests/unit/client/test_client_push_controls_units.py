"""Push-consumer controls and direct consume, pure parts: per-topic limits, hook wrapping,
CMResult mapping, ConsumeMessageDirectlyResult JSON."""

from __future__ import annotations

import pytest

from rocketpipe.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketpipe.client.consumer.orderly import ConsumeOrderlyContext, ConsumeOrderlyStatus, MessageListenerOrderly
from rocketpipe.client.consumer.process_queue import ProcessQueue
from rocketpipe.client.consumer.pull import PullRequest
from rocketpipe.client.consumer.push_controls import (
    CONSUME_CONTEXT_TYPE,
    ConsumeMessageContext,
    PushControls,
    wrap_listener_with_hooks,
)
from rocketpipe.client.inbound import CMResult, ConsumeMessageDirectlyResult, consume_directly
from rocketpipe.protocol.message import MessageExt, MessageQueue

MQ = MessageQueue("T", "b", 0)


def req_with(count: int, size: int = 1) -> PullRequest:
    pq = ProcessQueue(0.0)
    pq.put_messages([MessageExt(topic="T", body=b"x" * size, queue_offset=i) for i in range(count)])
    return PullRequest(mq=MQ, pq=pq, next_offset=0)


def test_topic_threshold_split_over_held_queues() -> None:
    c = PushControls(pull_threshold_for_topic=10, queues_of_topic=lambda t: 2)
    assert c.topic_delay(req_with(5)) is None
    assert c.topic_delay(req_with(6)) is not None and c.flow_control_times == 1
    c = PushControls(pull_threshold_for_topic=1, queues_of_topic=lambda t: 4)  # share floors at 1
    assert c.topic_delay(req_with(1)) is None and c.topic_delay(req_with(2)) is not None
    c = PushControls(pull_threshold_size_for_topic=2, queues_of_topic=lambda t: 2)  # 1 MiB per queue
    assert c.topic_delay(req_with(1, 1024 * 1024)) is None
    assert c.topic_delay(req_with(2, 1024 * 1024)) is not None
    assert PushControls().topic_delay(req_with(10_000)) is None  # off by default


class Hook:
    def __init__(self) -> None:
        self.events: list[tuple[str, str | None, bool, str | None]] = []

    def hook_name(self) -> str:
        return "h"

    def consume_message_before(self, ctx: ConsumeMessageContext) -> None:
        self.events.append(("before", ctx.status, ctx.success, None))

    def consume_message_after(self, ctx: ConsumeMessageContext) -> None:
        self.events.append(("after", ctx.status, ctx.success, ctx.props.get(CONSUME_CONTEXT_TYPE)))


async def test_hook_wrapper_keeps_sync_or_async_and_reports() -> None:
    import inspect

    h = Hook()

    def sync_ok(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async def async_none(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> None:
        return None

    w = wrap_listener_with_hooks(sync_ok, [h], "g", orderly=False)
    assert not inspect.iscoroutinefunction(w)
    assert w([], ConsumeConcurrentlyContext(MQ)) is ConsumeConcurrentlyStatus.CONSUME_SUCCESS
    wa = wrap_listener_with_hooks(MessageListenerOrderly(async_none), [h], "g", orderly=True)
    assert inspect.iscoroutinefunction(wa)
    assert await wa([], ConsumeOrderlyContext(MQ)) is None
    assert h.events == [
        ("before", None, False, None),
        ("after", "CONSUME_SUCCESS", True, "SUCCESS"),
        ("before", None, False, None),
        ("after", "SUSPEND_CURRENT_QUEUE_A_MOMENT", False, "RETURNNULL"),
    ]

    def boom(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        raise KeyError("k")

    with pytest.raises(KeyError):
        wrap_listener_with_hooks(boom, [h], "g", orderly=False)([], ConsumeConcurrentlyContext(MQ))
    assert h.events[-1] == ("after", "RECONSUME_LATER", False, "EXCEPTION")
    assert wrap_listener_with_hooks(boom, [], "g", orderly=False) is boom


async def test_consume_directly_maps_statuses() -> None:
    msg = MessageExt(topic="T", body=b"x")
    cases = [
        (lambda ms, c: ConsumeConcurrentlyStatus.CONSUME_SUCCESS, False, CMResult.CR_SUCCESS),
        (lambda ms, c: ConsumeConcurrentlyStatus.RECONSUME_LATER, False, CMResult.CR_LATER),
        (lambda ms, c: None, False, CMResult.CR_RETURN_NULL),
        (lambda ms, c: ConsumeOrderlyStatus.COMMIT, True, CMResult.CR_COMMIT),
        (lambda ms, c: ConsumeOrderlyStatus.ROLLBACK, True, CMResult.CR_ROLLBACK),
        (lambda ms, c: ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, True, CMResult.CR_LATER),
    ]
    for fn, orderly, expected in cases:
        r = await consume_directly(fn, orderly, msg, MQ)
        assert r.consume_result is expected and r.order is orderly

    def manual(ms: list[MessageExt], c: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        c.auto_commit = False
        return ConsumeOrderlyStatus.SUCCESS

    r = await consume_directly(manual, True, msg, MQ)
    assert r.consume_result is CMResult.CR_SUCCESS and r.auto_commit is False


def test_direct_result_json() -> None:
    r = ConsumeMessageDirectlyResult(
        order=True, auto_commit=False, consume_result=CMResult.CR_LATER, remark="r", spent_time_mills=7
    )
    assert r.encode() == b'{"autoCommit":false,"consumeResult":"CR_LATER","order":true,"remark":"r","spentTimeMills":7}'
    assert ConsumeMessageDirectlyResult.decode(r.encode()) == r
