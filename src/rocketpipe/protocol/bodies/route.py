"""Name-server bodies (L1, sans-IO): ``TopicRouteData`` (+ ``QueueData``, ``BrokerData``),
``ClusterInfo``, ``TopicList``, ``KVTable``.

Mirrors ``remoting/protocol/route`` and ``body/{ClusterInfo,TopicList,KVTable}``. JSON property
names are fastjson bean names; decoders accept both the standard form (quoted numeric keys) and
fastjson's default form (``brokerAddrs`` keys unquoted), and ignore unknown keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..names import MASTER_ID
from . import javajson as jj

__all__ = ["BrokerData", "ClusterInfo", "KVTable", "QueueData", "TopicList", "TopicRouteData"]


@dataclass(slots=True)
class QueueData:
    """Queues of a topic on one broker group (Java ``QueueData``).

    Attributes:
        broker_name: broker group name.
        read_queue_nums: readable queues.
        write_queue_nums: writable queues.
        perm: PermName bits.
        topic_sys_flag: TopicSysFlag bits.
    """

    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 6
    topic_sys_flag: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form (properties sorted)."""
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_obj(cls, d: Any) -> QueueData:
        """Build from a parsed bean (Go's ``topicSynFlag`` spelling accepted)."""
        d = jj.as_dict(d)
        flag = d.get("topicSysFlag", d.get("topicSynFlag"))
        return cls(
            broker_name=jj.as_str(d.get("brokerName"), "") or "",
            read_queue_nums=jj.as_int(d.get("readQueueNums")),
            write_queue_nums=jj.as_int(d.get("writeQueueNums")),
            perm=jj.as_int(d.get("perm"), 6),
            topic_sys_flag=jj.as_int(flag),
        )


@dataclass(slots=True)
class BrokerData:
    """Addresses of one broker group (Java ``BrokerData``).

    Attributes:
        cluster: cluster name.
        broker_name: broker group name.
        broker_addrs: broker id -> ``"host:port"`` (id 0 = master).
        zone_name: 5.x zone, or None.
        enable_acting_master: 5.x acting-master mode.
    """

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def select_broker_addr(self) -> str | None:
        """The master's address, else the lowest-id replica's (Java picks a random replica)."""
        addr = self.broker_addrs.get(MASTER_ID)
        if addr is None and self.broker_addrs:
            addr = self.broker_addrs[min(self.broker_addrs)]
        return addr

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form; ``brokerAddrs`` keyed by int (quoting decided by the encoder)."""
        d: dict[str, Any] = {
            "brokerAddrs": {k: self.broker_addrs[k] for k in sorted(self.broker_addrs)},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
            "enableActingMaster": self.enable_acting_master,
        }
        if self.zone_name is not None:
            d["zoneName"] = self.zone_name
        return d

    @classmethod
    def from_obj(cls, d: Any) -> BrokerData:
        """Build from a parsed bean; ``brokerAddrs`` keys may be ints or numeric strings."""
        d = jj.as_dict(d)
        addrs: dict[int, str] = {}
        for k, v in jj.as_dict(d.get("brokerAddrs")).items():
            if isinstance(k, bool):
                continue
            try:
                bid = int(k)
            except (TypeError, ValueError):
                continue
            if isinstance(v, str):
                addrs[bid] = v
        return cls(
            cluster=jj.as_str(d.get("cluster"), "") or "",
            broker_name=jj.as_str(d.get("brokerName"), "") or "",
            broker_addrs=addrs,
            zone_name=jj.as_str(d.get("zoneName")),
            enable_acting_master=jj.as_bool(d.get("enableActingMaster")),
        )


@dataclass(slots=True)
class TopicRouteData:
    """Route of a topic: GET_ROUTEINFO_BY_TOPIC response body (Java ``TopicRouteData``).

    Attributes:
        queue_datas: one entry per broker group hosting the topic.
        broker_datas: addresses of those broker groups.
        filter_server_table: broker address -> filter servers (normally empty).
        order_topic_conf: ``brokerName:queueNum;…`` for order topics, or None.
        topic_queue_mapping_by_broker: 5.x static-topic mapping, kept as parsed JSON, or None.
    """

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None
    topic_queue_mapping_by_broker: dict[str, Any] | None = None

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        d: dict[str, Any] = {
            "brokerDatas": [b.to_obj() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
        }
        if self.order_topic_conf is not None:
            d["orderTopicConf"] = self.order_topic_conf
        d["queueDatas"] = [q.to_obj() for q in self.queue_datas]
        if self.topic_queue_mapping_by_broker is not None:
            d["topicQueueMappingByBroker"] = self.topic_queue_mapping_by_broker
        return d

    def encode(self, standard_json: bool = True) -> bytes:
        """Encode as the name server does.

        Args:
            standard_json: True = quoted numeric keys (4.9.4+ name servers for request version
                >= 401 or ``acceptStandardJsonOnly``); False = fastjson's default form with bare
                ``brokerAddrs`` keys (older name servers / older clients).
        """
        return jj.dumps(self.to_obj(), quote_non_string_keys=standard_json)

    @classmethod
    def from_obj(cls, d: Any) -> TopicRouteData:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        fst: dict[str, list[str]] = {}
        for k, v in jj.as_dict(d.get("filterServerTable")).items():
            fst[str(k)] = [x for x in jj.as_list(v) if isinstance(x, str)]
        tqm = d.get("topicQueueMappingByBroker")
        return cls(
            queue_datas=[QueueData.from_obj(x) for x in jj.as_list(d.get("queueDatas"))],
            broker_datas=[BrokerData.from_obj(x) for x in jj.as_list(d.get("brokerDatas"))],
            filter_server_table=fst,
            order_topic_conf=jj.as_str(d.get("orderTopicConf")),
            topic_queue_mapping_by_broker=tqm if isinstance(tqm, dict) else None,
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> TopicRouteData:
        """Decode either JSON form.

        Raises:
            ProtocolError: the body is not JSON (nor fastjson's extended form).
        """
        return cls.from_obj(jj.loads(data))


@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO response body (Java ``ClusterInfo``).

    Attributes:
        broker_addr_table: broker name -> BrokerData.
        cluster_addr_table: cluster name -> broker names.
    """

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "brokerAddrTable": {k: v.to_obj() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        }

    def encode(self, standard_json: bool = True) -> bytes:
        """Encode; Java name servers always use the fastjson default form (``standard_json=False``)."""
        return jj.dumps(self.to_obj(), quote_non_string_keys=standard_json)

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ClusterInfo:
        """Decode either JSON form.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            broker_addr_table={str(k): BrokerData.from_obj(v) for k, v in jj.as_dict(d.get("brokerAddrTable")).items()},
            cluster_addr_table={
                str(k): {x for x in jj.as_list(v) if isinstance(x, str)}
                for k, v in jj.as_dict(d.get("clusterAddrTable")).items()
            },
        )


@dataclass(slots=True)
class TopicList:
    """A set of topic names (Java ``TopicList``), e.g. GET_ALL_TOPIC_LIST_FROM_NAMESERVER.

    Attributes:
        topic_list: topic names.
        broker_addr: unused by name servers; None.
    """

    topic_list: set[str] = field(default_factory=set)
    broker_addr: str | None = None

    def encode(self) -> bytes:
        """Encode (topics sorted)."""
        d: dict[str, Any] = {}
        if self.broker_addr is not None:
            d["brokerAddr"] = self.broker_addr
        d["topicList"] = sorted(self.topic_list)
        return jj.dumps(d)

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> TopicList:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            topic_list={x for x in jj.as_list(d.get("topicList")) if isinstance(x, str)},
            broker_addr=jj.as_str(d.get("brokerAddr")),
        )


@dataclass(slots=True)
class KVTable:
    """A string map (Java ``KVTable``), e.g. GET_KVLIST_BY_NAMESPACE or REGISTER_BROKER responses.

    Attributes:
        table: key -> value.
    """

    table: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Encode."""
        return jj.dumps({"table": self.table})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> KVTable:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls({str(k): jj.as_str(v, "") or "" for k, v in jj.as_dict(d.get("table")).items()})
