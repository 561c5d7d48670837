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
        group,
        ClientChannel(ch, f"id-{ch}", 3, 409, now),
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscriptions=subs,
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
        q.append(
            MessageExt(
                topic="SCHEDULE_TOPIC_XXXX",
                body=body,
                properties=props,
                queue_id=queue_id,
                queue_offset=len(q),
                store_timestamp=store_ts,
            )
        )

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
    # the delivered copy keeps the schedule record's properties (Java messageTimeup), DELAY included
    assert fake.delivered[0].properties == {"DELAY": "1", "REAL_TOPIC": "T", "REAL_QID": "0"}
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


def test_broker_hold_table_keeps_a_deadline_heap_and_expires_without_a_sweep() -> None:
    t = PullHoldTable()
    early, mid, late = _held(0, 10.0, ch="a"), _held(0, 20.0, ch="b"), _held(0, 30.0, ch="c")
    for e in (late, early, mid):
        t.park(e)
    assert t.next_deadline() == 10.0
    assert t.on_arrival("T", 0, 0, None, now=1.0) == []  # no growth: nothing released
    assert t.drop_channel("a") == 1
    assert t.next_deadline() == 20.0  # the dropped entry's heap slot is skipped
    assert t.expire(19.9) == []
    assert t.expire(20.0) == [mid] and len(t) == 1
    assert t.on_arrival("T", 0, 1, None, now=21.0) == [late]
    assert t.next_deadline() is None and t.expire(99.0) == [] and len(t) == 0


def test_broker_hold_table_batch_arrival_matches_any_tag_of_the_batch() -> None:
    t = PullHoldTable()
    a, b = java_string_hash("A"), java_string_hash("B")
    on_a = _held(0, 100.0, frozenset({a}))
    on_c = _held(0, 100.0, frozenset({java_string_hash("C")}))
    t.park(on_a)
    t.park(on_c)
    assert t.on_arrival("T", 0, 2, [a, b], now=1.0) == [on_a]  # [A, B]: A is in it
    assert t.on_arrival("T", 0, 2, [b], now=1.0) == []
    assert t.on_arrival("T", 0, 2, [b, None], now=1.0) == [on_c]  # an unknown code matches any filter


def test_broker_schedule_delivery_caps_one_tick_and_reports_a_backlog() -> None:
    fake = FakeScheduleQueue()
    for i in range(25):
        fake.add(0, 0, f"m{i}".encode())
    sd = ScheduleDelivery((1000,), fake.read, fake.put, max_per_level=10)
    assert sd.deliver_due(5000) == 10 and sd.backlog and sd.offsets == {1: 10}
    assert sd.deliver_due(5000) == 10 and sd.backlog
    assert sd.deliver_due(5000) == 5 and not sd.backlog and sd.offsets == {1: 25}
    assert [d.record.body for d in fake.delivered] == [f"m{i}".encode() for i in range(25)]


def test_broker_schedule_delivery_skips_blank_entries() -> None:
    fake = FakeScheduleQueue()
    for i in range(6):
        fake.add(0, 0, f"m{i}".encode())
    blank = {1, 2, 3}  # consume-queue entries whose records cannot be read

    def read(queue_id: int, offset: int, n: int) -> tuple[list[MessageExt], int, int, int]:
        if offset in blank:  # nothing returned, but the store says where the next readable entry is
            return [], max(blank) + 1, 0, 6
        recs, _next, mn, mx = fake.read(queue_id, offset, n)
        recs = [r for r in recs if r.queue_offset not in blank][:1]
        return recs, (recs[-1].queue_offset + 1 if recs else offset), mn, mx

    sd = ScheduleDelivery((1000,), read, fake.put)
    assert sd.deliver_due(5000) == 3
    assert sd.offsets == {1: 6}
    assert [d.record.body for d in fake.delivered] == [b"m0", b"m4", b"m5"]
