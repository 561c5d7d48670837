"""JSON bodies (L1, sans-IO): dataclasses with ``encode()`` / ``decode()`` mirroring the Java
body beans; fastjson quirks live in :mod:`.javajson`."""

from __future__ import annotations

from .admin import (
    ConsumeStats,
    GroupList,
    OffsetWrapper,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicStatsTable,
)
from .consumer import (
    Connection,
    ConsumerConnection,
    ConsumerListBody,
    ConsumerRunningInfo,
    GetConsumerListByGroupResponseBody,
    GetConsumerStatusBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from .heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from .register import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from .route import BrokerData, ClusterInfo, KVTable, QueueData, TopicList, TopicRouteData

__all__ = [
    "BrokerData",
    "ClusterInfo",
    "Connection",
    "ConsumeStats",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerListBody",
    "ConsumerRunningInfo",
    "DataVersion",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "HeartbeatData",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "OffsetWrapper",
    "ProducerData",
    "QueueData",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
]
