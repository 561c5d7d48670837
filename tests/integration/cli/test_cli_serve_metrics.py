"""``rocketpipe serve --metrics-port``: the broker's and name server's Prometheus metrics over HTTP."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from rocketpipe.client import SyncProducer
from rocketpipe.protocol.message import Message
from rocketpipe.testing.serve_process import serve_process
from waiting import wait_until_sync


def _samples(addr: str) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def _total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == w for k, w in labels.items()))


def test_serve_metrics_port_exports_sends_and_rpc_latency(tmp_path: Path) -> None:
    args = ("--metrics-port", "0", "--console-port", "0")
    with serve_process(tmp_path / "store", extra_args=args) as served:
        assert served.metrics_addr is not None and served.metrics_addr.startswith("127.0.0.1:")
        producer = SyncProducer("metrics-cli-pg", namesrv_addr=served.namesrv_addr)
        producer.start()
        try:
            for i in range(5):
                producer.send(Message.build("MetricsCli", b"m%d" % i))
        finally:
            producer.close()

        def counted() -> bool:
            s = _samples(served.metrics_addr or "")
            return _total(s, "rocketmq_messages_in_total", topic="MetricsCli") == 5

        wait_until_sync(counted, timeout=30, what="5 messages in on the endpoint")
        s = _samples(served.metrics_addr)
        # the router's observer times each answered send; Java labels request codes by lower-case name
        sends = _total(s, "rocketmq_rpc_latency_milliseconds_count", request_code="send_message_v2", result="success")
        assert sends >= 5
        assert _total(s, "rocketmq_namesrv_live_brokers", node_type="namesrv") == 1
        # --console-port: the web console of this cluster, read-only by default
        assert served.console_url is not None
        with urllib.request.urlopen(f"{served.console_url.rstrip('/')}/topics", timeout=30) as resp:
            page = resp.read().decode()
        assert resp.status == 200 and "MetricsCli" in page
