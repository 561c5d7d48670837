"""The broker's Prometheus collector against a broker's tables (store on tmp_path, no sockets).

Facts from Apache RocketMQ 5.3.3: metric and label names (``BrokerMetricsConstant``,
``DefaultStoreMetricsConstant``, ``RemotingMetricsConstant``), bucket bounds (``registerMetricsView``,
``RemotingMetricsManager.getMetricsView``), ``MQVersion`` ordinals, and the exposition names
OpenTelemetry Java 1.29's Prometheus exporter gives them (unit suffix, ``_total``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.broker.groups import ClientChannel
from rocketpipe.broker.metrics import (
    RPC_LATENCY_BUCKETS_MS,
    BrokerCollector,
    RpcLatency,
    message_type,
    run_on_loop,
    version_desc,
)
from rocketpipe.broker.stats import MESSAGE_SIZE_BUCKETS, PUT_ROW_BUCKETS, BrokerStats
from rocketpipe.broker.topics import TopicConfig
from rocketpipe.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketpipe.store import MessageInner
from rocketpipe.testing import FakeClock

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000_000)


def _broker(root: Path, clock: FakeClock, name: str = "broker-a") -> Broker:
    b = Broker(
        BrokerConfig(store_dir=root, broker_name=name, broker_cluster_name="C1", mapped_file_size_commit_log=1 << 20),
        clock=clock,
    )
    b.topics.create_system_topics(clock.now_ms())
    b.store.load()
    return b


@pytest.fixture
def broker(tmp_path: Path, clock: FakeClock) -> Iterator[Broker]:
    b = _broker(tmp_path, clock)
    yield b
    b.store.close()


def scrape(registry: CollectorRegistry) -> Samples:
    """Every sample of the text exposition: (name, labels) -> value."""
    out: Samples = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def pick(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {lab: v for (n, lab), v in samples.items() if n == name and want <= lab}


def one(samples: Samples, name: str, **labels: str) -> float:
    got = pick(samples, name, **labels)
    assert len(got) == 1, (name, labels, got)
    return next(iter(got.values()))


def put(b: Broker, topic: str, queue_id: int, body: bytes, **kw: object) -> int:
    res = b.put_message(MessageInner(topic=topic, queue_id=queue_id, body=body), **kw)  # type: ignore[arg-type]
    assert res.is_ok
    return res.wrote_bytes


def registry_of(b: Broker) -> tuple[CollectorRegistry, BrokerCollector]:
    reg = CollectorRegistry()
    col = BrokerCollector(b)
    reg.register(col)
    return reg, col


# ---------------------------------------------------------------------- pure parts


def test_version_desc_follows_mqversion_ordinals() -> None:
    assert version_desc(0) == "v3_0_0_snapshot"
    assert version_desc(15) == "v3_0_0_final"
    assert version_desc(16) == "v3_0_1_snapshot"
    assert version_desc(213) == "v4_0_0"
    assert version_desc(409) == "v4_9_8"
    assert version_desc(479) == "v5_3_3"
    assert version_desc(612) == version_desc(99_999) == "higher_version"


def test_message_type_is_told_by_the_topic_stored_into() -> None:
    assert message_type("Orders", True) == "normal"
    assert message_type("Orders", False) == "delay"  # a scheduled delivery
    assert message_type("SCHEDULE_TOPIC_XXXX", True) == "delay"
    assert message_type("rmq_sys_wheel_timer", True) == "delay"
    assert message_type("RMQ_SYS_TRANS_HALF_TOPIC", True) == "transaction"


def test_stats_put_row_observes_one_average_size_per_put_in_javas_buckets() -> None:
    assert MESSAGE_SIZE_BUCKETS == (1024, 4096, 524288, 1048576, 2097152, 4194304)
    st = BrokerStats(0)
    st.on_put("T", 3, 3000)  # average 1000: <= 1 KiB
    st.on_put("T", 1, 1024)  # le is inclusive
    st.on_put("T", 1, 1025)  # (1 KiB, 4 KiB]
    st.on_put("T", 2, 10 * 1024 * 1024)  # 5 MiB average: above every bound
    row = st.topic_puts[("T", True)]
    assert row[:PUT_ROW_BUCKETS] == [7, 3000 + 1024 + 1025 + 10 * 1024 * 1024, 1000 + 1024 + 1025 + 5 * 1024 * 1024]
    assert row[PUT_ROW_BUCKETS:] == [2, 1, 0, 0, 0, 0, 1]


def test_stats_get_row_keeps_group_and_bytes_only_when_given() -> None:
    st = BrokerStats(0)
    st.on_get("T", 4)
    st.on_get("T", 2, group="g", size=300)
    st.on_get("T", 1, group="g", size=50)
    assert st.topic_gets == {("T", ""): [4, -1], ("T", "g"): [3, 350]}
    assert st.get_transferred == 7


def test_rpc_latency_records_whole_milliseconds_in_javas_buckets() -> None:
    assert RPC_LATENCY_BUCKETS_MS == (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)
    rpc = RpcLatency()
    for s in (0.0004, 0.0019, 0.003, 0.0031, 5.0):  # 0, 1, 3, 3, 5000 ms
        rpc.observe(int(RequestCode.SEND_MESSAGE_V2), int(ResponseCode.SUCCESS), s)
    rpc.observe(int(RequestCode.HEART_BEAT), int(ResponseCode.SYSTEM_ERROR), 0.05, True)
    rpc.observe(123456, 777, 0.0)
    fam = rpc.family(["C1", "broker", "broker-a"])
    assert fam.name == "rocketmq_rpc_latency_milliseconds"
    send = {
        s.labels["le"]: s.value
        for s in fam.samples
        if s.name.endswith("_bucket") and s.labels["request_code"] == "send_message_v2"
    }
    assert send == {
        "1.0": 2,
        "3.0": 4,
        "5.0": 4,
        "7.0": 4,
        "10.0": 4,
        "100.0": 4,
        "1000.0": 4,
        "2000.0": 4,
        "3000.0": 4,
        "+Inf": 5,
    }
    sums = {
        (s.labels["request_code"], s.labels["response_code"], s.labels["result"]): s.value
        for s in fam.samples
        if s.name.endswith("_sum")
    }
    assert sums == {
        ("send_message_v2", "success", "success"): 0 + 1 + 3 + 3 + 5000,
        ("heart_beat", "system_error", "oneway"): 50,
        ("123456", "777", "success"): 0,
    }


# ---------------------------------------------------------------------- the collector


def test_collector_exposes_javas_prometheus_names(broker: Broker) -> None:
    reg, col = registry_of(broker)
    put(broker, "T", 0, b"x")
    col.rpc_latency.observe(int(RequestCode.SEND_MESSAGE), 0, 0.001)
    names = {fam.name for fam in text_string_to_metric_families(generate_latest(reg).decode())}
    text = generate_latest(reg).decode()
    for expected in (
        "rocketmq_messages_in_total",
        "rocketmq_messages_out_total",
        "rocketmq_throughput_in_total",
        "rocketmq_throughput_out_total",
        "rocketmq_message_size_bucket",
        "rocketmq_consumer_lag_messages",
        "rocketmq_consumer_lag_latency_milliseconds",
        "rocketmq_producer_connections",
        "rocketmq_consumer_connections",
        "rocketmq_topic_number",
        "rocketmq_consumer_group_number",
        "rocketmq_broker_permission",
        "rocketmq_storage_size_bytes",
        "rocketmq_storage_flush_behind_bytes",
        "rocketmq_storage_dispatch_behind_bytes",
        "rocketmq_storage_message_reserve_time_milliseconds",
        "rocketmq_rpc_latency_milliseconds_bucket",
    ):
        assert f"# TYPE {expected.removesuffix('_bucket')} " in text, expected
    assert {"rocketmq_messages_in", "rocketmq_message_size", "rocketmq_rpc_latency_milliseconds"} <= names
    assert "_created" not in text  # no per-series creation gauges


def test_collector_counts_puts_by_topic_type_and_system_flag(broker: Broker) -> None:
    reg, _ = registry_of(broker)
    sizes = [put(broker, "Orders", q, b"o" * n) for q, n in ((0, 10), (1, 2000), (0, 30))]
    sched = put(broker, "SCHEDULE_TOPIC_XXXX", 2, b"d")
    delivered = put(broker, "Orders", 3, b"late", counted=False)
    put(broker, "%RETRY%cg", 0, b"r")  # retry and DLQ topics are not counted (SendMessageProcessor)
    put(broker, "%DLQ%cg", 0, b"q")
    s = scrape(reg)
    node = {"cluster": "C1", "node_type": "broker", "node_id": "broker-a"}
    normal = {**node, "topic": "Orders", "message_type": "normal", "is_system": "false"}
    assert one(s, "rocketmq_messages_in_total", **normal) == 3
    assert one(s, "rocketmq_throughput_in_total", **normal) == sum(sizes)
    assert one(s, "rocketmq_message_size_count", **normal) == 3
    assert one(s, "rocketmq_message_size_sum", **normal) == sum(sizes)
    assert one(s, "rocketmq_message_size_bucket", le="1024.0", **normal) == 2
    assert one(s, "rocketmq_message_size_bucket", le="4096.0", **normal) == 3
    late = {**node, "topic": "Orders", "message_type": "delay", "is_system": "false"}
    assert one(s, "rocketmq_throughput_in_total", **late) == delivered
    parked = {**node, "topic": "SCHEDULE_TOPIC_XXXX", "message_type": "delay", "is_system": "true"}
    assert one(s, "rocketmq_throughput_in_total", **parked) == sched
    topics = {dict(lab)["topic"] for lab in pick(s, "rocketmq_messages_in_total")}
    assert topics == {"Orders", "SCHEDULE_TOPIC_XXXX"}


def test_collector_counts_gets_by_topic_and_group(broker: Broker) -> None:
    reg, _ = registry_of(broker)
    broker.stats.on_get("Orders", 5, group="cg", size=500)
    broker.stats.on_get("Orders", 1, group="CID_RMQ_SYS_x", size=7)
    broker.stats.on_get("%RETRY%cg", 2, group="cg", size=9)
    broker.stats.on_get("Orders", 3)  # a caller that gives neither group nor size
    s = scrape(reg)
    assert one(s, "rocketmq_messages_out_total", topic="Orders", consumer_group="cg", is_system="false") == 5
    assert one(s, "rocketmq_throughput_out_total", topic="Orders", consumer_group="cg") == 500
    assert one(s, "rocketmq_messages_out_total", consumer_group="CID_RMQ_SYS_x", is_system="true") == 1
    assert one(s, "rocketmq_messages_out_total", topic="Orders", consumer_group="") == 3
    assert pick(s, "rocketmq_throughput_out_total", consumer_group="") == {}  # bytes unknown: no sample
    assert pick(s, "rocketmq_messages_out_total", topic="%RETRY%cg") == {}


def test_collector_lag_per_group_and_topic(broker: Broker, clock: FakeClock) -> None:
    reg, col = registry_of(broker)
    broker.topics.put(TopicConfig("Lag", 4, 4), clock.now_ms())
    first_ts: dict[int, list[int]] = {}
    for i in range(5):
        for q in range(4):
            first_ts.setdefault(q, []).append(clock.now_ms())
            put(broker, "Lag", q, f"m{i}".encode())
            clock.advance(1.0)
    broker.offsets.commit("g1", "Lag", 0, 2)  # 3 behind, oldest unconsumed: queue 0 offset 2
    broker.offsets.commit("g1", "Lag", 1, 5)  # caught up
    broker.offsets.commit("g1", "Lag", 3, 4)  # 1 behind
    # queue 2 has no commit: counted as caught up (ConsumerLagCalculator)
    broker.offsets.commit("g2", "Lag", 1, 0)  # 5 behind
    broker.offsets.commit("g2", "%RETRY%g2", 0, 0)  # retry topics are skipped
    broker.offsets.commit("g3", "Gone", 0, 0)  # a topic the broker does not have
    s = scrape(reg)
    assert one(s, "rocketmq_consumer_lag_messages", consumer_group="g1", topic="Lag", is_retry="false") == 4
    assert one(s, "rocketmq_consumer_lag_messages", consumer_group="g2", topic="Lag") == 5
    now = clock.now_ms()
    oldest_g1 = min(first_ts[0][2], first_ts[3][4])
    assert one(s, "rocketmq_consumer_lag_latency_milliseconds", consumer_group="g1") == now - oldest_g1
    assert one(s, "rocketmq_consumer_lag_latency_milliseconds", consumer_group="g2") == now - first_ts[1][0]
    assert {dict(lab)["topic"] for lab in pick(s, "rocketmq_consumer_lag_messages")} == {"Lag"}
    assert col.lag_rows() == [("g1", "Lag", 4, oldest_g1), ("g2", "Lag", 5, first_ts[1][0])]


def test_collector_connections_and_table_sizes(broker: Broker, clock: FakeClock) -> None:
    reg, _ = registry_of(broker)
    now = clock.now_ms()
    py, java = int(LanguageCode.PYTHON), int(LanguageCode.JAVA)
    broker.clients.register_producer("pg", ClientChannel("p1", "c1", py, 409, now))
    broker.clients.register_producer("pg2", ClientChannel("p2", "c2", py, 409, now))
    broker.clients.register_producer("pg", ClientChannel("p3", "c3", java, 479, now))
    for ch, mode in (("c1", "CONSUME_PASSIVELY"), ("c2", "CONSUME_PASSIVELY")):
        broker.clients.register_consumer(
            "cg",
            ClientChannel(ch, ch, py, 409, now),
            consume_type=mode,
            message_model="CLUSTERING",
            consume_from_where="CONSUME_FROM_LAST_OFFSET",
            subscriptions=[],
        )
    broker.clients.register_consumer(
        "CID_RMQ_SYS_TRACE",
        ClientChannel("c9", "c9", java, 479, now),
        consume_type="CONSUME_ACTIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscriptions=[],
    )
    broker.groups_config.find("cg")
    broker.topics.put(TopicConfig("Extra", 1, 1), now)
    s = scrape(reg)
    assert one(s, "rocketmq_producer_connections", language="python", version="v4_9_8", protocol_type="remoting") == 2
    assert one(s, "rocketmq_producer_connections", language="java", version="v5_3_3") == 1
    labels = {"consumer_group": "cg", "language": "python", "version": "v4_9_8", "consume_mode": "push"}
    assert one(s, "rocketmq_consumer_connections", is_system="false", **labels) == 2
    assert (
        one(
            s,
            "rocketmq_consumer_connections",
            consumer_group="CID_RMQ_SYS_TRACE",
            consume_mode="pull",
            is_system="true",
        )
        == 1
    )
    assert one(s, "rocketmq_topic_number") == len(broker.topics.topics)
    assert "Extra" in broker.topics.topics
    assert one(s, "rocketmq_consumer_group_number") == 1
    assert one(s, "rocketmq_broker_permission") == 6


def test_collector_store_gauges(broker: Broker, clock: FakeClock) -> None:
    reg, _ = registry_of(broker)
    s = scrape(reg)
    assert pick(s, "rocketmq_storage_message_reserve_time_milliseconds") == {}  # empty commit log
    assert one(s, "rocketmq_storage_size_bytes", storage_type="local", storage_medium="disk") > 0
    first = clock.now_ms()
    written = put(broker, "T", 0, b"a" * 100) + put(broker, "T", 0, b"b")
    clock.advance(42.0)
    s = scrape(reg)
    assert one(s, "rocketmq_storage_flush_behind_bytes", storage_type="local") == written
    assert one(s, "rocketmq_storage_dispatch_behind_bytes") == 0
    assert one(s, "rocketmq_storage_message_reserve_time_milliseconds") == clock.now_ms() - first
    broker.store.flush()
    assert one(scrape(reg), "rocketmq_storage_flush_behind_bytes") == 0


def test_two_brokers_in_one_process_have_separate_registries(tmp_path: Path, clock: FakeClock) -> None:
    a, b = _broker(tmp_path / "a", clock, "broker-a"), _broker(tmp_path / "b", clock, "broker-b")
    try:
        put(a, "T", 0, b"1")
        put(b, "T", 0, b"1")
        put(b, "T", 0, b"2")
        (ra, _), (rb, _) = registry_of(a), registry_of(b)
        sa, sb = scrape(ra), scrape(rb)
        assert {dict(lab)["node_id"] for (_, lab) in sa} == {"broker-a"}
        assert one(sa, "rocketmq_messages_in_total", topic="T") == 1
        assert one(sb, "rocketmq_messages_in_total", topic="T", node_id="broker-b") == 2
    finally:
        a.store.close()
        b.store.close()


# ---------------------------------------------------------------------- the loop hop


async def test_snapshot_runs_on_the_owning_loop_when_scraped_from_another_thread() -> None:
    loop = asyncio.get_running_loop()
    seen: list[int] = []

    def fn() -> int:
        seen.append(threading.get_ident())
        return 7

    assert run_on_loop(loop, fn, 5.0) == 7  # on the loop's own thread: runs at once, no deadlock
    assert await asyncio.to_thread(run_on_loop, loop, fn, 5.0) == 7
    assert seen == [threading.get_ident(), threading.get_ident()]


def test_snapshot_gives_up_when_the_loop_is_busy() -> None:
    loop = asyncio.new_event_loop()
    busy, release, idle = threading.Event(), threading.Event(), threading.Event()
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    ran: list[int] = []

    def snapshot() -> int:
        ran.append(1)
        return 1

    def block() -> None:
        busy.set()
        release.wait(10.0)

    try:
        loop.call_soon_threadsafe(block)
        assert busy.wait(5.0)
        assert run_on_loop(loop, snapshot, 0.05) is None  # the loop is stuck: the scrape gives up
        release.set()
        loop.call_soon_threadsafe(idle.set)
        assert idle.wait(5.0)
        assert ran == []  # the abandoned snapshot was cancelled, never run late
    finally:
        release.set()
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5.0)
        loop.close()


def test_snapshot_runs_in_place_without_a_running_loop() -> None:
    assert run_on_loop(None, lambda: "x", 0.01) == "x"
    loop = asyncio.new_event_loop()
    try:
        assert run_on_loop(loop, lambda: "y", 0.01) == "y"
    finally:
        loop.close()
