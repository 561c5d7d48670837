"""Client metrics without a broker: registration, labels, buckets, merging, and metrics=False."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rocketpipe import ClientConfig, InvalidArgumentError
from rocketpipe.client.metrics import ClientCollector, client_meter, collector_for

NAMESRV = "127.0.0.1:9876"


def samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def client_collectors(registry: CollectorRegistry) -> list[object]:
    return [c for c in registry._collector_to_names if isinstance(c, ClientCollector)]


def test_metrics_off_registers_nothing() -> None:
    registry = CollectorRegistry()
    before = set(REGISTRY._collector_to_names)
    assert client_meter(ClientConfig(NAMESRV), "c1") is None
    assert client_meter(ClientConfig(NAMESRV, metrics_registry=registry), "c1") is None
    assert list(registry.collect()) == []
    assert set(REGISTRY._collector_to_names) == before


def test_default_registry_is_the_global_one() -> None:
    meter = client_meter(ClientConfig(NAMESRV, metrics=True), "global-client")
    assert meter is not None
    try:
        meter.record_send("T", 0.002, True)
        assert (
            REGISTRY.get_sample_value(
                "rocketmq_send_cost_time_count",
                {"topic": "T", "client_id": "global-client", "invocation_status": "success"},
            )
            == 1
        )
    finally:
        meter.close()
    assert (
        REGISTRY.get_sample_value(
            "rocketmq_send_cost_time_count",
            {"topic": "T", "client_id": "global-client", "invocation_status": "success"},
        )
        is None
    )


def test_two_clients_one_collector_separate_series() -> None:
    registry = CollectorRegistry()
    cfg = ClientConfig(NAMESRV, metrics=True, metrics_registry=registry)
    a, b = client_meter(cfg, "a"), client_meter(cfg, "b")
    assert a is not None and b is not None
    assert client_collectors(registry) == [collector_for(registry)]  # registered once
    a.record_send("T", 0.0004, True)  # 0 ms: bucket le=1
    b.record_send("T", 0.0071, True, messages=3)  # a batch of 3: 7 ms each
    b.record_send("T", 0.6, False)  # above every bound
    s = samples(registry)
    ok = {"topic": "T", "invocation_status": "success"}
    assert s[("rocketmq_send_cost_time_count", frozenset({**ok, "client_id": "a"}.items()))] == 1
    assert s[("rocketmq_send_cost_time_bucket", frozenset({**ok, "client_id": "a", "le": "1.0"}.items()))] == 1
    lab_b = {**ok, "client_id": "b"}
    assert s[("rocketmq_send_cost_time_bucket", frozenset({**lab_b, "le": "5.0"}.items()))] == 0
    assert s[("rocketmq_send_cost_time_bucket", frozenset({**lab_b, "le": "10.0"}.items()))] == 3
    assert s[("rocketmq_send_cost_time_sum", frozenset(lab_b.items()))] == 21
    fail = {"topic": "T", "invocation_status": "failure", "client_id": "b"}
    assert s[("rocketmq_send_cost_time_bucket", frozenset({**fail, "le": "500.0"}.items()))] == 0
    assert s[("rocketmq_send_cost_time_bucket", frozenset({**fail, "le": "+Inf"}.items()))] == 1
    b.close()
    b.close()  # idempotent
    assert {dict(lab)["client_id"] for (n, lab) in samples(registry) if n == "rocketmq_send_cost_time_count"} == {"a"}


def test_same_client_id_is_added_up_and_consumer_series() -> None:
    registry = CollectorRegistry()
    cfg = ClientConfig(NAMESRV, metrics=True, metrics_registry=registry)
    a, a2 = client_meter(cfg, "same"), client_meter(cfg, "same")
    assert a is not None and a2 is not None
    a.record_process("T", "g", 0.02, ok=2, failed=1)
    a2.record_process("T", "g", 0.02, ok=1, failed=0)
    a.record_await("T", "g", 0.003)
    a.record_delivery("T", "g", -5)  # negative (clock skew): ignored, as Java
    a.record_delivery("T", "g", 12)
    a.add_cached_source(lambda: [("T", "g", 3, 30), ("T", "g", 2, 20)])
    a2.add_cached_source(lambda: [("T", "g", 1, 10)])
    s = samples(registry)
    base = {"topic": "T", "client_id": "same", "consumer_group": "g"}
    assert s[("rocketmq_process_time_count", frozenset({**base, "invocation_status": "success"}.items()))] == 3
    assert s[("rocketmq_process_time_count", frozenset({**base, "invocation_status": "failure"}.items()))] == 1
    assert s[("rocketmq_process_time_sum", frozenset({**base, "invocation_status": "success"}.items()))] == 60
    assert s[("rocketmq_await_time_bucket", frozenset({**base, "le": "5.0"}.items()))] == 1
    assert s[("rocketmq_delivery_latency_count", frozenset(base.items()))] == 1
    assert s[("rocketmq_delivery_latency_bucket", frozenset({**base, "le": "10.0"}.items()))] == 0
    assert s[("rocketmq_delivery_latency_bucket", frozenset({**base, "le": "20.0"}.items()))] == 1
    assert s[("rocketmq_consumer_cached_messages", frozenset(base.items()))] == 6
    assert s[("rocketmq_consumer_cached_bytes", frozenset(base.items()))] == 60


def test_exposition_names_have_no_unit_suffix() -> None:
    registry = CollectorRegistry()
    meter = client_meter(ClientConfig(NAMESRV, metrics=True, metrics_registry=registry), "c")
    assert meter is not None
    meter.record_send("T", 0.001, True)
    text = generate_latest(registry).decode()
    assert 'rocketmq_send_cost_time_bucket{client_id="c",invocation_status="success",le="1.0",topic="T"} 1.0' in text
    assert "# TYPE rocketmq_send_cost_time histogram" in text
    assert "# TYPE rocketmq_consumer_cached_messages gauge" in text


def test_bad_registry_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="metrics_registry"):
        ClientConfig(NAMESRV, metrics=True, metrics_registry=object())  # type: ignore[arg-type]
