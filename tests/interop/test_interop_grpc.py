"""The official RocketMQ 5 Python SDK (``rocketmq-python-client``, gRPC) against three endpoints,
with the same scenarios and the same expected outcome on each:

* ``rocketpipe``: rocketpipe's :class:`~rocketpipe.proxy.ProxyServer` over an embedded
  ``local_cluster`` (what ``rocketpipe serve --grpc-port`` runs);
* ``rocketpipe-proxy-apache-5``: the same ``ProxyServer`` (what ``rocketpipe proxy -n`` runs) in
  front of the session's Apache 5.3.3 name server + broker;
* ``apache-proxy-apache-5``: the control, Apache's own ``rocketmq-proxy`` 5.3.3 from Maven
  Central in cluster mode (:mod:`rocketpipe.testing.apache_proxy`) in front of the same cluster.

Scenarios: normal messages (tags, keys, properties) sent and received by a SimpleConsumer (tag
filter, ack, change invisible duration → redelivery with attempt 2); FIFO messages of two message
groups received in each group's send order (topic ``message.type=FIFO``, orderly group); a delay
message received no earlier than its delivery timestamp (``message.type=DELAY``); transactions
(``message.type=TRANSACTION``) committed → received, rolled back → never stored in the topic; a
PushConsumer consuming everything once; raw SendMessage calls of a type the topic does not take,
refused by the endpoint's own check (MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, Apache's message); the
calls Apache's 5.3.3 proxy does not serve (PullMessage, UpdateOffset, GetOffset, QueryOffset,
SyncLiteSubscription) answered UNIMPLEMENTED.
The official Java gRPC client (``org.apache.rocketmq:rocketmq-client-java`` 5.0.8, the Maven
project ``tests/interop/java-grpc``) runs the same kinds of scenario against the same three
endpoints: normal messages with a SimpleConsumer (``NormalScenario``), FIFO message groups
(``FifoScenario``), a delay message (``DelayScenario``) and its recall (``RecallScenario``),
transactions (``TransactionScenario``) and a PushConsumer (``PushConsumerScenario``).
Topics (4 queues) and groups are created on the brokers with rocketpipe's ``Admin`` over
remoting, which works on both brokers.

Received user properties are compared exactly: both proxies show what Java 5.3.3's
``MessageConst.STRING_HASH_SET`` does not hide (``__SHARDINGKEY`` and ``__transactionId__``
included; the born host / time and the timer's properties not).
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from interop_support import INTEROP_DIR, TIMINGS, has_route, read_topic, run_java_json, unique
from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    MessageListener,
    PushConsumer,
    SendReceipt,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)
from rocketmq import Message as SdkMessage
from rocketmq import Producer as SdkProducer
from rocketmq.grpc_protocol import definition_pb2 as pb

from grpc_raw import UNSERVED_CALLS, call_status, raw_message, raw_recall, raw_send
from rocketpipe import Admin
from rocketpipe.protocol.bodies.admin import SubscriptionGroupConfig
from rocketpipe.proxy import ProxyServer
from rocketpipe.testing.apache import (
    APACHE_VERSIONS,
    JVM_OPTS,
    ApacheCluster,
    ApacheUnavailableError,
    _home_props,
    prepare_home,
    resolve_classpath,
)
from rocketpipe.testing.apache_proxy import ApacheProxy, apache_proxy
from rocketpipe.testing.cluster import local_cluster
from waiting import wait_until, wait_until_sync

QUEUES = 4

#: The official Java gRPC client (``org.apache.rocketmq:rocketmq-client-java``) of the Java scenarios.
JAVA_GRPC_CLIENT_VERSION = os.environ.get("ROCKETPIPE_JAVA_GRPC_CLIENT_VERSION", "5.0.8")
JAVA_GRPC_PROJECT = INTEROP_DIR / "java-grpc"


@dataclass
class GrpcTarget:
    """An endpoint for the SDKs (``endpoint``) and the remoting cluster behind it."""

    kind: str
    endpoint: str
    namesrv_addr: str
    broker_addrs: list[str]


@pytest.fixture(scope="module")
def apache_proxy_5(apache_5: ApacheCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheProxy]:
    """Apache's rocketmq-proxy (cluster mode) in front of the session's Apache 5.3.3 cluster."""
    version = APACHE_VERSIONS["apache-5"]
    try:
        with apache_proxy(version, apache_5.namesrv_addr, tmp_path_factory.mktemp("apache-proxy")) as p:
            TIMINGS["apache-proxy start-up"] = p.startup_seconds
            yield p
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache rocketmq-proxy {version} unavailable: {exc}", pytrace=False)


@pytest.fixture(params=["rocketpipe", "rocketpipe-proxy-apache-5", "apache-proxy-apache-5"])
async def grpc_target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GrpcTarget]:
    kind = request.param
    if kind == "rocketpipe":
        async with (
            local_cluster(tmp_path / "store", recall_message_enable=True) as c,  # as the Apache test brokers
            ProxyServer(c.namesrv_addr, port=0) as p,
        ):
            yield GrpcTarget(kind, p.address, c.namesrv_addr, list(c.broker_addrs))
        return
    ac: ApacheCluster = request.getfixturevalue("apache_5")
    if kind == "rocketpipe-proxy-apache-5":
        async with ProxyServer(ac.namesrv_addr, port=0) as p:
            yield GrpcTarget(kind, p.address, ac.namesrv_addr, [ac.broker_addr])
        return
    proxy: ApacheProxy = request.getfixturevalue("apache_proxy_5")
    yield GrpcTarget(kind, proxy.grpc_addr, ac.namesrv_addr, [ac.broker_addr])


async def prepare(t: GrpcTarget, prefix: str, message_type: str | None, orderly: bool = False) -> tuple[str, str]:
    """A new topic (``QUEUES`` queues, ``message.type`` attribute when given) routed by the name
    server, and a new consumer group on every broker; (topic, group)."""
    topic, group = unique(prefix), unique(f"{prefix}Group")
    async with Admin(t.namesrv_addr) as admin:
        await admin.create_topic(topic, QUEUES, attributes=f"+message.type={message_type}" if message_type else None)
        await wait_until(lambda: has_route(admin, topic, QUEUES), timeout=30, what=f"route of {topic}")
        for addr in t.broker_addrs:
            config = SubscriptionGroupConfig(group, consume_message_orderly=orderly)
            await admin.create_and_update_subscription_group_config(addr, config)
    return topic, group


# ------------------------------------------------------------------------------ the SDK (blocking)


def config(endpoint: str) -> ClientConfiguration:
    return ClientConfiguration(endpoint, Credentials())


def sdk_message(
    topic: str, body: str, *, tag: str = "", key: str = "", group: str = "", deliver_at: int = 0, **props: str
) -> SdkMessage:
    m = SdkMessage()
    m.topic = topic
    m.body = body.encode()
    if tag:
        m.tag = tag
    if key:
        m.keys = key
    if group:
        m.message_group = group
    if deliver_at:
        m.delivery_timestamp = deliver_at  # this SDK puts it into Timestamp.seconds as it is
    for k, v in props.items():
        m.add_property(k, v)
    return m


def start_producer(endpoint: str, topic: str, checker: TransactionChecker | None = None) -> SdkProducer:
    """The SDK's producer, started and holding the endpoint's settings (its startup does not wait
    for them; before them it checks message types against the route only)."""
    producer = SdkProducer(config(endpoint), (topic,), checker)
    producer.startup()
    wait_until_sync(producer._init_settings_event.is_set, timeout=10, what="the SDK got its settings")
    return producer


def send_all(endpoint: str, topic: str, messages: list[SdkMessage]) -> list[SendReceipt]:
    producer = start_producer(endpoint, topic)
    try:
        return [producer.send(m) for m in messages]
    finally:
        producer.shutdown()


@dataclass
class Received:
    body: str
    message: SdkMessage
    at: float  # time.time() when receive returned it


def simple_receive(
    endpoint: str, group: str, topic: str, want: int, *, expression: str = "*", give_back_first: bool = False
) -> list[Received]:
    """The SDK's SimpleConsumer: receive (long polls of 5 s, 15 s invisible) until ``want``
    distinct bodies arrived, acknowledging each message at once — except, with
    ``give_back_first``, the very first one, whose invisible duration is changed to 1 s so that it
    comes back (then acknowledged). Returns every delivery in arrival order."""
    consumer = SimpleConsumer(config(endpoint), group, {topic: FilterExpression(expression)}, await_duration=5)
    consumer.startup()
    # its startup does not wait for the settings; Apache's proxy fails a ReceiveMessage that
    # comes before them (INTERNAL_ERROR, a NullPointerException on the client's settings)
    wait_until_sync(consumer._init_settings_event.is_set, timeout=10, what="the SDK got its settings")
    got: list[Received] = []
    try:
        gave_back = not give_back_first
        for _ in range(24):  # bounded: each receive long-polls at most 5 s
            for m in consumer.receive(16, 15):
                got.append(Received(m.body.decode(), m, time.time()))
                if not gave_back:
                    consumer.change_invisible_duration(m, 1)
                    gave_back = True
                else:
                    consumer.ack(m)
            bodies = {r.body for r in got}
            if len(bodies) >= want and (not give_back_first or len(got) > len(bodies)):
                return got
        raise AssertionError(f"after 24 receives: {[r.body for r in got]}")
    finally:
        consumer.shutdown()


# ------------------------------------------------------------------------------ scenarios


async def test_python_normal_send_and_simple_consumer_receive_ack(grpc_target: GrpcTarget) -> None:
    t = grpc_target
    topic, group = await prepare(t, "GrpcNormal", None)
    messages = [
        sdk_message(topic, f"m{i}", tag="TagA" if i % 2 == 0 else "TagB", key=f"k{i}", n=str(i)) for i in range(6)
    ]
    receipts = await asyncio.to_thread(send_all, t.endpoint, topic, messages)
    assert len({r.message_id for r in receipts}) == 6
    got = await asyncio.to_thread(simple_receive, t.endpoint, group, topic, 3, expression="TagA", give_back_first=True)
    attempts: dict[str, list[int]] = {}
    for r in got:
        attempts.setdefault(r.body, []).append(r.message.delivery_attempt)
    assert sorted(attempts) == ["m0", "m2", "m4"]  # TagB filtered out
    assert sorted(attempts.values()) == [[1], [1], [1, 2]]  # the one given back came back once
    for r in got:
        i = int(r.body[1:])
        assert r.message.message_id == receipts[i].message_id
        assert r.message.topic == topic
        assert r.message.tag == "TagA"
        assert r.message.keys == {f"k{i}"}
        assert r.message.properties == {"n": str(i)}, (t.kind, r.message.properties)


async def test_python_fifo_message_groups_in_order(grpc_target: GrpcTarget) -> None:
    t = grpc_target
    topic, group = await prepare(t, "GrpcFifo", "FIFO", orderly=True)
    plan = [(g, f"{g}-{i}") for i in range(5) for g in ("ga", "gb")]  # interleaved
    receipts = await asyncio.to_thread(
        send_all, t.endpoint, topic, [sdk_message(topic, body, group=g) for g, body in plan]
    )
    assert len(receipts) == 10
    got = await asyncio.to_thread(simple_receive, t.endpoint, group, topic, 10)
    assert sorted(r.body for r in got) == sorted(body for _, body in plan)  # each once
    for g in ("ga", "gb"):
        in_group = [r for r in got if r.message.message_group == g]
        assert [r.body for r in in_group] == [f"{g}-{i}" for i in range(5)]
        # 5.3.3's MessageConst.STRING_HASH_SET lacks the message group: a user property too
        assert all(r.message.properties == {"__SHARDINGKEY": g} for r in in_group), [r.message.properties for r in got]


async def test_python_delay_message_not_delivered_before_its_time(grpc_target: GrpcTarget) -> None:
    t = grpc_target
    topic, group = await prepare(t, "GrpcDelay", "DELAY")
    deliver_at = math.ceil(time.time()) + 4  # whole seconds: this SDK sends Timestamp.seconds
    [receipt] = await asyncio.to_thread(
        send_all, t.endpoint, topic, [sdk_message(topic, "later", deliver_at=deliver_at)]
    )
    sent_at = time.time()
    assert sent_at < deliver_at  # the check below means something
    [r] = await asyncio.to_thread(simple_receive, t.endpoint, group, topic, 1)
    assert r.body == "later" and r.message.message_id == receipt.message_id
    assert r.at >= deliver_at, f"delivered {deliver_at - r.at:.3f}s early"
    assert r.at < deliver_at + 15  # and delivered at all, in time
    assert r.message.delivery_timestamp == deliver_at * 1000
    assert r.message.properties == {}, r.message.properties  # the timer's properties are system ones


class Checker(TransactionChecker):  # type: ignore[misc]
    """Records the check-backs it gets (none expected: every transaction is ended at once)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def check(self, message: SdkMessage) -> TransactionResolution:
        self.asked.append(bytes(message.body).decode())
        return TransactionResolution.ROLLBACK


def send_transactions(endpoint: str, topic: str, plan: list[tuple[str, bool]], checker: Checker) -> list[SendReceipt]:
    """For each (body, commit?): begin, send the half, commit or roll back."""
    producer = start_producer(endpoint, topic, checker)
    try:
        receipts = []
        for body, commit in plan:
            transaction = producer.begin_transaction()
            receipts.append(producer.send(sdk_message(topic, body), transaction))
            if commit:
                transaction.commit()
            else:
                transaction.rollback()
        return receipts
    finally:
        producer.shutdown()


async def test_python_transaction_commit_visible_rollback_not(grpc_target: GrpcTarget) -> None:
    t = grpc_target
    topic, group = await prepare(t, "GrpcTx", "TRANSACTION")
    checker = Checker()
    plan = [("commit-1", True), ("rollback-1", False), ("commit-2", True)]
    receipts = await asyncio.to_thread(send_transactions, t.endpoint, topic, plan, checker)
    async with Admin(t.namesrv_addr) as admin:  # END_TRANSACTION is oneway: wait for the commits to land
        stored: list[str] = []

        async def committed() -> bool:
            stored[:] = sorted(m.body.decode() for m in await read_topic(admin, topic))
            return len(stored) >= 2

        try:
            await wait_until(committed, timeout=30, interval=0.5, what=f"the committed messages in {topic}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: stored {stored}, check-backs {checker.asked}") from None
    assert stored == ["commit-1", "commit-2"]
    got = await asyncio.to_thread(simple_receive, t.endpoint, group, topic, 2)
    assert sorted(r.body for r in got) == ["commit-1", "commit-2"]
    by_body = {r.body: r.message for r in got}
    assert by_body["commit-1"].message_id == receipts[0].message_id
    assert by_body["commit-2"].message_id == receipts[2].message_id
    for r in got:  # 5.3.3's MessageConst.STRING_HASH_SET lacks the transaction id: a user property
        assert r.message.properties == {"__transactionId__": r.message.message_id}, (t.kind, r.message.properties)
    async with Admin(t.namesrv_addr) as admin:  # what the topic holds, by raw pulls: nothing more
        assert sorted(m.body.decode() for m in await read_topic(admin, topic)) == ["commit-1", "commit-2"]
    assert checker.asked == []


async def test_endpoint_refuses_a_type_the_topic_does_not_take(grpc_target: GrpcTarget) -> None:
    """Raw SendMessage calls, which the SDKs' own checks would stop: the endpoint checks the
    first message's type against its topic's ``message.type`` (Apache's proxy:
    ``enableTopicMessageTypeCheck``) with the same code and message, and stores nothing."""
    t = grpc_target
    fifo, _ = await prepare(t, "GrpcTypeFifo", "FIFO")
    normal, _ = await prepare(t, "GrpcTypeNormal", None)
    missing = unique("GrpcTypeMissing")
    cases = [
        (raw_message(fifo, "normal-on-fifo"), "FIFO", "NORMAL"),
        (raw_message(normal, "fifo-on-normal", group="g"), "NORMAL", "FIFO"),
        (raw_message(missing, "nowhere"), "UNSPECIFIED", "NORMAL"),  # no topic config: UNSPECIFIED
    ]
    for m, expected, actual in cases:
        response = await raw_send(t.endpoint, [m])
        assert (response.status.code, response.status.message) == (
            pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed, "
            f"the expected type is {expected}, but actual type is {actual}",
        ), (t.kind, response)
    accepted = await raw_send(t.endpoint, [raw_message(fifo, "fifo", group="g")])
    assert accepted.status.code == pb.Code.OK, (t.kind, accepted)
    async with Admin(t.namesrv_addr) as admin:
        assert [m.body for m in await read_topic(admin, fifo)] == [b"fifo"]
        assert await read_topic(admin, normal) == []


async def test_raw_recall_message(grpc_target: GrpcTarget) -> None:
    """RecallMessage (the Python SDK 5.1.2 has no call for it; raw requests): a DELAY message's
    send entry carries the broker's recall handle; the recalled message is never delivered, the
    one beside it is; refusals (a bad handle, a NORMAL topic) have the Apache proxy's codes and
    messages."""
    t = grpc_target
    topic, _ = await prepare(t, "GrpcRecall", "DELAY")
    normal, _ = await prepare(t, "GrpcRecallNormal", "NORMAL")
    at = (int(time.time()) + 4) * 1000
    kept = await raw_send(t.endpoint, [raw_message(topic, "kept", deliver_at_ms=at)])
    gone = await raw_send(t.endpoint, [raw_message(topic, "gone", deliver_at_ms=at)])
    assert kept.entries[0].recall_handle and gone.entries[0].recall_handle, (t.kind, kept, gone)
    recalled = await raw_recall(t.endpoint, topic, gone.entries[0].recall_handle)
    assert (recalled.status.code, recalled.message_id) == (pb.Code.OK, gone.entries[0].message_id), (t.kind, recalled)
    prefix = "org.apache.rocketmq.proxy.common.ProxyException: "
    bad = await raw_recall(t.endpoint, topic, "x")
    assert (bad.status.code, bad.status.message) == (pb.Code.INTERNAL_SERVER_ERROR, prefix + "recall handle is invalid")
    wrong_type = await raw_recall(t.endpoint, normal, gone.entries[0].recall_handle)
    assert (wrong_type.status.code, wrong_type.status.message) == (
        pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        prefix + "TopicMessageType validate failed, the expected type is NORMAL, but actual type is DELAY",
    ), (t.kind, wrong_type)
    async with Admin(t.namesrv_addr) as admin:

        async def kept_arrived() -> bool:
            return any(m.body == b"kept" for m in await read_topic(admin, topic))

        await wait_until(kept_arrived, timeout=30, what="the kept DELAY message delivered")
        after = await raw_send(t.endpoint, [raw_message(topic, "after", deliver_at_ms=(int(time.time()) + 1) * 1000)])
        assert after.status.code == pb.Code.OK

        async def after_arrived() -> bool:
            return any(m.body == b"after" for m in await read_topic(admin, topic))

        await wait_until(after_arrived, timeout=30, what="a later DELAY message delivered")
        assert sorted(m.body for m in await read_topic(admin, topic)) == [b"after", b"kept"], t.kind


async def test_calls_apache_5_3_3_does_not_serve_answer_unimplemented(grpc_target: GrpcTarget) -> None:
    """PullMessage, UpdateOffset, GetOffset, QueryOffset, SyncLiteSubscription: UNIMPLEMENTED."""
    statuses = {name: await call_status(grpc_target.endpoint, name, request) for name, request in UNSERVED_CALLS}
    assert statuses == {name: grpc.StatusCode.UNIMPLEMENTED for name, _ in UNSERVED_CALLS}


class Recording(MessageListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[int]] = {}

    def consume(self, message: SdkMessage) -> ConsumeResult:
        with self.lock:
            self.seen.setdefault(message.body.decode(), []).append(message.delivery_attempt)
        return ConsumeResult.SUCCESS

    def snapshot(self) -> dict[str, list[int]]:
        with self.lock:
            return {k: list(v) for k, v in self.seen.items()}


async def test_python_push_consumer_consumes_all(grpc_target: GrpcTarget) -> None:
    t = grpc_target
    topic, group = await prepare(t, "GrpcPush", None)
    bodies = [f"p{i}" for i in range(8)]
    await asyncio.to_thread(send_all, t.endpoint, topic, [sdk_message(topic, b, tag="TagA") for b in bodies])
    listener = Recording()
    consumer = PushConsumer(config(t.endpoint), group, listener, {topic: FilterExpression("*")})
    await asyncio.to_thread(consumer.startup)
    try:
        await wait_until(lambda: len(listener.snapshot()) == len(bodies), timeout=60, what="every message consumed")
    finally:
        await asyncio.to_thread(consumer.shutdown)
    assert listener.snapshot() == {b: [1] for b in bodies}


# ------------------------------------------------------------------------------ the Java gRPC client


@dataclass
class JavaGrpcClient:
    """``tests/interop/java-grpc`` built against rocketmq-client-java ``version``."""

    version: str
    classpath: list[str]
    home: Path

    async def run(self, scenario: str, *args: str, timeout: float = 120.0) -> dict[str, object]:
        """Run ``io.rocketpipe.interop.grpc.<scenario> args``; its last ``{`` line, parsed."""
        cmd = [
            "java",
            "-Xms64m",
            "-Xmx192m",
            *JVM_OPTS[3:],
            *(f"-D{k}={v}" for k, v in _home_props(self.home).items()),
            "-Drocketmq.log.level=WARN",
            "-cp",
            os.pathsep.join(self.classpath),
            f"io.rocketpipe.interop.grpc.{scenario}",
            *args,
        ]
        return await run_java_json(cmd, self.home, scenario, f"java-grpc {scenario}", timeout)


def build_java_grpc(version: str) -> list[str]:
    """``mvn -q [-o] compile`` of tests/interop/java-grpc for client ``version``; the run classpath."""
    props = {"rocketmq.client.java.version": version}
    deps = resolve_classpath(version, JAVA_GRPC_PROJECT / "pom.xml", props=props)
    classes = JAVA_GRPC_PROJECT / "target" / f"client-{version}" / "classes"
    newest_source = max(p.stat().st_mtime for p in [*JAVA_GRPC_PROJECT.rglob("*.java"), JAVA_GRPC_PROJECT / "pom.xml"])
    stamp = classes / ".built"
    if stamp.exists() and stamp.stat().st_mtime >= newest_source:
        return [str(classes), *deps]
    errors = ""
    for offline in (True, False):
        cmd = ["mvn", "-B", "-q", *(["-o"] if offline else []), "-f", str(JAVA_GRPC_PROJECT / "pom.xml")]
        proc = subprocess.run(
            [*cmd, f"-Drocketmq.client.java.version={version}", "compile"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode == 0:
            stamp.touch()
            return [str(classes), *deps]
        errors = (proc.stdout + proc.stderr)[-4000:]
    raise ApacheUnavailableError(f"building {JAVA_GRPC_PROJECT} with rocketmq-client-java {version} failed:\n{errors}")


@pytest.fixture(scope="module")
def java_grpc(tmp_path_factory: pytest.TempPathFactory) -> JavaGrpcClient:
    home = tmp_path_factory.mktemp("java-grpc")
    prepare_home(home)
    t0 = time.monotonic()
    try:
        cp = build_java_grpc(JAVA_GRPC_CLIENT_VERSION)
    except ApacheUnavailableError as exc:
        pytest.fail(f"rocketmq-client-java {JAVA_GRPC_CLIENT_VERSION} unavailable: {exc}", pytrace=False)
    TIMINGS["java-grpc build"] = time.monotonic() - t0
    return JavaGrpcClient(JAVA_GRPC_CLIENT_VERSION, cp, home)


async def test_java_normal_send_and_simple_consumer_receive_ack(
    grpc_target: GrpcTarget, java_grpc: JavaGrpcClient
) -> None:
    """rocketmq-client-java's Producer and SimpleConsumer (``NormalScenario``)."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJava", None)
    result = await java_grpc.run("NormalScenario", t.endpoint, topic, group, "6")
    sent = result["sent"]
    received = result["received"]
    assert isinstance(sent, list) and isinstance(received, list)
    assert len(set(sent)) == 6
    assert sorted(r["body"] for r in received) == [f"m{i}" for i in range(6)]  # each once
    for r in received:
        i = int(r["body"][1:])
        assert r["id"] == sent[i]
        assert (r["topic"], r["tag"], r["keys"], r["attempt"]) == (topic, "TagA", f"k{i}", 1)
        assert r["properties"] == {"n": str(i)}, (t.kind, r["properties"])
    async with Admin(t.namesrv_addr) as admin:  # stored once each
        assert sorted(m.body.decode() for m in await read_topic(admin, topic)) == [f"m{i}" for i in range(6)]


def _deliveries(result: dict[str, object]) -> list[dict[str, Any]]:
    received = result["received"]
    assert isinstance(received, list)
    return received


async def test_java_fifo_message_groups_in_order(grpc_target: GrpcTarget, java_grpc: JavaGrpcClient) -> None:
    """rocketmq-client-java: FIFO messages of two message groups (``FifoScenario``) received in
    each group's send order by a SimpleConsumer of an orderly group."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJavaFifo", "FIFO", orderly=True)
    result = await java_grpc.run("FifoScenario", t.endpoint, topic, group)
    plan = [(g, f"{g}-{i}") for i in range(5) for g in ("ga", "gb")]
    sent = dict(zip([body for _, body in plan], result["sent"], strict=True))  # type: ignore[call-overload]
    got = _deliveries(result)
    assert sorted(r["body"] for r in got) == sorted(sent)  # each once
    for g in ("ga", "gb"):
        in_group = [r for r in got if r["group"] == g]
        assert [r["body"] for r in in_group] == [f"{g}-{i}" for i in range(5)]
        assert all(r["id"] == sent[r["body"]] and r["attempt"] == 1 for r in in_group)
        assert all(r["properties"] == {"__SHARDINGKEY": g} for r in in_group), (t.kind, in_group)


async def test_java_delay_message_not_delivered_before_its_time(
    grpc_target: GrpcTarget, java_grpc: JavaGrpcClient
) -> None:
    """rocketmq-client-java: a delay message (``DelayScenario``, 4 s) to a DELAY topic arrives no
    earlier than its delivery timestamp, with that timestamp."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJavaDelay", "DELAY")
    result = await java_grpc.run("DelayScenario", t.endpoint, topic, group, "4000")
    [r] = _deliveries(result)
    deliver_at = result["deliverAt"]
    assert isinstance(deliver_at, int) and isinstance(result["sentAt"], int)
    assert result["sentAt"] < deliver_at  # the check below means something
    assert (r["body"], r["id"], r["deliveryTimestamp"]) == ("later", result["id"], deliver_at)
    # whole seconds: Apache's timer wheel delivers at the second it rounds the time up to
    assert r["receivedAt"] >= deliver_at // 1000 * 1000, f"delivered {deliver_at - r['receivedAt']} ms early"
    assert r["receivedAt"] < deliver_at + 15_000
    assert r["properties"] == {}, (t.kind, r["properties"])


async def test_java_recall_message(grpc_target: GrpcTarget, java_grpc: JavaGrpcClient) -> None:
    """rocketmq-client-java: ``Producer.recallMessage`` (``RecallScenario``) with the recall
    handle of a delay message's receipt; the recalled message is never received, the one sent
    beside it and one 2 s later are."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJavaRecall", "DELAY")
    result = await java_grpc.run("RecallScenario", t.endpoint, topic, group, "4000")
    assert all(result[b]["hasHandle"] for b in ("kept", "gone", "after")), (t.kind, result)
    assert result["recalled"] == result["gone"]["id"]
    assert [(r["body"], r["id"]) for r in _deliveries(result)] == [
        ("kept", result["kept"]["id"]),
        ("after", result["after"]["id"]),
    ], t.kind


async def test_java_transaction_commit_visible_rollback_not(grpc_target: GrpcTarget, java_grpc: JavaGrpcClient) -> None:
    """rocketmq-client-java: transactions (``TransactionScenario``) committed → received, rolled
    back → never stored; no check-back (each transaction was ended at once)."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJavaTx", "TRANSACTION")
    result = await java_grpc.run("TransactionScenario", t.endpoint, topic, group)
    sent = dict(zip(["commit-1", "rollback-1", "commit-2"], result["sent"], strict=True))  # type: ignore[call-overload]
    got = _deliveries(result)
    assert sorted(r["body"] for r in got) == ["commit-1", "commit-2"]
    for r in got:
        assert r["id"] == sent[r["body"]]
        assert r["properties"] == {"__transactionId__": r["id"]}, (t.kind, r["properties"])
    assert result["checks"] == []
    async with Admin(t.namesrv_addr) as admin:
        assert sorted(m.body.decode() for m in await read_topic(admin, topic)) == ["commit-1", "commit-2"]


async def test_java_push_consumer_consumes_all(grpc_target: GrpcTarget, java_grpc: JavaGrpcClient) -> None:
    """rocketmq-client-java: a PushConsumer (``PushConsumerScenario``) consumes every message once."""
    t = grpc_target
    topic, group = await prepare(t, "GrpcJavaPush", None)
    result = await java_grpc.run("PushConsumerScenario", t.endpoint, topic, group, "8")
    assert isinstance(result["sent"], list) and len(set(result["sent"])) == 8
    assert result["attempts"] == {f"p{i}": [1] for i in range(8)}
