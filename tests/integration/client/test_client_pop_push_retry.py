"""PushConsumer(client_rebalance=False) in POP mode against a local cluster on a fake wall clock:
the retry rules of ``ConsumeMessagePopConcurrentlyService`` end to end.

The broker and the consumer share a :class:`FakeClock`, so invisible times pass only when the
test advances it; revives are run through ``PopService.revive_due`` (its loop would do the same).
What the broker holds (``CheckpointTable``: in-flight messages, their invisible time, pop
offsets) is the observable.
"""

from __future__ import annotations

from pathlib import Path

from waiting import wait_until

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
            await wait_until(lambda: seen == [0] and invisible_times() == [10_000], timeout=20, what="first failure delayed 10 s")
            clock.advance(10.001)
            assert c.broker.pop.revive_due() == 1
            # delivery 2 (reconsume_times 1 = max) fails → age 10 s ≥ level 0 → level 1 → 30 s
            await wait_until(lambda: seen == [0, 1] and invisible_times() == [30_000], timeout=20, what="second failure delayed 30 s")
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
