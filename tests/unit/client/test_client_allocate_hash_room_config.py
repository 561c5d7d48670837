"""AllocateMessageQueueConsistentHash / ByConfig / ByMachineRoom (pure strategies)."""

from __future__ import annotations

import hashlib

import pytest

from rocketpipe.client.consumer.allocate import (
    ConsistentHashRing,
    allocate_consistent_hash,
    by_config_strategy,
    by_machine_room_strategy,
    consistent_hash_strategy,
    md5_hash,
)
from rocketpipe.protocol.message import MessageQueue


def qs(n: int, topic: str = "T", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def test_md5_hash_is_first_four_digest_bytes_big_endian() -> None:
    # MD5("") = d41d8cd98f00b204e9800998ecf8427e; MD5("abc") = 900150983cd24fb0...
    assert md5_hash("") == 0xD41D8CD9
    assert md5_hash("abc") == 0x90015098
    assert all(0 <= md5_hash(f"k{i}") < 2**32 for i in range(100))


def test_queue_key_is_java_to_string() -> None:
    assert str(MessageQueue("T", "b", 3)) == "MessageQueue [topic=T, brokerName=b, queueId=3]"


def reference_owner(cids: list[str], key: str, vnodes: int = 10) -> str:
    """Independent restatement of ConsistentHashRouter.routeNode for the test."""
    ring = {
        int.from_bytes(hashlib.md5(f"{c}-{i}".encode()).digest()[:4], "big"): c for c in cids for i in range(vnodes)
    }
    h = int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")
    after = [k for k in sorted(ring) if k >= h]
    return ring[after[0] if after else min(ring)]


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_consistent_hash_partitions_every_queue_once(m: int) -> None:
    mqs = qs(16) + qs(4, broker="broker-b")
    cids = [f"127.0.0.1@{i}" for i in range(m)]
    parts = [allocate_consistent_hash("g", c, mqs, cids) for c in cids]
    assert sorted(q for p in parts for q in p) == sorted(mqs)
    for c, p in zip(cids, parts, strict=False):
        for q in p:
            assert reference_owner(cids, str(q)) == c


def test_consistent_hash_moves_only_the_new_clients_queues() -> None:
    mqs = qs(32)
    before = {c: set(allocate_consistent_hash("g", c, mqs, ["a", "b", "c"])) for c in ("a", "b", "c")}
    after = {c: set(allocate_consistent_hash("g", c, mqs, ["a", "b", "c", "d"])) for c in ("a", "b", "c", "d")}
    for c in ("a", "b", "c"):
        assert after[c] <= before[c]  # existing clients only lose queues (to d)
    assert set().union(*(before[c] - after[c] for c in "abc")) == after["d"]


def test_consistent_hash_edge_cases() -> None:
    assert allocate_consistent_hash("g", "x", qs(4), ["a", "b"]) == []  # not a member
    assert allocate_consistent_hash("g", "a", [], ["a"]) == []
    assert consistent_hash_strategy(0)("g", "a", qs(4), ["a"]) == []  # no virtual node: no owner
    assert ConsistentHashRing([], 10).route("k") is None
    with pytest.raises(ValueError):
        consistent_hash_strategy(-1)
    # a custom hash function is used for both nodes and keys
    ring = ConsistentHashRing(
        ["a", "b"], 1, hash_fn=lambda k: {"a-0": 10, "b-0": 20}.get(k, int(k) if k.isdigit() else 0)
    )
    assert (ring.route("5"), ring.route("15"), ring.route("25")) == ("a", "b", "a")


def test_by_config_returns_the_configured_queues() -> None:
    mine = [MessageQueue("T", "broker-a", 1), MessageQueue("T", "broker-a", 3)]
    s = by_config_strategy(mine)
    assert s("g", "c0", qs(8), ["c0", "c1"]) == mine
    assert s("g", "c1", qs(8), ["c0", "c1"]) == mine  # every client: the same list (Java ignores cidAll)


def test_by_machine_room_filters_rooms_and_splits() -> None:
    mqs = [MessageQueue("T", f"{room}@broker-{room}", i) for room in ("hz", "sh", "bj") for i in range(4)]
    mqs.append(MessageQueue("T", "plain-broker", 0))  # no "@": never allocated
    s = by_machine_room_strategy({"hz", "sh"})
    cids = ["c0", "c1", "c2"]
    got = {c: s("g", c, mqs, cids) for c in cids}
    # 8 queues in hz+sh (sorted: hz@.. before sh@..), 3 clients: mod 2, rem 2
    pre = sorted(q for q in mqs if q.broker_name.split("@")[0] in ("hz", "sh"))
    assert got["c0"] == [pre[0], pre[1], pre[6]]
    assert got["c1"] == [pre[2], pre[3], pre[7]]
    assert got["c2"] == [pre[4], pre[5]]
    assert s("g", "zz", mqs, cids) == []
    assert by_machine_room_strategy(set())("g", "c0", mqs, cids) == []


def test_machine_room_nearby() -> None:
    from rocketpipe.client.consumer.allocate import allocate_averagely, machine_room_nearby_strategy

    mqs = [MessageQueue("T", f"{room}-broker", i) for room in ("hz", "sh", "bj") for i in range(4)]
    s = machine_room_nearby_strategy(
        allocate_averagely, lambda q: q.broker_name.split("-")[0], lambda c: c.split("@")[0]
    )
    cids = ["hz@1", "hz@2", "sh@1"]  # nobody in bj
    got = {c: s("g", c, mqs, cids) for c in cids}
    hz = [q for q in sorted(mqs) if q.broker_name.startswith("hz")]
    sh = [q for q in sorted(mqs) if q.broker_name.startswith("sh")]
    bj = [q for q in sorted(mqs) if q.broker_name.startswith("bj")]
    # own room split among the room's clients; the orphan room (bj) split among everyone
    assert got["hz@1"] == hz[:2] + bj[:2]
    assert got["hz@2"] == hz[2:] + bj[2:3]
    assert got["sh@1"] == sh + bj[3:]
    assert sorted(q for p in got.values() for q in p) == sorted(mqs)
    with pytest.raises(ValueError):
        machine_room_nearby_strategy(allocate_averagely, lambda q: "", lambda c: "x")("g", "a", mqs, ["a"])
