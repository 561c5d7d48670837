"""Prometheus metrics of the name server (L3): :class:`NamesrvCollector`.

Apache RocketMQ 5.x's name server exports no metrics (only the broker, proxy and controller
have a ``*MetricsManager``), so these two gauges are rocketpipe's own. They follow the broker's
conventions (:mod:`rocketpipe.broker.metrics`): ``rocketmq_`` prefix, snake_case, the
``node_type`` / ``node_id`` labels (``namesrv`` / the name server's ``ip:port``):

* ``rocketmq_namesrv_live_brokers{cluster}``: broker addresses (masters and slaves) registered
  and not expired, per cluster;
* ``rocketmq_namesrv_topic_number``: topics the name server has route data for.

Both come from one C-level copy of a route-table dict (:meth:`RouteTable.live_brokers`,
:meth:`RouteTable.topic_list`), so a scrape on the HTTP server's thread needs no hop to the
name server's event loop. Serve it with :class:`rocketpipe.broker.metrics.MetricsServer`, in a
registry of its own or next to a broker's collector::

    registry = CollectorRegistry()
    registry.register(NamesrvCollector(namesrv))

Imports: ``prometheus_client`` and :mod:`.server` (typing) only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .server import NameServer

__all__ = ["NODE_TYPE_NAMESRV", "NamesrvCollector"]

#: the ``node_type`` label of the name server's series
NODE_TYPE_NAMESRV: Final = "namesrv"


class NamesrvCollector(Collector):
    """A ``prometheus_client`` collector of one name server's route-table sizes.

    Args:
        namesrv: the name server (its ``address`` becomes the ``node_id`` label once started).
    """

    def __init__(self, namesrv: NameServer) -> None:
        self._namesrv = namesrv

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering never runs a scrape (and the registry skips the name checks)."""
        return []

    def collect(self) -> Iterator[Metric]:
        """``rocketmq_namesrv_live_brokers`` per cluster and ``rocketmq_namesrv_topic_number``."""
        ns = self._namesrv
        node = [NODE_TYPE_NAMESRV, ns.address or ""]
        live = ns.routes.live_brokers()  # a copy
        per_cluster: dict[str, int] = {}
        for cluster, _addr in live:
            per_cluster[cluster] = per_cluster.get(cluster, 0) + 1
        brokers = GaugeMetricFamily(
            "rocketmq_namesrv_live_brokers",
            "Broker addresses registered with the name server and not expired",
            labels=["node_type", "node_id", "cluster"],
        )
        for cluster, n in sorted(per_cluster.items()):
            brokers.add_metric([*node, cluster], n)
        yield brokers
        topics = GaugeMetricFamily(
            "rocketmq_namesrv_topic_number",
            "Topics the name server has route data for",
            labels=["node_type", "node_id"],
        )
        topics.add_metric(node, len(ns.routes.topic_list().topic_list))
        yield topics
