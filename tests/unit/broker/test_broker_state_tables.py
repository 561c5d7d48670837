"""Client registry change rules, the long-poll hold table, and schedule delivery with a fake store."""

from __future__ import annotations

from dataclasses import dataclass

from rocketpipe.broker.groups import ClientChannel, ClientRegistry
from rocketpipe.broker.pull_hold import HeldPull, PullHoldTable
from rocketpipe.broker.schedule import DueMessage, ScheduleDelivery
from rocketpipe.protocol.message import MessageExt, java_string_hash


@dataclass
class Sub:
    topic: str
    sub_version: int = 1


def _register(reg: ClientRegistry, ch: str, subs: list[Sub], now: int = 0, group: str = "g") -> bool:
    return reg.register_consumer(
        group, ClientChannel(ch, f"id-{ch}", 3, 409, now), consume_type="CONSUME_PASSIVELY", message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET", subscriptions=subs,
    )


def test_broker_registry_change_rules() -> None:
    reg = ClientRegistry()
    assert _register(reg, "a", [Sub("T")])  # new channel
    assert not _register(reg, "a", [Sub("T")])  # same again
    assert not _register(reg, "a", [Sub("T", sub_version=5)])  # newer version replaces, no change
    assert reg.subscription("g", "T").sub_version == 5  # type: ignore[union-attr]
    assert not _register(reg, "a", [Sub("T", sub_version=2)])  # older version ignored
    assert reg.subscription("g", "T").sub_version == 5  # type: ignore[union-attr]
    assert _register(reg, "a", [Sub("T"), Sub("U")])  # topic added
    assert _register(reg, "a", [Sub("U")])  # topic removed
    assert _register(reg, "b", [Sub("U")])  # another channel
    assert reg.consumer_group("g").client_ids() == ["id-a", "id-b"]  # type: ignore[union-attr]
    assert reg.remove_channel("a") == ["g"]
    assert reg.unregister_consumer("g", "b")
    assert reg.consumer_group("g") is None
    assert not reg.unregister_consumer("g", "b")


def test_broker_registry_expiry() -> None:
    reg = ClientRegistry()
    _register(reg, "a", [Sub("T")], now=0)
    _register(reg, "b", [Sub("T")], now=100_000)
    reg.register_producer("pg", ClientChannel("p", "id-p", 3, 409, 0))
    assert reg.expired_channels(120_001, 120_000) == {"a", "p"}
    assert reg.scan_expired(120_001, 120_000) == [("g", "a")]
    assert reg.channels_of("g") == ["b"] and "pg" not in reg.producers


def _held(offset: int, deadline: float, codes: frozenset[int] | None = None, ch: str = "c") -> HeldPull:
    return HeldPull(topic="T", queue_id=0, offset=offset, deadline=deadline, code_set=codes, request=None, channel=ch)


def test_broker_hold_table_releases_on_arrival_match_or_deadline() -> None:
    t = PullHoldTable()
    a = _held(3, 100.0)
    tagged = _held(3, 100.0, frozenset({java_string_hash("A")}))
    late = _held(5, 100.0)
    for e in (a, tagged, late):
        t.park(e)
    assert len(t) == 3 and t.next_deadline() == 100.0
    # a new message at offset 3 (max 4) with tag B: only the untagged pull at offset 3 wakes
    assert t.on_arrival("T", 0, 4, java_string_hash("B"), now=1.0) == [a]
    # tag A (sign-extended 64-bit code is compared on its low 32 bits)
    assert t.on_arrival("T", 0, 5, java_string_hash("A") & 0xFFFFFFFFFFFFFFFF, now=1.0) == [tagged]
    assert t.on_arrival("OTHER", 0, 99, None, now=1.0) == []
    # the sweep: no growth past offset 5, deadline not reached -> keep; deadline reached -> release
    assert t.sweep(lambda topic, q: 5, now=50.0) == []
    assert t.sweep(lambda topic, q: 5, now=100.0) == [late]
    assert len(t) == 0 and t.next_deadline() is None


def test_broker_hold_table_drops_closed_channels() -> None:
    t = PullHoldTable()
    t.park(_held(0, 9.0, ch="x"))
    t.park(_held(0, 9.0, ch="y"))
    assert t.drop_channel("x") == 1 and len(t) == 1
    assert [e.channel for e in t.drain()] == ["y"] and len(t) == 0


class FakeScheduleQueue:
    """level queue contents keyed by queue id, as MessageExt records."""

    def __init__(self) -> None:
        self.queues: dict[int, list[MessageExt]] = {}
        self.delivered: list[DueMessage] = []
        self.fail_next = False

    def add(self, queue_id: int, store_ts: int, body: bytes, real_topic: str | None = "T") -> None:
        q = self.queues.setdefault(queue_id, [])
        props = {"DELAY": str(queue_id + 1)}
        if real_topic:
            props |= {"REAL_TOPIC": real_topic, "REAL_QID": "0"}
        q.append(MessageExt(topic="SCHEDULE_TOPIC_XXXX", body=body, properties=props, queue_id=queue_id, queue_offset=len(q), store_timestamp=store_ts))

    def read(self, queue_id: int, offset: int, n: int) -> tuple[list[MessageExt], int, int, int]:
        q = self.queues.get(queue_id, [])
        recs = q[offset : offset + n] if offset >= 0 else []
        return recs, offset + len(recs), 0, len(q)

    def put(self, due: DueMessage) -> bool:
        if self.fail_next:
            self.fail_next = False
            return False
        self.delivered.append(due)
        return True


def test_broker_schedule_delivery_stops_at_first_not_due_and_retries_failed_puts() -> None:
    fake = FakeScheduleQueue()
    sd = ScheduleDelivery((1000, 5000), fake.read, fake.put)
    fake.add(0, 0, b"a")
    fake.add(0, 500, b"b")
    fake.add(1, 0, b"c")
    fake.add(1, 100, b"no-real-topic", real_topic=None)
    assert sd.deliver_due(999) == 0
    assert sd.deliver_due(1000) == 1 and [d.record.body for d in fake.delivered] == [b"a"]
    assert sd.offsets == {1: 1, 2: 0}
    fake.fail_next = True
    assert sd.deliver_due(1500) == 0 and sd.offsets[1] == 1  # failed put: same entry next time
    assert sd.deliver_due(1500) == 1
    assert sd.deliver_due(5100) == 1  # c delivered; the record without REAL_TOPIC is skipped
    assert sd.offsets == {1: 2, 2: 2}
    assert [d.record.body for d in fake.delivered] == [b"a", b"b", b"c"]
    assert fake.delivered[0].properties["WAIT"] == "false" and "DELAY" not in fake.delivered[0].properties
    assert ScheduleDelivery.offsets_from_json(sd.to_json()) == {1: 2, 2: 2}
    assert ScheduleDelivery.offsets_from_json({"offsetTable": {"x": 1, "3": "4"}}) == {3: 4}


def test_broker_queue_locks_follow_the_rebalance_lock_manager_table() -> None:
    from rocketpipe.broker.locks import QueueLocks
    from rocketpipe.protocol.message import MessageQueue

    q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    locks = QueueLocks(lock_max_live_ms=60_000)
    assert locks.try_lock_batch("g", [q0, q1], "c1", 0) == {q0, q1}  # free -> granted
    assert locks.try_lock_batch("g", [q0], "c2", 30_000) == set()  # held by c1, live -> refused
    assert locks.try_lock_batch("g", [q0], "c1", 50_000) == {q0}  # holder renews
    assert locks.try_lock_batch("g", [q0, q1], "c2", 100_000) == {q1}  # q1 expired (last 0), q0 renewed at 50 s
    assert locks.holder("g", q1, 100_000) == "c2"
    locks.unlock_batch("g", [q0], "c2")  # not the holder: no effect
    assert locks.holder("g", q0, 100_000) == "c1"
    locks.unlock_batch("g", [q0], "c1")
    assert locks.holder("g", q0, 100_000) is None
    assert locks.try_lock_batch("other", [q0], "c3", 0) == {q0}  # groups are independent
