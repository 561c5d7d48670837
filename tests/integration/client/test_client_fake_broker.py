"""Client behaviour against scripted name-server/broker handlers over real TCP.

The fakes answer what the real broker cannot easily be made to answer (broker errors, unknown
topics, QUERY_NOT_FOUND with a non-zero max offset, OFFSET_MOVED), so the client's decisions
(retries, TBW102 fallback, ConsumeFromWhere, OFFSET_ILLEGAL repair) are observable on the wire.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import orjson
import pytest

from rocketpipe import Admin, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketpipe.errors import MessageIllegalError, ServiceNotAvailableError
from rocketpipe.protocol.bodies.heartbeat import HeartbeatData
from rocketpipe.protocol.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.message import MessageExt, encode_record, string_to_properties
from rocketpipe.transport.connection import Connection
from rocketpipe.transport.router import Router
from rocketpipe.transport.server import RemotingServer
from waiting import wait_until

Handler = Callable[[RemotingCommand, Connection], Awaitable["RemotingCommand | None"]]


@dataclass
class Fake:
    """One name server and two brokers (broker-a, broker-b), scripted per test."""

    ns: str = ""
    a: str = ""
    b: str = ""
    routes: dict[str, TopicRouteData] = field(default_factory=dict)
    requests: list[tuple[str, RemotingCommand]] = field(default_factory=list)
    client_ids: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    send_codes: dict[str, int] = field(default_factory=dict)
    pull_script: dict[tuple[str, int, int], tuple[int, int]] = field(default_factory=dict)
    pull_bodies: dict[tuple[str, int, int], bytes] = field(default_factory=dict)

    def route(
        self, topic: str, queues: int = 2, perm: int = 6, brokers: tuple[str, ...] = ("broker-a", "broker-b")
    ) -> None:
        addr = {"broker-a": self.a, "broker-b": self.b}
        self.routes[topic] = TopicRouteData(
            queue_datas=[
                QueueData(broker_name=n, read_queue_nums=queues, write_queue_nums=queues, perm=perm) for n in brokers
            ],
            broker_datas=[BrokerData(cluster="c", broker_name=n, broker_addrs={0: addr[n]}) for n in brokers],
        )

    def seen(self, who: str, code: int) -> list[RemotingCommand]:
        return [c for w, c in self.requests if w == who and c.code == code]


def _ok(cmd: RemotingCommand, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return cmd.response(0, None, ext, body)


def namesrv_router(f: Fake) -> Router:
    r = Router()

    async def get_route(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        topic = cmd.ext_fields["topic"]
        if topic not in f.routes:
            return cmd.response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        return _ok(cmd, body=f.routes[topic].encode())

    r.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, get_route)
    return r


def broker_router(f: Fake, name: str) -> Router:
    r = Router()

    def record(h: Handler) -> Handler:
        async def wrapped(cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
            f.requests.append((name, cmd))
            return await h(cmd, conn)

        return wrapped

    async def heartbeat(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        f.client_ids.add(HeartbeatData.decode(bytes(cmd.body)).client_id)
        return _ok(cmd)

    async def consumer_list(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return _ok(cmd, body=orjson.dumps({"consumerIdList": sorted(f.client_ids)}))

    async def query_offset(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        key = (cmd.ext_fields["topic"], int(cmd.ext_fields["queueId"]))
        if key not in f.offsets:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first")
        return _ok(cmd, {"offset": str(f.offsets[key])})

    async def update_offset(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        f.offsets[(cmd.ext_fields["topic"], int(cmd.ext_fields["queueId"]))] = int(cmd.ext_fields["commitOffset"])
        return _ok(cmd)

    async def max_offset(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return _ok(cmd, {"offset": "100"})

    async def search(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return _ok(cmd, {"offset": "50"})

    async def pull(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        e = cmd.ext_fields
        offset = int(e["queueOffset"])
        key = (e["topic"], int(e["queueId"]), offset)
        code, nxt = f.pull_script.get(key, (ResponseCode.PULL_NOT_FOUND, offset))
        await asyncio.sleep(0.05)  # a short "long poll"
        return cmd.response(
            code,
            "OFFSET_TOO_SMALL" if code == 21 else "OFFSET_OVERFLOW_ONE",
            {"nextBeginOffset": str(nxt), "minOffset": "0", "maxOffset": "100", "suggestWhichBrokerId": "0"},
            f.pull_bodies.get(key, b""),
        )

    async def send(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        code = f.send_codes.get(name, 0)
        if code:
            return cmd.response(code, f"scripted failure on {name}")
        return _ok(
            cmd, {"msgId": "7F00000100002A9F0000000000000000", "queueId": cmd.ext_fields["e"], "queueOffset": "0"}
        )

    async def ok(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        return _ok(cmd)

    for code, h in [
        (RequestCode.HEART_BEAT, heartbeat),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumer_list),
        (RequestCode.QUERY_CONSUMER_OFFSET, query_offset),
        (RequestCode.UPDATE_CONSUMER_OFFSET, update_offset),
        (RequestCode.GET_MAX_OFFSET, max_offset),
        (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search),
        (RequestCode.PULL_MESSAGE, pull),
        (RequestCode.SEND_MESSAGE_V2, send),
        (RequestCode.UNREGISTER_CLIENT, ok),
    ]:
        r.register(code, record(h))
    return r


@pytest.fixture
async def fake() -> AsyncIterator[Fake]:
    f = Fake()
    servers = [
        RemotingServer(namesrv_router(f)),
        RemotingServer(broker_router(f, "broker-a")),
        RemotingServer(broker_router(f, "broker-b")),
    ]
    f.ns, f.a, f.b = [await s.start() for s in servers]
    try:
        yield f
    finally:
        for s in servers:
            await s.close()


async def test_retriable_code_retries_on_the_other_broker(fake: Fake) -> None:
    fake.route("T")
    fake.send_codes = {"broker-a": ResponseCode.SERVICE_NOT_AVAILABLE, "broker-b": ResponseCode.SERVICE_NOT_AVAILABLE}
    async with Producer("pg", namesrv_addr=fake.ns) as p:
        with pytest.raises(ServiceNotAvailableError):
            await p.send(Message.build("T", b"x"))
        tried = [w for w, c in fake.requests if c.code == RequestCode.SEND_MESSAGE_V2]
        assert len(tried) == 3  # 1 + retryTimesWhenSendFailed
        assert tried[0] != tried[1] and tried[1] != tried[2]  # each retry avoids the previous broker
        fake.send_codes = {"broker-a": ResponseCode.SERVICE_NOT_AVAILABLE}
        for _ in range(4):
            r = await p.send(Message.build("T", b"y"))
            assert r.message_queue.broker_name == "broker-b"


async def test_non_retriable_code_fails_at_once(fake: Fake) -> None:
    fake.route("T")
    fake.send_codes = {"broker-a": ResponseCode.MESSAGE_ILLEGAL, "broker-b": ResponseCode.MESSAGE_ILLEGAL}
    async with Producer("pg", namesrv_addr=fake.ns) as p:
        with pytest.raises(MessageIllegalError):
            await p.send(Message.build("T", b"x"))
    assert len([1 for _, c in fake.requests if c.code == RequestCode.SEND_MESSAGE_V2]) == 1


async def test_unknown_topic_uses_tbw102_and_v2_header(fake: Fake) -> None:
    fake.route("TBW102", queues=8, perm=7, brokers=("broker-b",))
    async with Producer("pg", namesrv_addr=fake.ns) as p:
        r = await p.send(Message.build("Fresh", b"q" * 5000, tags="t", keys="k"))
    (cmd,) = fake.seen("broker-b", RequestCode.SEND_MESSAGE_V2)
    e = cmd.ext_fields
    assert (e["a"], e["b"], e["c"], e["d"]) == ("pg", "Fresh", "TBW102", "4")
    assert 0 <= int(e["e"]) < 4  # capped at defaultTopicQueueNums
    assert int(e["f"]) & 0x1  # compressed
    assert e["m"] == "false"
    props = string_to_properties(e["i"])
    assert props["UNIQ_KEY"] == r.msg_id and props["TAGS"] == "t" and props["KEYS"] == "k"
    assert r.message_queue.topic == "Fresh"


@pytest.mark.parametrize(
    ("where", "topic_offset", "retry_offset"),
    [
        (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 100, 0),
        (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, 0, 0),
        (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 50, 100),
    ],
)
async def test_consume_from_where_first_pull(
    fake: Fake, where: ConsumeFromWhere, topic_offset: int, retry_offset: int
) -> None:
    fake.route("CFW", queues=1, brokers=("broker-a",))
    fake.route("%RETRY%cg", queues=1, brokers=("broker-a",))
    consumer = PushConsumer("cg", namesrv_addr=fake.ns, consume_from_where=where)
    consumer.subscribe("CFW")
    consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)

    def first_pull(topic: str) -> int | None:
        for c in fake.seen("broker-a", RequestCode.PULL_MESSAGE):
            if c.ext_fields["topic"] == topic:
                return int(c.ext_fields["queueOffset"])
        return None

    async with consumer:
        await wait_until(
            lambda: first_pull("CFW") is not None and first_pull("%RETRY%cg") is not None, what="first pulls"
        )
    assert first_pull("CFW") == topic_offset
    assert first_pull("%RETRY%cg") == retry_offset
    pull = fake.seen("broker-a", RequestCode.PULL_MESSAGE)[0].ext_fields
    assert pull["suspendTimeoutMillis"] == "15000" and int(pull["sysFlag"]) & 0x2  # long polling
    assert fake.seen("broker-a", RequestCode.UNREGISTER_CLIENT)  # clean shutdown


async def test_offset_illegal_is_repaired_and_queue_restarted(fake: Fake) -> None:
    fake.route("Moved", queues=1, brokers=("broker-a",))
    fake.route("%RETRY%cg", queues=1, brokers=("broker-a",))
    fake.offsets[("Moved", 0)] = 3
    fake.pull_script[("Moved", 0, 3)] = (ResponseCode.PULL_OFFSET_MOVED, 7)
    consumer = PushConsumer("cg", namesrv_addr=fake.ns)
    consumer.subscribe("Moved")
    consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)

    def pulled_offsets() -> list[int]:
        return [
            int(c.ext_fields["queueOffset"])
            for c in fake.seen("broker-a", RequestCode.PULL_MESSAGE)
            if c.ext_fields["topic"] == "Moved"
        ]

    async with consumer:
        await wait_until(lambda: 7 in pulled_offsets(), timeout=10, what="pull from the corrected offset")
    offsets = pulled_offsets()
    assert offsets[0] == 3 and offsets[offsets.index(7) - 1] == 3
    assert fake.offsets[("Moved", 0)] == 7  # corrected offset persisted to the broker


async def test_name_server_failover_and_oneway(fake: Fake) -> None:
    fake.route("T")
    async with Admin(f"127.0.0.1:1;{fake.ns}") as admin:
        for _ in range(3):  # whichever name server is tried first, the dead one is skipped
            route = await admin.topic_route("T")
            assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]
    async with Producer("pg", namesrv_addr=f"127.0.0.1:1;{fake.ns}") as p:
        await p.send_oneway(Message.build("T", b"one-way"))
        await p.send_oneway(Message.build("T", b"one-way"))
        await wait_until(
            lambda: len([c for _, c in fake.requests if c.code == RequestCode.SEND_MESSAGE_V2]) == 2,
            what="one-way sends",
        )
    sends = [c for _, c in fake.requests if c.code == RequestCode.SEND_MESSAGE_V2]
    assert all(c.is_oneway for c in sends)


async def test_commit_offset_piggy_backed_on_pull_and_persisted_at_shutdown(fake: Fake) -> None:
    fake.route("P", queues=1, brokers=("broker-a",))
    fake.route("%RETRY%cg", queues=1, brokers=("broker-a",))
    fake.offsets[("P", 0)] = 0
    fake.pull_script[("P", 0, 0)] = (ResponseCode.SUCCESS, 2)
    fake.pull_bodies[("P", 0, 0)] = b"".join(
        encode_record(topic="P", body=f"m{i}".encode(), properties={"UNIQ_KEY": f"ID{i}"}, queue_id=0, queue_offset=i)
        for i in range(2)
    )
    got: list[bytes] = []
    consumer = PushConsumer("cg", namesrv_addr=fake.ns)
    consumer.subscribe("P")

    def listener(msgs: list[MessageExt], ctx: object) -> ConsumeConcurrentlyStatus:
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)

    def pulls() -> list[dict[str, str]]:
        return [c.ext_fields for c in fake.seen("broker-a", RequestCode.PULL_MESSAGE) if c.ext_fields["topic"] == "P"]

    async with consumer:
        hb = HeartbeatData.decode(bytes(fake.seen("broker-a", RequestCode.HEART_BEAT)[0].body))
        (cd,) = hb.consumer_data_set
        assert cd.group_name == "cg" and cd.consume_type == "CONSUME_PASSIVELY" and cd.message_model == "CLUSTERING"
        assert {s.topic for s in cd.subscription_data_set} == {"P", "%RETRY%cg"}
        await wait_until(lambda: got == [b"m0", b"m1"], what="two messages")
        await wait_until(lambda: any(p.get("commitOffset") == "2" for p in pulls()), what="piggy-backed commit")
    first, later = pulls()[0], next(p for p in pulls() if p.get("commitOffset") == "2")
    assert int(first["sysFlag"]) & 0x1 == 0  # offset 0 is never piggy-backed
    assert int(later["sysFlag"]) & 0x1 and later["queueOffset"] == "2"
    assert fake.offsets[("P", 0)] == 2  # persisted (acknowledged) at shutdown
