"""PushConsumer(client_rebalance=False) in POP mode against a local cluster on a fake wall clock:
the retry rules of ``ConsumeMessagePopConcurrentlyService`` end to end.

The broker and the consumer share a :class:`FakeClock`, so invisible times pass only when the
test advances it; revives are run through ``PopService.revive_due`` (its loop would do the same).
What the broker holds (``CheckpointTable``: in-flight messages, their invisible time, pop
offsets) is the observable.
"""

from __future__ import annotations

from pathlib import Path

from rocketpipe import (
    Admin,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpipe.testing import FakeClock, local_cluster
from waiting import wait_until

TOPIC, GROUP = "PopRules", "cg-pop-rules"
POP_RETRY = f"%RETRY%{GROUP}_{TOPIC}"


async def test_pop_push_retry_delays_then_gives_up_past_max_reconsume(tmp_path: Path) -> None:
    """max_reconsume_times=1, a listener that always fails: the first failure is made invisible
    for 10 s (level 0 → ``reconsume_times`` 0), the second — at the maximum — for 30 s (its age
    ≥ 10 s → level 1, ``checkNeedAckOrDelay``), and the third delivery (reconsume_times 2 > 1)
    is acknowledged without reaching the listener (``processPopResult``)."""
    clock = FakeClock()
    async with local_cluster(tmp_path / "store", clock=clock) as c:
        table = c.broker.pop.table
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 1)
            await admin.set_message_request_mode(TOPIC, GROUP, "POP")
        seen: list[int] = []

        def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            seen.extend(m.reconsume_times for m in msgs)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER

        consumer = PushConsumer(
            GROUP,
            namesrv_addr=c.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_rebalance=False,
            max_reconsume_times=1,
            pop_invisible_time=5.0,
            clock=clock,
        )
        consumer.subscribe(TOPIC)
        consumer.register_message_listener(listener)

        def invisible_times() -> list[int]:
            return sorted(ck.invisible_time for ck in table if ck.group == GROUP and ck.pending)

        async with consumer, Producer("pg-pop-rules", namesrv_addr=c.namesrv_addr, clock=clock) as p:
            await p.send(Message.build(TOPIC, b"always-fails"))
            # delivery 1 (reconsume_times 0) fails → CHANGE_MESSAGE_INVISIBLETIME 10 s
            await wait_until(
                lambda: seen == [0] and invisible_times() == [10_000], timeout=20, what="first failure delayed 10 s"
            )
            clock.advance(10.001)
            assert c.broker.pop.revive_due() == 1
            # delivery 2 (reconsume_times 1 = max) fails → age 10 s ≥ level 0 → level 1 → 30 s
            await wait_until(
                lambda: seen == [0, 1] and invisible_times() == [30_000], timeout=20, what="second failure delayed 30 s"
            )
            clock.advance(30.001)
            assert c.broker.pop.revive_due() == 1
            # delivery 3 (reconsume_times 2 > max): acknowledged, never given to the listener
            await wait_until(
                lambda: table.pop_offset(GROUP, POP_RETRY, 0) == 2 and table.in_flight(GROUP) == 0,
                timeout=20,
                what="third delivery acknowledged",
            )
            clock.advance(3600)
            assert c.broker.pop.revive_due() == 0
        assert seen == [0, 1]


async def test_pop_push_close_acks_the_batch_in_the_listener(tmp_path: Path) -> None:
    """Closing a POP-mode consumer while its listener holds a batch: the listener finishes and
    the batch is acknowledged (no checkpoint left on the broker) instead of being discarded and
    delivered again after the invisible time. (A message arriving during the close may still be
    popped by a long-polling POP the broker holds; like Java, it comes back after that time.)"""
    import asyncio
    import threading

    async with local_cluster(tmp_path / "store") as c:
        table = c.broker.pop.table
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 1)
            await admin.set_message_request_mode(TOPIC, GROUP, "POP")
        entered, release = threading.Event(), threading.Event()
        seen: list[bytes] = []

        def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            seen.extend(m.body for m in msgs)
            entered.set()
            release.wait(30)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            GROUP,
            namesrv_addr=c.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_rebalance=False,
        )
        consumer.subscribe(TOPIC)
        consumer.register_message_listener(listener)
        await consumer.start()
        async with Producer("pg-pop-close", namesrv_addr=c.namesrv_addr) as p:
            await p.send(Message.build(TOPIC, b"in-hand"))
            await wait_until(entered.is_set, timeout=20, what="the listener holding the batch")
            assert table.in_flight(GROUP) == 1
            closing = asyncio.create_task(consumer.close())
            await wait_until(
                lambda: (
                    consumer._pop is not None
                    and all(r.task is None or r.task.done() for r in consumer._pop.queues.values())
                ),
                timeout=10,
                what="pop loops stopped",
            )
            assert not closing.done()  # waits for the listener
            release.set()
            await asyncio.wait_for(closing, 30)
        assert seen == [b"in-hand"]
        assert table.in_flight(GROUP) == 0  # acked at shutdown, not left to come back in 60 s
