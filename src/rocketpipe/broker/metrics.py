"""Prometheus metrics of the broker (L3): :class:`BrokerCollector`, :class:`RpcLatency`, :class:`MetricsServer`.

Mirrors Apache RocketMQ 5.x's ``BrokerMetricsManager`` (with ``ConsumerLagCalculator``),
``DefaultStoreMetricsManager`` and ``RemotingMetricsManager``: same metric names, label names
and label values, bucket boundaries as Java's views. Java exports them through OpenTelemetry;
with ``metricsExporterType=PROM`` its Prometheus exporter (OpenTelemetry Java 1.29) appends the
unit to the name (``milliseconds``, ``bytes``) unless the name already holds it, and ``_total``
to counters. The names here are those exposition names, e.g. ``rocketmq_consumer_lag_latency``
(unit milliseconds) is scraped as ``rocketmq_consumer_lag_latency_milliseconds``. The full table
is ``docs/metrics.md``.

How it stays off the hot paths: :class:`BrokerCollector` builds every sample at scrape time from
state the broker keeps anyway (the topic, group, offset and client tables, the store's offsets)
and from the per-batch rows of :class:`~rocketpipe.broker.stats.BrokerStats`. A scrape runs on
the HTTP server's thread; the broker's tables belong to its event-loop thread, so the collector
hands the snapshot to that loop (``call_soon_threadsafe``) and waits for it; only ``statvfs``
runs on the scrape thread.

Each broker gets its own collector, registered in a registry of the caller's (never the
process-global ``prometheus_client.REGISTRY``), so two brokers in one process do not collide::

    registry = CollectorRegistry()
    registry.register(BrokerCollector(broker))
    server = MetricsServer("0.0.0.0", 5557, registry)
    port = server.start()
    ...
    server.close()

Imports: ``prometheus_client``, :mod:`rocketpipe.protocol`, :mod:`.context` (typing), :mod:`.stats`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ..protocol import sysflag as sf
from ..protocol.codes import LanguageCode, RequestCode, ResponseCode
from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, TIMER_TOPIC
from .stats import MESSAGE_SIZE_BUCKETS, PUT_ROW_BUCKETS, is_validator_system_topic

if TYPE_CHECKING:
    from .context import BrokerContext

__all__ = [
    "RPC_LATENCY_BUCKETS_MS",
    "BrokerCollector",
    "MetricsServer",
    "RpcLatency",
    "version_desc",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: ``RemotingMetricsManager.getMetricsView``: ``rocketmq_rpc_latency`` bucket upper bounds, ms
RPC_LATENCY_BUCKETS_MS: Final = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)
#: how long a scrape waits for the broker's event loop to take the snapshot, seconds
SNAPSHOT_TIMEOUT_S: Final = 5.0

#: ``BrokerMetricsConstant`` label names and values
LABEL_CLUSTER: Final = "cluster"
LABEL_NODE_TYPE: Final = "node_type"
LABEL_NODE_ID: Final = "node_id"
NODE_TYPE_BROKER: Final = "broker"
COMMON_LABELS: Final = (LABEL_CLUSTER, LABEL_NODE_TYPE, LABEL_NODE_ID)
#: ``DefaultStoreMetricsConstant``: the store gauges carry these two more
STORE_LABELS: Final = ("storage_type", "storage_medium")
STORE_LABEL_VALUES: Final = ("local", "disk")
#: ``RemotingMetricsConstant.PROTOCOL_TYPE_REMOTING``
PROTOCOL_TYPE_REMOTING: Final = "remoting"
#: ``MixAll.CID_RMQ_SYS_PREFIX``
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
#: ``ConsumeType.getTypeCN()`` lower-cased, by the heartbeat's ``consumeType``
CONSUME_MODES: Final = {"CONSUME_ACTIVELY": "pull", "CONSUME_PASSIVELY": "push", "CONSUME_POP": "pop"}
#: topics whose puts are delayed messages (``TopicMessageType.DELAY``)
_DELAY_TOPICS: Final = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC})
#: ``TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC``: its puts are ``TopicMessageType.TRANSACTION``
_TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"

# ``MQVersion.Version``: 16 names of 3.0.0's pre-releases, then SNAPSHOT + release of every
# version from 3.0.1 to 5.9.9, then HIGHER_VERSION (613 names; ordinal = index)
_V300: Final = (
    "V3_0_0_SNAPSHOT",
    "V3_0_0_ALPHA1",
    *(f"V3_0_0_BETA{i}" for i in range(1, 6)),
    *(name for i in range(6, 10) for name in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")),
    "V3_0_0_FINAL",
)


def _version_names() -> tuple[str, ...]:
    releases = [(3, 0, p) for p in range(1, 16)]
    releases += [(3, minor, p) for minor in (1, 2) for p in range(10)]
    releases += [(3, minor, p) for minor in range(3, 10) for p in range(1, 10)]
    releases += [(major, minor, p) for major in (4, 5) for minor in range(10) for p in range(10)]
    names = list(_V300)
    for a, b, c in releases:
        names += [f"V{a}_{b}_{c}_SNAPSHOT", f"V{a}_{b}_{c}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES: Final = _version_names()
_REQUEST_NAMES: Final = {int(c): c.name.lower() for c in RequestCode}
_RESPONSE_NAMES: Final = {int(c): c.name.lower() for c in ResponseCode}
_LANGUAGE_NAMES: Final = {int(c): c.name.lower() for c in LanguageCode}


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc(version)`` lower-cased, as the connection gauges label it.

    >>> version_desc(409), version_desc(479), version_desc(10_000)
    ('v4_9_8', 'v5_3_3', 'higher_version')
    """
    return _VERSION_NAMES[min(max(version, 0), len(_VERSION_NAMES) - 1)].lower()


def _bool(value: bool) -> str:
    return "true" if value else "false"


def is_system_group(group: str) -> bool:
    """``BrokerMetricsManager.isSystemGroup``: ``CID_RMQ_SYS_`` prefix, any case."""
    return group.lower().startswith(CID_RMQ_SYS_PREFIX.lower())


def _is_retry_or_dlq(topic: str) -> bool:
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def message_type(topic: str, counted: bool) -> str:
    """``TopicMessageType.getMetricsValue()`` of a put, told by where it was stored.

    Java reads the send request's properties; here the put is labelled by its topic:
    ``SCHEDULE_TOPIC_XXXX`` / ``rmq_sys_wheel_timer`` and scheduled deliveries (``counted=False``)
    are ``delay``, ``RMQ_SYS_TRANS_HALF_TOPIC`` is ``transaction``, the rest ``normal``.
    """
    if not counted or topic in _DELAY_TOPICS:
        return "delay"
    if topic == _TRANS_HALF_TOPIC:
        return "transaction"
    return "normal"


def _histogram(name: str, doc: str, labels: Sequence[str], unit: str = "") -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=list(labels), unit=unit)


def _add_histogram(
    fam: HistogramMetricFamily, values: Sequence[str], bounds: Sequence[float], counts: Sequence[int], total: float
) -> None:
    """Add one series from per-bucket (not cumulative) ``counts``; the last count is above every bound."""
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip(bounds, counts, strict=False):
        running += n
        buckets.append((repr(float(bound)), float(running)))
    running += counts[len(bounds)]
    buckets.append(("+Inf", float(running)))
    fam.add_metric(list(values), buckets, float(total))


class RpcLatency:
    """``rocketmq_rpc_latency``: how long the broker took to answer, per request and response code.

    Mirrors ``RemotingMetricsManager.rpcLatency`` as ``NettyRemotingAbstract.writeResponse``
    records it: whole milliseconds, buckets :data:`RPC_LATENCY_BUCKETS_MS`. :meth:`observe` is the
    per-request hook (one dict lookup, a bisect and two additions); the request path calls it
    with one ``time.perf_counter()`` pair around the handler.

    Attributes:
        rows: ``(request_code, response_code, oneway, long_polling) -> row``: ``row[0]`` the sum
            of the observed ms, ``row[1:]`` the count per bucket (the last: above 3000 ms).
    """

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int, bool, bool], list[int]] = {}

    def observe(
        self, request_code: int, response_code: int, elapsed_s: float, oneway: bool = False, long_polling: bool = False
    ) -> None:
        """Record one answered request that took ``elapsed_s`` seconds (recorded as whole ms)."""
        ms = int(elapsed_s * 1000)
        key = (request_code, response_code, oneway, long_polling)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0] * (len(RPC_LATENCY_BUCKETS_MS) + 2)
        row[0] += ms
        row[1 + bisect_left(RPC_LATENCY_BUCKETS_MS, ms)] += 1

    def family(self, common: Sequence[str]) -> HistogramMetricFamily:
        """The ``rocketmq_rpc_latency_milliseconds`` histogram, ``common`` = :data:`COMMON_LABELS` values.

        Labels: the common ones, ``protocol_type`` (``remoting``), ``request_code`` and
        ``response_code`` (Java's constant names lower-cased, else the number), ``is_long_polling``
        and ``result`` (``success``, or ``oneway`` for oneway requests).
        """
        fam = _histogram(
            "rocketmq_rpc_latency",
            "Rpc latency",
            [*COMMON_LABELS, "protocol_type", "request_code", "response_code", "is_long_polling", "result"],
            unit="milliseconds",
        )
        for (req, resp, oneway, long_polling), row in list(self.rows.items()):
            row = list(row)
            values = [
                *common,
                PROTOCOL_TYPE_REMOTING,
                _REQUEST_NAMES.get(req, str(req)),
                _RESPONSE_NAMES.get(resp, str(resp)),
                _bool(long_polling),
                "oneway" if oneway else "success",
            ]
            _add_histogram(fam, values, RPC_LATENCY_BUCKETS_MS, row[1:], row[0])
        return fam


def run_on_loop(loop: asyncio.AbstractEventLoop | None, fn: Callable[[], _T], timeout: float) -> _T | None:
    """Run ``fn`` on ``loop``'s thread and return its result (None when it did not run in time).

    ``fn`` runs right here when there is no loop, the loop is not running (nothing else touches
    the state then) or this is the loop's own thread.
    """
    if loop is None or loop.is_closed() or not loop.is_running():
        return fn()
    try:
        if asyncio.get_running_loop() is loop:
            return fn()
    except RuntimeError:
        pass
    fut: concurrent.futures.Future[_T] = concurrent.futures.Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn())
        except BaseException as exc:  # handed to the waiting thread
            fut.set_exception(exc)

    try:
        loop.call_soon_threadsafe(run)
    except RuntimeError:  # closed meanwhile
        return fn()
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        log.warning("metrics: the event loop took more than %.1f s to take the snapshot; scrape skipped", timeout)
        return None


class BrokerCollector(Collector):
    """A ``prometheus_client`` collector of one broker's metrics (``BrokerMetricsManager``).

    Every series carries ``cluster`` (``brokerClusterName``), ``node_type`` (``broker``) and
    ``node_id`` (``brokerName``). The families, with their Prometheus names:

    * ``rocketmq_messages_in_total``, ``rocketmq_throughput_in_total`` (bytes: commit-log record
      sizes) and the ``rocketmq_message_size`` histogram (one observation per put: its average
      record size, bytes): labels ``topic``, ``message_type``, ``is_system``; retry and DLQ
      topics left out, as Java's send processor does;
    * ``rocketmq_messages_out_total``, ``rocketmq_throughput_out_total`` (bytes): labels
      ``topic``, ``consumer_group``, ``is_system``; retry and DLQ topics left out;
    * ``rocketmq_consumer_lag_messages`` and ``rocketmq_consumer_lag_latency_milliseconds``
      (``ConsumerLagCalculator``): labels ``topic``, ``consumer_group``, ``is_retry``, ``is_system``;
    * ``rocketmq_producer_connections`` (``language``, ``version``, ``protocol_type``) and
      ``rocketmq_consumer_connections`` (plus ``consumer_group``, ``consume_mode``, ``is_system``);
    * ``rocketmq_topic_number``, ``rocketmq_consumer_group_number``, ``rocketmq_broker_permission``;
    * ``rocketmq_storage_size_bytes``, ``rocketmq_storage_flush_behind_bytes``,
      ``rocketmq_storage_dispatch_behind_bytes``, ``rocketmq_storage_message_reserve_time_milliseconds``
      (labels ``storage_type`` = ``local``, ``storage_medium`` = ``disk``);
    * ``rocketmq_rpc_latency_milliseconds`` (:class:`RpcLatency`; empty until the request path
      calls :attr:`rpc_latency`'s ``observe``).

    Args:
        broker: the broker (anything with :class:`~rocketpipe.broker.context.BrokerContext`'s tables).
        loop: the loop that owns the broker's tables; default: the running loop, if any.
        timeout: how long a scrape waits for that loop, seconds.

    Attributes:
        rpc_latency: the request-latency rows this collector exports.
    """

    def __init__(
        self,
        broker: BrokerContext,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        timeout: float = SNAPSHOT_TIMEOUT_S,
    ) -> None:
        self._broker = broker
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._loop = loop
        self._timeout = timeout
        self.rpc_latency = RpcLatency()

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering never runs a scrape (and the registry skips the name checks)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """Build the samples: the snapshot on the broker's loop, the filesystem size here."""
        families = run_on_loop(self._loop, self.families, self._timeout)
        if families is None:
            return
        yield from families
        yield self._storage_size()

    # ------------------------------------------------------------------ the snapshot
    def _common(self) -> list[str]:
        cfg = self._broker.config
        return [cfg.broker_cluster_name, NODE_TYPE_BROKER, cfg.broker_name]

    def families(self) -> list[Metric]:
        """Every family except ``rocketmq_storage_size_bytes``; call it on the broker's loop thread."""
        common = self._common()
        out: list[Metric] = []
        out += self._puts(common)
        out += self._gets(common)
        out += self._lag(common)
        out += self._connections(common)
        out += self._tables(common)
        out += self._store(common)
        out.append(self.rpc_latency.family(common))
        return out

    def _puts(self, common: list[str]) -> list[Metric]:
        labels = [*COMMON_LABELS, "topic", "message_type", "is_system"]
        msgs = CounterMetricFamily("rocketmq_messages_in", "Total number of incoming messages", labels=labels)
        size = CounterMetricFamily("rocketmq_throughput_in", "Total traffic of incoming messages", labels=labels)
        hist = _histogram("rocketmq_message_size", "Incoming messages size", labels)
        merged: dict[tuple[str, str], list[int]] = {}
        for (topic, counted), row in list(self._broker.stats.topic_puts.items()):
            if _is_retry_or_dlq(topic):
                continue
            key = (topic, message_type(topic, counted))
            acc = merged.get(key)
            merged[key] = list(row) if acc is None else [a + b for a, b in zip(acc, row, strict=True)]
        for (topic, mtype), row in sorted(merged.items()):
            values = [*common, topic, mtype, _bool(is_validator_system_topic(topic))]
            msgs.add_metric(values, row[0])
            size.add_metric(values, row[1])
            _add_histogram(hist, values, MESSAGE_SIZE_BUCKETS, row[PUT_ROW_BUCKETS:], row[2])
        return [msgs, size, hist]

    def _gets(self, common: list[str]) -> list[Metric]:
        labels = [*COMMON_LABELS, "topic", "consumer_group", "is_system"]
        msgs = CounterMetricFamily("rocketmq_messages_out", "Total number of outgoing messages", labels=labels)
        size = CounterMetricFamily("rocketmq_throughput_out", "Total traffic of outgoing messages", labels=labels)
        for (topic, group), row in sorted(self._broker.stats.topic_gets.items()):
            if _is_retry_or_dlq(topic):
                continue
            count, nbytes = row[0], row[1]
            values = [
                *common,
                topic,
                group,
                _bool(is_validator_system_topic(topic) or group.startswith(CID_RMQ_SYS_PREFIX)),
            ]
            msgs.add_metric(values, count)
            if nbytes >= 0:
                size.add_metric(values, nbytes)
        return [msgs, size]

    def lag_rows(self) -> list[tuple[str, str, int, int]]:
        """``(consumer_group, topic, lag messages, earliest unconsumed store time ms or 0)``.

        ``ConsumerLagCalculator.calculateLag`` for pull/push groups: the (group, topic) pairs are
        the online consumers' subscriptions plus every pair with committed offsets (Java takes
        only the online ones); retry topics, unknown topics and topics neither readable nor
        writable are skipped. Per queue ``0 .. writeQueueNums-1``: lag = max offset − committed
        offset (a queue without a commit counts as caught up, as in Java; never below 0); the
        store time of the message at the committed offset gives the earliest unconsumed time.
        """
        b = self._broker
        pairs: set[tuple[str, str]] = set()
        for group, info in b.clients.consumers.items():
            pairs.update((group, topic) for topic in info.subscriptions)
        for key in b.offsets.to_json()["offsetTable"]:
            topic, _, group = key.rpartition("@")
            pairs.add((group, topic))
        broker_perm = b.config.broker_permission
        rows = []
        for group, topic in sorted(pairs):
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                continue
            tc = b.topics.get(topic)
            if tc is None:
                continue
            perm = tc.perm & broker_perm
            if not sf.is_readable(perm) and not sf.is_writeable(perm):
                continue
            total, earliest = 0, 0
            for qid in range(tc.write_queue_nums):
                max_offset = max(0, b.store.get_max_offset(topic, qid))
                offset = b.offsets.query(group, topic, qid)
                if offset < 0:
                    offset = max_offset
                if offset < max_offset:
                    total += max_offset - offset
                    ts = b.store.get_store_timestamp(topic, qid, offset)
                    if ts > 0 and (earliest == 0 or ts < earliest):
                        earliest = ts
            rows.append((group, topic, total, earliest))
        return rows

    def _lag(self, common: list[str]) -> list[Metric]:
        labels = [*COMMON_LABELS, "topic", "consumer_group", "is_retry", "is_system"]
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "Consumer lag messages", labels=labels)
        latency = GaugeMetricFamily(
            "rocketmq_consumer_lag_latency", "Consumer lag time", labels=labels, unit="milliseconds"
        )
        now = self._broker.clock.now_ms()
        for group, topic, total, earliest in self.lag_rows():
            values = [*common, topic, group, "false", _bool(is_validator_system_topic(topic) or is_system_group(group))]
            lag.add_metric(values, total)
            latency.add_metric(values, now - earliest if earliest else 0)
        return [lag, latency]

    def _connections(self, common: list[str]) -> list[Metric]:
        clients = self._broker.clients
        producers: dict[tuple[str, str], int] = {}
        for chans in clients.producers.values():
            for cc in chans.values():
                pkey = (_LANGUAGE_NAMES.get(cc.language, str(cc.language)), version_desc(cc.version))
                producers[pkey] = producers.get(pkey, 0) + 1
        consumers: dict[tuple[str, str, str, str], int] = {}
        for group, info in clients.consumers.items():
            mode = CONSUME_MODES.get(info.consume_type, info.consume_type.lower())
            for cc in info.channels.values():
                ckey = (group, _LANGUAGE_NAMES.get(cc.language, str(cc.language)), version_desc(cc.version), mode)
                consumers[ckey] = consumers.get(ckey, 0) + 1
        prod = GaugeMetricFamily(
            "rocketmq_producer_connections",
            "Producer connections",
            labels=[*COMMON_LABELS, "language", "version", "protocol_type"],
        )
        for (lang, ver), n in sorted(producers.items()):
            prod.add_metric([*common, lang, ver, PROTOCOL_TYPE_REMOTING], n)
        cons = GaugeMetricFamily(
            "rocketmq_consumer_connections",
            "Consumer connections",
            labels=[
                *COMMON_LABELS,
                "consumer_group",
                "language",
                "version",
                "consume_mode",
                "protocol_type",
                "is_system",
            ],
        )
        for (group, lang, ver, mode), n in sorted(consumers.items()):
            cons.add_metric([*common, group, lang, ver, mode, PROTOCOL_TYPE_REMOTING, _bool(is_system_group(group))], n)
        return [prod, cons]

    def _tables(self, common: list[str]) -> list[Metric]:
        b = self._broker
        out: list[Metric] = []
        for name, doc, value in (
            ("rocketmq_topic_number", "Active topic number", len(b.topics.topics)),
            ("rocketmq_consumer_group_number", "Active subscription group number", len(b.groups_config.groups)),
            ("rocketmq_broker_permission", "Broker permission", b.config.broker_permission),
        ):
            fam = GaugeMetricFamily(name, doc, labels=list(COMMON_LABELS))
            fam.add_metric(common, value)
            out.append(fam)
        return out

    def _store(self, common: list[str]) -> list[Metric]:
        store = self._broker.store
        labels = [*COMMON_LABELS, *STORE_LABELS]
        values = [*common, *STORE_LABEL_VALUES]
        flush = GaugeMetricFamily("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", labels=labels)
        flush.add_metric(values, max(0, store.get_max_phy_offset() - store.flushed_offset))
        # the consume queues are written inside the put (no ReputMessageService): never behind
        dispatch = GaugeMetricFamily(
            "rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", labels=labels
        )
        dispatch.add_metric(values, 0)
        reserve = GaugeMetricFamily(
            "rocketmq_storage_message_reserve_time",
            "Broker message reserve time",
            labels=labels,
            unit="milliseconds",
        )
        earliest = self._earliest_message_time()
        if earliest > 0:
            reserve.add_metric(values, self._broker.clock.now_ms() - earliest)
        return [flush, dispatch, reserve]

    def _earliest_message_time(self) -> int:
        """Store time of the commit log's first record, ms (``getEarliestMessageTime``), or -1."""
        store = self._broker.store
        first = store.get_min_phy_offset()
        if store.get_max_phy_offset() <= first:
            return -1
        log_ = store.commit_log
        return log_.pickup_store_timestamp(first, log_.record_size_at(first))

    def _storage_size(self) -> Metric:
        """``rocketmq_storage_size_bytes``: used bytes of the store's filesystem (total − free)."""
        fam = GaugeMetricFamily(
            "rocketmq_storage_size", "Broker storage size", labels=[*COMMON_LABELS, *STORE_LABELS], unit="bytes"
        )
        try:
            vfs = os.statvfs(self._broker.store.config.root_dir)
        except OSError:
            return fam
        total = vfs.f_blocks * vfs.f_frsize
        if total > 0:
            fam.add_metric([*self._common(), *STORE_LABEL_VALUES], total - vfs.f_bfree * vfs.f_frsize)
        return fam


class MetricsServer:
    """``prometheus_client``'s own HTTP server (``start_http_server``) for one registry.

    It answers ``GET /metrics`` (any path, in fact) from a daemon thread, one thread per scrape.

    Args:
        host: address to bind (``metricsPromExporterHost``; Java defaults to ``brokerIP1``).
        port: TCP port (``metricsPromExporterPort``, Java's default 5557); 0 = any free port.
        registry: the registry to serve (e.g. one :class:`BrokerCollector` registered in it).

    Attributes:
        port: the bound port once started (the real one when ``port`` was 0).
    """

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self.host = host
        self.port = port
        self.registry = registry
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``"host:port"`` (the bound port once started)."""
        return f"{self.host}:{self.port}"

    def start(self) -> int:
        """Bind and serve in a daemon thread.

        Returns:
            The bound port.

        Raises:
            OSError: the port cannot be bound.
            RuntimeError: already started.
        """
        if self._httpd is not None:
            raise RuntimeError("MetricsServer already started")
        self._httpd, self._thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        self.port = int(self._httpd.server_port)
        log.info("metrics: serving Prometheus metrics on http://%s/metrics", self.address)
        return self.port

    def close(self) -> None:
        """Stop serving and release the port (blocks up to ~0.5 s; from a loop use ``asyncio.to_thread``). Idempotent."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(5.0)

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
