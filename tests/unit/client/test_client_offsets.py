"""RemoteOffsetStore semantics (RemoteBrokerOffsetStore)."""

from __future__ import annotations

import asyncio

from rocketpipe.client.consumer.offsets import ReadOffsetType, RemoteOffsetStore
from rocketpipe.errors import SystemError_, error_for_response
from rocketpipe.protocol.message import MessageQueue

MQ = MessageQueue("T", "b", 0)
MQ2 = MessageQueue("T", "b", 1)


class FakeBroker:
    def __init__(self) -> None:
        self.stored: dict[MessageQueue, int] = {}
        self.commits: list[tuple[MessageQueue, int, bool]] = []
        self.fail_query: Exception | None = None

    async def query(self, mq: MessageQueue) -> int:
        if self.fail_query is not None:
            raise self.fail_query
        if mq not in self.stored:
            raise error_for_response(22, "no offset")
        return self.stored[mq]

    async def commit(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        self.commits.append((mq, offset, oneway))
        self.stored[mq] = offset


def test_update_increase_only() -> None:
    s = RemoteOffsetStore(FakeBroker().query, FakeBroker().commit)
    s.update_offset(MQ, 10, increase_only=True)
    s.update_offset(MQ, 5, increase_only=True)
    assert s.read_memory(MQ) == 10
    s.update_offset(MQ, 5, increase_only=False)
    assert s.read_memory(MQ) == 5
    assert s.read_memory(MQ2) == -1


def test_read_offset_from_store() -> None:
    b = FakeBroker()
    s = RemoteOffsetStore(b.query, b.commit)
    assert asyncio.run(s.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == -1  # QUERY_NOT_FOUND
    b.stored[MQ] = 33
    assert asyncio.run(s.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == 33
    assert s.read_memory(MQ) == 33  # cached
    b.fail_query = SystemError_("down")
    assert asyncio.run(s.read_offset(MQ2, ReadOffsetType.READ_FROM_STORE)) == -2
    assert asyncio.run(s.read_offset(MQ, ReadOffsetType.MEMORY_FIRST_THEN_STORE)) == 33
    assert asyncio.run(s.read_offset(MQ2, ReadOffsetType.READ_FROM_MEMORY)) == -1


def test_persist_all_oneway_and_forget_unassigned() -> None:
    b = FakeBroker()
    s = RemoteOffsetStore(b.query, b.commit)
    s.update_offset(MQ, 7, increase_only=False)
    s.update_offset(MQ2, 9, increase_only=False)
    asyncio.run(s.persist_all([MQ]))
    assert b.commits == [(MQ, 7, True)]
    assert s.snapshot() == {MQ: 7}


def test_persist_acknowledged() -> None:
    b = FakeBroker()
    s = RemoteOffsetStore(b.query, b.commit)
    asyncio.run(s.persist(MQ))
    assert b.commits == []  # nothing cached: nothing sent
    s.update_offset(MQ, 3, increase_only=False)
    asyncio.run(s.persist(MQ, oneway=False))
    assert b.commits == [(MQ, 3, False)]
