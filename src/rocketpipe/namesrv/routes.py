"""The name server's route table, pure and synchronous (L3): :class:`RouteTable`.

Holds what a RocketMQ name server knows: broker groups and their addresses by broker id, the
broker names of each cluster, the queue data of every topic per broker name, and the liveness of
each registered broker address. Time is passed in (``now_ms``), never read, so tests drive
expiry directly. No I/O and no asyncio here.

Mirrors ``RouteInfoManager`` of apache/rocketmq (namesrv/routeinfo) in its 5.x shape:

* topic queue data is taken only from the master (id 0), or, for 5.x brokers (registration with
  ``enableActingMaster`` present), from the smallest-id slave while it is the smallest id;
* topic queue data is (re)applied only on a broker address's first registration, when its
  ``DataVersion`` differs from the last one seen, or when the topic has no queue data for the
  broker name yet;
* a first registration of a broker id carrying exactly one topic is rejected;
* an address re-registered under another id replaces the old id entry;
* a broker group's topics disappear when its last address goes (unregister, expiry, channel
  close).

Imports: stdlib, :mod:`rocketpipe.protocol` (bodies, sysflag).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from ..protocol.bodies.register import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from ..protocol.bodies.route import BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData
from ..protocol.names import MASTER_ID
from ..protocol.sysflag import PERM_WRITE

__all__ = [
    "DEFAULT_BROKER_CHANNEL_EXPIRED_MS",
    "MASTER_ID",
    "BrokerLiveInfo",
    "RegisterResult",
    "RouteTable",
]

log = logging.getLogger(__name__)

#: ``RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME``: 120 s without registration.
DEFAULT_BROKER_CHANNEL_EXPIRED_MS: Final = 120_000


@dataclass(slots=True)
class BrokerLiveInfo:
    """Liveness of one registered broker address (Java ``BrokerLiveInfo``).

    Attributes:
        broker_name: broker group the address was registered under.
        broker_id: id it was registered with.
        last_update_ms: wall time of the last registration (ms since the epoch).
        timeout_ms: expiry after ``last_update_ms`` (ms).
        data_version: topic-table version of the last registration.
        ha_server_addr: the broker's HA address.
        channel: the connection the registration came on (any object; None = unknown).
    """

    broker_name: str
    broker_id: int
    last_update_ms: int
    timeout_ms: int
    data_version: DataVersion
    ha_server_addr: str
    channel: object | None = None


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """Outcome of a registration: the master's addresses for slaves (Java ``RegisterBrokerResult``).

    Attributes:
        master_addr: the master's address, or None (masters, or no master registered).
        ha_server_addr: the master's HA address, or None.
    """

    master_addr: str | None = None
    ha_server_addr: str | None = None


@dataclass(slots=True)
class _BrokerGroup:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def to_broker_data(self) -> BrokerData:
        return BrokerData(
            cluster=self.cluster,
            broker_name=self.broker_name,
            broker_addrs=dict(self.broker_addrs),
            zone_name=self.zone_name,
            enable_acting_master=self.enable_acting_master,
        )


class RouteTable:
    """In-memory route table of a name server (Java ``RouteInfoManager``).

    Args:
        default_timeout_ms: broker expiry when a registration gives no ``heartbeatTimeoutMillis``
            (ms; Java 120 000).
    """

    def __init__(self, default_timeout_ms: int = DEFAULT_BROKER_CHANNEL_EXPIRED_MS) -> None:
        self.default_timeout_ms = default_timeout_ms
        #: topic -> broker name -> queue data
        self._topic_queues: dict[str, dict[str, QueueData]] = {}
        #: broker name -> group
        self._brokers: dict[str, _BrokerGroup] = {}
        #: cluster -> broker names
        self._clusters: dict[str, set[str]] = {}
        #: (cluster, broker addr) -> liveness
        self._live: dict[tuple[str, str], BrokerLiveInfo] = {}
        #: broker addr -> filter servers
        self._filter_servers: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ registration

    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        now_ms: int,
        zone_name: str | None = None,
        timeout_ms: int | None = None,
        enable_acting_master: bool | None = None,
        filter_server_list: list[str] | None = None,
        channel: object | None = None,
    ) -> RegisterResult | None:
        """Register (or refresh) a broker address with its topic table.

        Mirrors ``RouteInfoManager.registerBroker`` (5.x) and its parts: the cluster table, the
        broker address table (:meth:`_register_broker_addr`), the topic queue table
        (:meth:`_update_topic_queues`), the live table (:meth:`_put_live`), the filter servers,
        and the answer (:meth:`_register_result`).

        Args:
            cluster_name: cluster the broker belongs to.
            broker_addr: ``ip:port`` clients use.
            broker_name: broker group name.
            broker_id: 0 = master, >= 1 = slave.
            ha_server_addr: ``ip:haPort``.
            topic_config_wrapper: the broker's topics and their DataVersion (None = no topics).
            now_ms: current wall time (ms since the epoch).
            zone_name: 5.x zone, or None.
            timeout_ms: expiry of this registration (ms); None = ``default_timeout_ms``.
            enable_acting_master: 5.x flag; None marks an old (4.x) broker.
            filter_server_list: filter servers (obsolete).
            channel: the connection the request came on (closing it unregisters the broker).

        Returns:
            The master's addresses for a slave (empty for a master), or None when the
            registration is rejected: the first registration of a broker id that lists exactly
            one topic (Java answers ``SYSTEM_ERROR "register broker failed"``).
        """
        self._clusters.setdefault(cluster_name, set()).add(broker_name)
        topics = topic_config_wrapper.topic_config_table if topic_config_wrapper else {}
        registered = self._register_broker_addr(
            cluster_name, broker_name, broker_id, broker_addr, zone_name, enable_acting_master, len(topics)
        )
        if registered is None:
            return None
        group, register_first = registered
        data_version = topic_config_wrapper.data_version if topic_config_wrapper is not None else DataVersion(0, 0, 0)
        if topic_config_wrapper is not None:
            is_old_version = enable_acting_master is None
            self._update_topic_queues(
                cluster_name, broker_addr, group, broker_id, topic_config_wrapper, register_first, is_old_version
            )
        self._put_live(
            (cluster_name, broker_addr),
            BrokerLiveInfo(
                broker_name=broker_name,
                broker_id=broker_id,
                last_update_ms=now_ms,
                timeout_ms=self.default_timeout_ms if timeout_ms is None else timeout_ms,
                data_version=data_version,
                ha_server_addr=ha_server_addr,
                channel=channel,
            ),
        )
        if filter_server_list:
            self._filter_servers[broker_addr] = list(filter_server_list)
        else:
            self._filter_servers.pop(broker_addr, None)
        return self._register_result(cluster_name, broker_id, group.broker_addrs)

    def _register_broker_addr(
        self,
        cluster_name: str,
        broker_name: str,
        broker_id: int,
        broker_addr: str,
        zone_name: str | None,
        enable_acting_master: bool | None,
        topic_count: int,
    ) -> tuple[_BrokerGroup, bool] | None:
        """The ``brokerAddrTable`` part of ``registerBroker``: the broker group and its address.

        Creates the group on first sight and sets its zone and acting-master flag; drops the
        address from any other id (slave switched to master, or back); rejects the first
        registration of a broker id that lists exactly ``topic_count == 1`` topic (a group
        left without addresses is dropped).

        Returns:
            (the group, whether this is the address's first registration), or None: rejected.
        """
        group = self._brokers.get(broker_name)
        register_first = group is None
        if group is None:
            group = _BrokerGroup(cluster=cluster_name, broker_name=broker_name)
            self._brokers[broker_name] = group
        group.enable_acting_master = bool(enable_acting_master)
        group.zone_name = zone_name

        addrs = group.broker_addrs
        # The same address under another id: slave switched to master (or back).
        for bid in [b for b, a in addrs.items() if a == broker_addr and b != broker_id]:
            del addrs[bid]

        if broker_id not in addrs and topic_count == 1:
            log.warning(
                "register rejected, single-topic first registration cluster=%s broker=%s id=%d addr=%s",
                cluster_name,
                broker_name,
                broker_id,
                broker_addr,
            )
            if not addrs:
                self._drop_group(broker_name)
            return None

        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        return group, register_first or not old_addr

    def _update_topic_queues(
        self,
        cluster_name: str,
        broker_addr: str,
        group: _BrokerGroup,
        broker_id: int,
        wrapper: TopicConfigSerializeWrapper,
        register_first: bool,
        is_old_version: bool,
    ) -> None:
        """The ``topicQueueTable`` part of ``registerBroker``: queue data from the master, or from
        a 5.x broker's smallest-id slave (its queues read-only while it acts as master).

        A topic's queue data is (re)applied on the address's first registration, when its
        DataVersion changed, or when the topic has none for the broker name yet.
        """
        is_master = broker_id == MASTER_ID
        is_prime_slave = not is_old_version and not is_master and broker_id == min(group.broker_addrs)
        if not (is_master or is_prime_slave):
            return
        changed = self.is_broker_topic_config_changed(cluster_name, broker_addr, wrapper.data_version)
        read_only = is_prime_slave and group.enable_acting_master
        broker_name = group.broker_name
        for tc in wrapper.topic_config_table.values():
            if register_first or changed or not self._has_queue(tc.topic_name, broker_name):
                self._update_queue_data(broker_name, tc, tc.perm & ~PERM_WRITE if read_only else tc.perm)

    def _put_live(self, key: tuple[str, str], info: BrokerLiveInfo) -> None:
        """The ``brokerLiveTable`` part of ``registerBroker``: (cluster, address) -> ``info``."""
        if self._live.get(key) is None:
            log.info(
                "new broker registered cluster=%s broker=%s id=%d addr=%s ha=%s",
                key[0],
                info.broker_name,
                info.broker_id,
                key[1],
                info.ha_server_addr,
            )
        self._live[key] = info

    def _register_result(self, cluster_name: str, broker_id: int, addrs: dict[int, str]) -> RegisterResult:
        """What ``registerBroker`` answers: a slave gets its master's address and HA address."""
        if broker_id == MASTER_ID:
            return RegisterResult()
        master_addr = addrs.get(MASTER_ID)
        if master_addr is None:
            return RegisterResult()
        master_live = self._live.get((cluster_name, master_addr))
        return RegisterResult(
            master_addr=master_addr,
            ha_server_addr=master_live.ha_server_addr if master_live else None,
        )

    def _has_queue(self, topic: str, broker_name: str) -> bool:
        return broker_name in self._topic_queues.get(topic, {})

    def _update_queue_data(self, broker_name: str, tc: TopicConfig, perm: int) -> None:
        qd = QueueData(
            broker_name=broker_name,
            read_queue_nums=tc.read_queue_nums,
            write_queue_nums=tc.write_queue_nums,
            perm=perm,
            topic_sys_flag=tc.topic_sys_flag,
        )
        by_broker = self._topic_queues.setdefault(tc.topic_name, {})
        old = by_broker.get(broker_name)
        if old != qd:
            if old is None:
                log.info("topic registered topic=%s broker=%s %s", tc.topic_name, broker_name, qd)
            else:
                log.info("topic changed topic=%s old=%s new=%s", tc.topic_name, old, qd)
            by_broker[broker_name] = qd

    def is_broker_topic_config_changed(self, cluster_name: str, broker_addr: str, data_version: DataVersion) -> bool:
        """True when ``data_version`` differs from the last registration's (or none is known).

        Mirrors ``RouteInfoManager.isBrokerTopicConfigChanged``.
        """
        live = self._live.get((cluster_name, broker_addr))
        return live is None or live.data_version != data_version

    def query_broker_data_version(self, cluster_name: str, broker_addr: str) -> DataVersion | None:
        """The DataVersion of the broker's last registration, or None if not registered."""
        live = self._live.get((cluster_name, broker_addr))
        return live.data_version if live else None

    def refresh_broker(self, cluster_name: str, broker_addr: str, now_ms: int) -> None:
        """Mark a registered broker alive at ``now_ms`` (QUERY_DATA_VERSION does this)."""
        live = self._live.get((cluster_name, broker_addr))
        if live is not None:
            live.last_update_ms = now_ms

    # ------------------------------------------------------------------ removal

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """Remove a broker address; drop its group, and the group's topics, when it was the last.

        Mirrors ``RouteInfoManager.unregisterBroker``. Unknown brokers are ignored.
        """
        live = self._live.pop((cluster_name, broker_addr), None)
        self._filter_servers.pop(broker_addr, None)
        log.info(
            "broker unregistered cluster=%s broker=%s id=%d addr=%s known=%s",
            cluster_name,
            broker_name,
            broker_id,
            broker_addr,
            live is not None,
        )
        group = self._brokers.get(broker_name)
        if group is None:
            return
        if group.broker_addrs.get(broker_id) == broker_addr:
            del group.broker_addrs[broker_id]
        if not group.broker_addrs:
            self._drop_group(broker_name, cluster_name)

    def _drop_group(self, broker_name: str, cluster_name: str | None = None) -> None:
        group = self._brokers.pop(broker_name, None)
        clusters = [cluster_name] if cluster_name else list(self._clusters)
        if group is not None and group.cluster not in clusters:
            clusters.append(group.cluster)
        for cluster in clusters:
            names = self._clusters.get(cluster)
            if names is not None and broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self._clusters[cluster]
        for topic in list(self._topic_queues):
            by_broker = self._topic_queues[topic]
            if by_broker.pop(broker_name, None) is not None and not by_broker:
                del self._topic_queues[topic]
                log.info("topic removed topic=%s (last broker %s gone)", topic, broker_name)

    def _remove_live(self, key: tuple[str, str]) -> None:
        live = self._live.pop(key, None)
        if live is None:
            return
        cluster, addr = key
        self.unregister_broker(cluster, addr, live.broker_name, live.broker_id)

    def scan_expired(self, now_ms: int) -> list[str]:
        """Remove brokers whose last registration is older than their timeout.

        Mirrors ``RouteInfoManager.scanNotActiveBroker`` (run every 5 s by the name server).

        Args:
            now_ms: current wall time (ms since the epoch).

        Returns:
            The addresses removed.
        """
        expired = [k for k, v in self._live.items() if v.last_update_ms + v.timeout_ms < now_ms]
        for key in expired:
            live = self._live[key]
            log.warning(
                "broker expired cluster=%s broker=%s addr=%s last_update_ms=%d timeout_ms=%d",
                key[0],
                live.broker_name,
                key[1],
                live.last_update_ms,
                live.timeout_ms,
            )
            self._remove_live(key)
        return [addr for _, addr in expired]

    def on_channel_closed(self, channel: object) -> list[str]:
        """Remove every broker registered over ``channel`` (its connection closed).

        Mirrors ``RouteInfoManager.onChannelDestroy``.

        Returns:
            The addresses removed.
        """
        keys = [k for k, v in self._live.items() if v.channel is channel and channel is not None]
        for key in keys:
            log.info("broker channel closed cluster=%s addr=%s", key[0], key[1])
            self._remove_live(key)
        return [addr for _, addr in keys]

    # ------------------------------------------------------------------ queries

    def route(self, topic: str) -> TopicRouteData | None:
        """Return the route of ``topic``, or None when the name server knows no queue data or
        no broker for it (``TOPIC_NOT_EXIST``).

        Mirrors ``RouteInfoManager.pickupTopicRouteData``; entries are sorted by broker name.
        """
        by_broker = self._topic_queues.get(topic)
        if not by_broker:
            return None
        queue_datas = [
            QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
            for _, q in sorted(by_broker.items())
        ]
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, list[str]] = {}
        for name in sorted(by_broker):
            group = self._brokers.get(name)
            if group is None:
                continue
            bd = group.to_broker_data()
            broker_datas.append(bd)
            for addr in bd.broker_addrs.values():
                fs = self._filter_servers.get(addr)
                if fs:
                    filter_servers[addr] = list(fs)
        if not broker_datas:
            return None
        return TopicRouteData(queue_datas=queue_datas, broker_datas=broker_datas, filter_server_table=filter_servers)

    def cluster_info(self) -> ClusterInfo:
        """Return every broker group and every cluster's broker names (a copy)."""
        return ClusterInfo(
            broker_addr_table={n: g.to_broker_data() for n, g in sorted(self._brokers.items())},
            cluster_addr_table={c: set(n) for c, n in sorted(self._clusters.items())},
        )

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget ``topic``'s queue data: of the brokers of ``cluster_name``, or of every broker.

        Mirrors ``RouteInfoManager.deleteTopic(topic[, clusterName])``; an unknown cluster or
        topic is a no-op. A broker that still has the topic brings it back at its next
        registration.
        """
        by_broker = self._topic_queues.get(topic)
        if by_broker is None:
            return
        if cluster_name:
            for name in self._clusters.get(cluster_name, ()):
                by_broker.pop(name, None)
            if by_broker:
                return
        del self._topic_queues[topic]

    def topic_list(self) -> TopicList:
        """Return every topic with queue data."""
        return TopicList(topic_list=set(self._topic_queues))

    def topics_by_cluster(self, cluster_name: str) -> TopicList:
        """Return the topics hosted by the broker groups of ``cluster_name``."""
        names = self._clusters.get(cluster_name, set())
        return TopicList(topic_list={t for t, by in self._topic_queues.items() if names.intersection(by)})

    def live_brokers(self) -> dict[tuple[str, str], BrokerLiveInfo]:
        """A snapshot of the liveness table keyed by (cluster, broker address)."""
        return dict(self._live)
