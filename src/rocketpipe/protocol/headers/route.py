"""Name-server headers (L1, sans-IO): GET_ROUTEINFO_BY_TOPIC (105), REGISTER_BROKER (103),
UNREGISTER_BROKER (104), QUERY_DATA_VERSION (322), KV config (100/101/102/219),
GET_TOPICS_BY_CLUSTER (224), DELETE_TOPIC_IN_NAMESRV (216).

Mirrors the Java classes under ``remoting/protocol/header/namesrv``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..codes import RequestCode
from .base import CommandHeader, TopicRequestHeader, wire

__all__ = [
    "DeleteKVConfigRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "PutKVConfigRequestHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "UnRegisterBrokerRequestHeader",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader(TopicRequestHeader):
    """GET_ROUTEINFO_BY_TOPIC (105) request (Java ``GetRouteInfoRequestHeader``).

    Attributes:
        topic: topic (required).
        accept_standard_json_only: ask 4.9.4+ name servers for standard JSON (quoted map keys)
            whatever the request version.
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_ROUTEINFO_BY_TOPIC

    topic: str | None = wire("topic", required=True)
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103) request (Java ``RegisterBrokerRequestHeader``).

    Attributes:
        broker_name: broker group name (required).
        broker_addr: ``ip:port`` clients use (required).
        cluster_name: cluster (required).
        ha_server_addr: ``ip:haPort`` (required).
        broker_id: 0 = master, >= 1 slave (required).
        heartbeat_timeout_millis: 5.x expiry of this registration, ms.
        enable_acting_master: 5.x acting-master mode (absent = old broker).
        compressed: body in the zlib "compressed" format (Java primitive, always sent).
        body_crc32: CRC32 of the body as a signed int32; 0 = unchecked.
        zone_name: extra ext key ``__ZONE_NAME`` (not a Java field; read from extFields by Java).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.REGISTER_BROKER

    broker_name: str | None = wire("brokerName", required=True)
    broker_addr: str | None = wire("brokerAddr", required=True)
    cluster_name: str | None = wire("clusterName", required=True)
    ha_server_addr: str | None = wire("haServerAddr", required=True)
    broker_id: int | None = wire("brokerId", 0, required=True)
    heartbeat_timeout_millis: int | None = wire("heartbeatTimeoutMillis")
    enable_acting_master: bool | None = wire("enableActingMaster")
    compressed: bool | None = wire("compressed", False)
    body_crc32: int | None = wire("bodyCrc32", 0)
    zone_name: str | None = wire("__ZONE_NAME")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER response (Java ``RegisterBrokerResponseHeader``).

    Attributes:
        ha_server_addr: master's HA address (for slaves).
        master_addr: master's address (for slaves).
    """

    ha_server_addr: str | None = wire("haServerAddr")
    master_addr: str | None = wire("masterAddr")


@dataclass(frozen=True, slots=True, kw_only=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104) request (Java ``UnRegisterBrokerRequestHeader``).

    Attributes:
        broker_name: broker group name (required).
        broker_addr: broker address (required).
        cluster_name: cluster (required).
        broker_id: broker id (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.UNREGISTER_BROKER

    broker_name: str | None = wire("brokerName", required=True)
    broker_addr: str | None = wire("brokerAddr", required=True)
    cluster_name: str | None = wire("clusterName", required=True)
    broker_id: int | None = wire("brokerId", 0, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322) request (Java ``QueryDataVersionRequestHeader``); body DataVersion.

    Attributes:
        broker_name: broker group name (required).
        broker_addr: broker address (required).
        cluster_name: cluster (required).
        broker_id: broker id (required).
    """

    REQUEST_CODE: ClassVar[int] = RequestCode.QUERY_DATA_VERSION

    broker_name: str | None = wire("brokerName", required=True)
    broker_addr: str | None = wire("brokerAddr", required=True)
    cluster_name: str | None = wire("clusterName", required=True)
    broker_id: int | None = wire("brokerId", 0, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """QUERY_DATA_VERSION response (Java ``QueryDataVersionResponseHeader``).

    Attributes:
        changed: the broker's DataVersion differs from the name server's (required).
    """

    changed: bool | None = wire("changed", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100) request (Java ``PutKVConfigRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.PUT_KV_CONFIG

    namespace: str | None = wire("namespace", required=True)
    key: str | None = wire("key", required=True)
    value: str | None = wire("value", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101) request (Java ``GetKVConfigRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_KV_CONFIG

    namespace: str | None = wire("namespace", required=True)
    key: str | None = wire("key", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    """GET_KV_CONFIG response (Java ``GetKVConfigResponseHeader``)."""

    value: str | None = wire("value")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102) request (Java ``DeleteKVConfigRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.DELETE_KV_CONFIG

    namespace: str | None = wire("namespace", required=True)
    key: str | None = wire("key", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219) request (Java ``GetKVListByNamespaceRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_KVLIST_BY_NAMESPACE

    namespace: str | None = wire("namespace", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224) request (Java ``GetTopicsByClusterRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.GET_TOPICS_BY_CLUSTER

    cluster: str | None = wire("cluster", required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_NAMESRV (216) request (Java ``DeleteTopicFromNamesrvRequestHeader``)."""

    REQUEST_CODE: ClassVar[int] = RequestCode.DELETE_TOPIC_IN_NAMESRV

    topic: str | None = wire("topic", required=True)
    cluster_name: str | None = wire("clusterName")
