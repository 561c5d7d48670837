"""Client-side Prometheus metrics (L3): :class:`ClientMeter`, :class:`ClientCollector`, :func:`client_meter`.

Mirrors the client metrics of Apache RocketMQ's 5.x Java client (``rocketmq-clients``,
``org.apache.rocketmq.client.java.metrics``: ``HistogramEnum``, ``GaugeEnum``, ``MetricLabels``,
``InvocationStatus``, ``MessageMeterInterceptor``, and ``ProcessQueueGaugeObserver``): same
names, label names, label values and bucket boundaries. Java creates its histograms and gauges
without a unit, so an OpenTelemetry Prometheus exporter adds no unit suffix: the exposition names
are the instrument names (``rocketmq_send_cost_time_bucket``/``_sum``/``_count``,
``rocketmq_consumer_cached_messages``). Values are whole milliseconds, as Java records
``Duration.toMillis()``. The table is in ``docs/metrics.md`` ("Client metrics").

Samples:

======================================  =========  ==================================================
name                                    type       labels
======================================  =========  ==================================================
``rocketmq_send_cost_time``             histogram  ``topic``, ``client_id``, ``invocation_status``
``rocketmq_delivery_latency``           histogram  ``topic``, ``client_id``, ``consumer_group``
``rocketmq_await_time``                 histogram  ``topic``, ``client_id``, ``consumer_group``
``rocketmq_process_time``               histogram  same + ``invocation_status``
``rocketmq_consumer_cached_messages``   gauge      ``topic``, ``client_id``, ``consumer_group``
``rocketmq_consumer_cached_bytes``      gauge      same
======================================  =========  ==================================================

How it stays off the hot paths: a client with ``ClientConfig.metrics`` False has no meter
(``None``) and its send and consume paths test that one attribute. With a meter, each send RPC and
each listener call is one :meth:`ClientMeter.observe`-style call (a dict lookup, a bisect and
two additions), however many messages it carries: Java's per-message observations of one call
carry the same value, so one call adds ``n`` to the bucket and ``n * ms`` to the sum. The cached
gauges are read from the process queues at scrape time.

Registries: every client with ``metrics=True`` gets a :class:`ClientMeter` in
:class:`ClientCollector` of its registry (``ClientConfig.metrics_registry``, default
``prometheus_client.REGISTRY``); one collector is registered per registry, however many clients
use it. Series carry ``client_id``, so clients of one process do not collide (two clients with
the same id, e.g. sharing a runtime, have their samples added). :meth:`ClientMeter.close` (the
client's ``close()``) removes the client's series. A scrape runs on the HTTP server's thread; it
copies the rows (C-level copies under the GIL), so the event loop is never waited for.

Imports: ``prometheus_client`` and the standard library only.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .config import ClientConfig

__all__ = [
    "AWAIT_TIME_BUCKETS_MS",
    "DELIVERY_LATENCY_BUCKETS_MS",
    "PROCESS_TIME_BUCKETS_MS",
    "SEND_COST_TIME_BUCKETS_MS",
    "CachedSource",
    "ClientCollector",
    "ClientMeter",
    "client_meter",
]

#: ``HistogramEnum.SEND_COST_TIME`` bucket upper bounds, ms
SEND_COST_TIME_BUCKETS_MS: Final = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
#: ``HistogramEnum.DELIVERY_LATENCY`` bucket upper bounds, ms
DELIVERY_LATENCY_BUCKETS_MS: Final = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
#: ``HistogramEnum.AWAIT_TIME`` bucket upper bounds, ms
AWAIT_TIME_BUCKETS_MS: Final = (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)
#: ``HistogramEnum.PROCESS_TIME`` bucket upper bounds, ms
PROCESS_TIME_BUCKETS_MS: Final = (1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0)

#: ``InvocationStatus`` values
SUCCESS: Final = "success"
FAILURE: Final = "failure"

CachedSource = Callable[[], Iterable[tuple[str, str, int, int]]]
"""Called at scrape time (on the HTTP thread): ``(topic, consumer_group, messages, bytes)`` per
process queue; rows of one (topic, group) are added up (``ProcessQueueGaugeObserver``)."""

_Key = tuple[str, ...]


class _Rows:
    """One histogram's rows: label values (without ``client_id``) -> ``[sum_ms, count per bucket...]``.

    The last count is above every bound (``+Inf`` only).
    """

    __slots__ = ("bounds", "rows")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.rows: dict[_Key, list[int]] = {}

    def observe(self, key: _Key, ms: int, n: int) -> None:
        """Add ``n`` observations of ``ms`` milliseconds (``n >= 1``)."""
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0] * (len(self.bounds) + 2)
        row[0] += ms * n
        row[1 + bisect_left(self.bounds, ms)] += n


class ClientMeter:
    """The metrics of one client (producer or consumer); mirrors ``ClientMeterManager`` + ``MessageMeterInterceptor``.

    Made by :func:`client_meter`; the client calls the ``record_*`` methods on its event loop
    and :meth:`close` when it shuts down. Durations are seconds in, whole milliseconds
    recorded (truncated, as Java's ``Duration.toMillis()``).

    Attributes:
        client_id: the ``client_id`` label (``ClientConfig.client_id()`` of the runtime).
        send, delivery, await_, process: the histogram rows (see :class:`ClientCollector`).
        cached_sources: the push consumers' process-queue readers (:data:`CachedSource`).
    """

    __slots__ = ("_collector", "await_", "cached_sources", "client_id", "delivery", "process", "send")

    def __init__(self, client_id: str, collector: ClientCollector) -> None:
        self.client_id = client_id
        self._collector = collector
        self.send = _Rows(SEND_COST_TIME_BUCKETS_MS)
        self.delivery = _Rows(DELIVERY_LATENCY_BUCKETS_MS)
        self.await_ = _Rows(AWAIT_TIME_BUCKETS_MS)
        self.process = _Rows(PROCESS_TIME_BUCKETS_MS)
        self.cached_sources: list[CachedSource] = []

    def record_send(self, topic: str, elapsed_s: float, ok: bool, messages: int = 1) -> None:
        """One send RPC of ``messages`` messages took ``elapsed_s`` seconds (``rocketmq_send_cost_time``).

        ``ok`` False: the RPC raised (``invocation_status="failure"``). Java records every
        attempt, and every message of a batch, with the attempt's duration.
        """
        self.send.observe((topic, SUCCESS if ok else FAILURE), int(elapsed_s * 1000), messages)

    def record_delivery(self, topic: str, group: str, latency_ms: int) -> None:
        """A received batch's delivery latency, ms (``rocketmq_delivery_latency``); negative: ignored (as Java)."""
        if latency_ms >= 0:
            self.delivery.observe((topic, group), latency_ms, 1)

    def record_await(self, topic: str, group: str, waited_s: float) -> None:
        """A batch waited ``waited_s`` seconds in the client before its listener call (``rocketmq_await_time``)."""
        if waited_s >= 0:
            self.await_.observe((topic, group), int(waited_s * 1000), 1)

    def record_process(self, topic: str, group: str, elapsed_s: float, ok: int, failed: int) -> None:
        """A listener call took ``elapsed_s`` seconds for ``ok`` acknowledged and ``failed`` failed
        messages (``rocketmq_process_time``, one observation per message, as Java)."""
        ms = int(elapsed_s * 1000)
        if ok > 0:
            self.process.observe((topic, group, SUCCESS), ms, ok)
        if failed > 0:
            self.process.observe((topic, group, FAILURE), ms, failed)

    def add_cached_source(self, source: CachedSource) -> None:
        """Export ``source``'s process queues as the cached-messages/bytes gauges."""
        self.cached_sources.append(source)

    def close(self) -> None:
        """Stop exporting this client's series (idempotent)."""
        self._collector.remove(self)


def _add_histogram(fam: HistogramMetricFamily, values: list[str], bounds: Sequence[float], row: list[int]) -> None:
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip(bounds, row[1:], strict=False):
        running += n
        buckets.append((repr(bound), float(running)))
    running += row[-1]
    buckets.append(("+Inf", float(running)))
    fam.add_metric(values, buckets, float(row[0]))


def _merge(into: dict[_Key, list[int]], key: _Key, row: list[int]) -> None:
    old = into.get(key)
    if old is None:
        into[key] = list(row)
    else:
        for i, v in enumerate(row):
            old[i] += v


_HISTOGRAMS: Final = (
    ("rocketmq_send_cost_time", "Send cost time of messages, ms", ("topic", "client_id", "invocation_status"), "send"),
    ("rocketmq_delivery_latency", "Delivery latency of received messages, ms", ("topic", "client_id", "consumer_group"), "delivery"),
    ("rocketmq_await_time", "Time messages waited in the client before their listener call, ms", ("topic", "client_id", "consumer_group"), "await_"),
    (
        "rocketmq_process_time",
        "Listener time of consumed messages, ms",
        ("topic", "client_id", "consumer_group", "invocation_status"),
        "process",
    ),
)  # fmt: skip


class ClientCollector(Collector):
    """The client metrics of every :class:`ClientMeter` of one registry (one collector per registry).

    Label values: ``client_id`` inserted after ``topic``; ``invocation_status`` ``success`` or
    ``failure``. A histogram has no series until something was observed; the gauges have one
    series per (topic, group) of the live push consumers' process queues.
    """

    def __init__(self) -> None:
        self._meters: list[ClientMeter] = []
        self._lock = threading.Lock()

    def add(self, client_id: str) -> ClientMeter:
        """A new meter for the client ``client_id``, exported until its :meth:`ClientMeter.close`."""
        meter = ClientMeter(client_id, self)
        with self._lock:
            self._meters.append(meter)
        return meter

    def remove(self, meter: ClientMeter) -> None:
        """Stop exporting ``meter`` (idempotent)."""
        with self._lock:
            if meter in self._meters:
                self._meters.remove(meter)

    @property
    def meters(self) -> list[ClientMeter]:
        """The live meters (a copy)."""
        with self._lock:
            return list(self._meters)

    def describe(self) -> Iterable[Metric]:
        """Nothing: the names are known only when collected (keeps registration cheap)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The four histograms and two gauges, merged over the meters by label values."""
        meters = self.meters
        for name, doc, labels, attr in _HISTOGRAMS:
            merged: dict[_Key, list[int]] = {}
            bounds: Sequence[float] = ()
            for m in meters:
                rows: _Rows = getattr(m, attr)
                bounds = rows.bounds
                for key, row in list(rows.rows.items()):
                    _merge(merged, (key[0], m.client_id, *key[1:]), row)
            fam = HistogramMetricFamily(name, doc, labels=list(labels))
            for key, row in merged.items():
                _add_histogram(fam, list(key), bounds, row)
            yield fam
        yield from self._cached(meters)

    @staticmethod
    def _cached(meters: list[ClientMeter]) -> Iterator[Metric]:
        counts: dict[_Key, float] = {}
        sizes: dict[_Key, float] = {}
        for m in meters:
            for source in list(m.cached_sources):
                for topic, group, n, size in source():
                    key: _Key = (topic, m.client_id, group)
                    counts[key] = counts.get(key, 0.0) + n
                    sizes[key] = sizes.get(key, 0.0) + size
        labels = ["topic", "client_id", "consumer_group"]
        msgs = GaugeMetricFamily(
            "rocketmq_consumer_cached_messages", "Messages cached by push consumers", labels=labels
        )
        data = GaugeMetricFamily("rocketmq_consumer_cached_bytes", "Body bytes cached by push consumers", labels=labels)
        for key, value in counts.items():
            msgs.add_metric(list(key), value)
            data.add_metric(list(key), sizes[key])
        yield msgs
        yield data


_collectors: weakref.WeakKeyDictionary[CollectorRegistry, ClientCollector] = weakref.WeakKeyDictionary()
_collectors_lock = threading.Lock()


def collector_for(registry: CollectorRegistry) -> ClientCollector:
    """The :class:`ClientCollector` of ``registry``, registered there on first use."""
    with _collectors_lock:
        collector = _collectors.get(registry)
        if collector is None:
            collector = _collectors[registry] = ClientCollector()
            registry.register(collector)
        return collector


def client_meter(config: ClientConfig, client_id: str) -> ClientMeter | None:
    """A new meter of the client ``client_id`` when ``config.metrics`` is on, else None.

    Its samples go to ``config.metrics_registry`` (default ``prometheus_client.REGISTRY``).
    Nothing is registered while metrics are off.
    """
    if not config.metrics:
        return None
    registry = config.metrics_registry if config.metrics_registry is not None else REGISTRY
    return collector_for(registry).add(client_id)
