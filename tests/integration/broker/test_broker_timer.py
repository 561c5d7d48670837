"""5.x timer messages on the embedded broker: TIMER_DELAY_MS / TIMER_DELAY_SEC / TIMER_DELIVER_MS
parked in rmq_sys_wheel_timer and delivered at their time (1 s precision: once the TIMER_OUT_MS
step has passed, never earlier than asked, as Apache 5.3.3's wheel), Java's refusals, a
delay level winning over timer properties, and exact delivery across a restart. The clock is
a FakeClock; the broker's own 100 ms timer loop delivers (the tests wait on the store)."""

from __future__ import annotations

from pathlib import Path

from broker_testkit import send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.testing import FakeClock
from rocketpipe.transport import Connection
from waiting import wait_until

TIMER = "rmq_sys_wheel_timer"
T0 = 1_700_000_000_000


def _config(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)


def _read(b: Broker, topic: str, queue_id: int = 0) -> list[pm.MessageExt]:
    res = b.store.get_message(topic, queue_id, 0, 1000)
    return [m for buf in res.buffers for m in pm.decode_records(buf)]


async def test_timer_message_waits_then_is_delivered_with_javas_properties(tmp_path: Path) -> None:
    clock = FakeClock(T0 + 300)
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            r = await send(conn, "TopicT", b"later", properties={pm.PROPERTY_TIMER_DELAY_MS: "5000", "KEYS": "k"})
            assert r.code == ResponseCode.SUCCESS
            [parked] = _read(b, TIMER)
            assert parked.properties[pm.PROPERTY_TIMER_OUT_MS] == str(T0 + 5000)  # rounded down to the second
            assert (parked.properties[pm.PROPERTY_REAL_TOPIC], parked.properties[pm.PROPERTY_REAL_QUEUE_ID]) == (
                "TopicT",
                "0",
            )
            assert b.store.get_max_offset("TopicT", 0) == 0
            clock.set(T0 + 5_299)  # asked for T0 + 5 300: not yet, although its step T0 + 5 000 began
            b.timer.tick()
            assert b.store.get_max_offset("TopicT", 0) == 0
            clock.set(T0 + 6_000)  # the step has passed
            await wait_until(lambda: b.store.get_max_offset("TopicT", 0) == 1, timeout=5, what="timer delivery")
            [msg] = _read(b, "TopicT")
            assert (msg.body, msg.properties["KEYS"]) == (b"later", "k")
            assert msg.properties[pm.PROPERTY_TIMER_DELAY_MS] == "5000"
            assert msg.properties[pm.PROPERTY_TIMER_ENQUEUE_MS] == str(parked.store_timestamp)
            assert msg.properties[pm.PROPERTY_TIMER_DEQUEUE_MS] == str(T0 + 6_000)
            assert (
                msg.properties[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
                == parked.properties[pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
            )
        finally:
            await conn.close()


async def test_deliver_time_on_a_second_is_one_step_earlier_and_past_times_go_straight_through(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            await send(conn, "TopicT", b"a", properties={pm.PROPERTY_TIMER_DELIVER_MS: str(T0 + 3000)})
            await send(conn, "TopicT", b"b", properties={pm.PROPERTY_TIMER_DELAY_SEC: "2"})
            await send(conn, "TopicT", b"now", properties={pm.PROPERTY_TIMER_DELIVER_MS: str(T0 - 1)})
            assert [m.body for m in _read(b, "TopicT")] == [b"now"]
            assert [m.properties[pm.PROPERTY_TIMER_OUT_MS] for m in _read(b, TIMER)] == [str(T0 + 2000), str(T0 + 1000)]
            clock.set(T0 + 1999)  # b's step T0 + 1 000 has not passed: nothing early
            b.timer.tick()
            assert b.store.get_max_offset("TopicT", 0) == 1
            clock.set(T0 + 2000)  # exactly when b asked
            await wait_until(lambda: b.store.get_max_offset("TopicT", 0) == 2, timeout=5, what="b delivered")
            clock.set(T0 + 3000)  # exactly when a asked
            await wait_until(lambda: b.store.get_max_offset("TopicT", 0) == 3, timeout=5, what="a delivered")
            assert [m.body for m in _read(b, "TopicT")] == [b"now", b"b", b"a"]
        finally:
            await conn.close()


async def test_refusals_and_delay_level_precedence(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            remark = (
                "timer message illegal, the delay time should not be bigger than the max delay 259200000ms; "
                "or if set del msg, the delay time should be bigger than the current time"
            )
            too_far = await send(conn, "TopicT", b"x", properties={pm.PROPERTY_TIMER_DELAY_SEC: str(3 * 24 * 3600 + 1)})
            bad = await send(conn, "TopicT", b"x", properties={pm.PROPERTY_TIMER_DELAY_MS: "soon"})
            for r in (too_far, bad):
                assert (r.code, r.remark) == (ResponseCode.MESSAGE_ILLEGAL, remark)
            both = await send(
                conn,
                "TopicT",
                b"level wins",
                properties={pm.PROPERTY_DELAY_TIME_LEVEL: "1", pm.PROPERTY_TIMER_DELAY_MS: "9000"},
            )
            assert both.code == ResponseCode.SUCCESS
            [scheduled] = _read(b, "SCHEDULE_TOPIC_XXXX", 0)
            assert pm.PROPERTY_TIMER_DELAY_MS not in scheduled.properties
            assert _read(b, TIMER) == []
        finally:
            await conn.close()


async def test_timer_messages_are_delivered_once_across_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    async with Broker(_config(tmp_path), clock=clock) as b:
        conn = await Connection.connect(b.address)
        try:
            for body, delay in ((b"2s", 2500), (b"5s", 5500), (b"9s", 9500), (b"3s", 3500)):
                await send(conn, "TopicT", body, properties={pm.PROPERTY_TIMER_DELAY_MS: str(delay)})
        finally:
            await conn.close()
        clock.set(T0 + 4000)
        await wait_until(lambda: b.store.get_max_offset("TopicT", 0) == 2, timeout=5, what="2s and 3s delivered")
    assert (tmp_path / "config" / "timerCheckpoint.json").exists()
    async with Broker(_config(tmp_path), clock=clock) as b2:
        b2.timer.tick()
        assert b2.timer.waiting == 2 and b2.store.get_max_offset("TopicT", 0) == 2  # nothing delivered twice
        clock.set(T0 + 10_000)
        await wait_until(lambda: b2.store.get_max_offset("TopicT", 0) == 4, timeout=5, what="5s and 9s delivered")
        assert [m.body for m in _read(b2, "TopicT")] == [b"2s", b"3s", b"5s", b"9s"]
