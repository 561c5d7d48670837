"""Admin bodies (L1, sans-IO): ``SubscriptionGroupConfig`` (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP),
``TopicStatsTable``/``TopicOffset`` (GET_TOPIC_STATS_INFO), ``ConsumeStats``/``OffsetWrapper``
(GET_CONSUME_STATS), ``ResetOffsetBody`` (RESET_CONSUMER_CLIENT_OFFSET / INVOKE_BROKER_TO_RESET_OFFSET),
``GroupList`` (QUERY_TOPIC_CONSUME_BY_WHO), ``SubscriptionGroupWrapper``
(GET_ALL_SUBSCRIPTIONGROUP_CONFIG).

Mirrors ``remoting/protocol/{subscription/SubscriptionGroupConfig,admin/TopicStatsTable,
admin/TopicOffset,admin/ConsumeStats,admin/OffsetWrapper,body/ResetOffsetBody,body/GroupList,
body/SubscriptionGroupWrapper}``.
``Map<MessageQueue, …>`` tables are written with object-literal keys as fastjson does (§4.2) and
read in any known shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..message import MessageQueue
from . import javajson as jj

__all__ = [
    "ConsumeStats",
    "GroupList",
    "OffsetWrapper",
    "ResetOffsetBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
]


@dataclass(slots=True)
class SubscriptionGroupConfig:
    """A consumer group's configuration on a broker (Java ``SubscriptionGroupConfig``).

    Attributes:
        group_name: group.
        consume_enable: False makes pulls answer NO_PERMISSION.
        consume_from_min_enable: allow consuming from the min offset.
        consume_broadcast_enable: allow BROADCASTING consumers.
        consume_message_orderly: 5.x orderly flag.
        retry_queue_nums: queues of ``%RETRY%<group>``.
        retry_max_times: max redeliveries before the DLQ.
        group_retry_policy: 5.x retry policy bean (parsed JSON), or None.
        broker_id: suggested broker id when consuming normally.
        which_broker_when_consume_slowly: suggested broker id when lagging.
        notify_consumer_ids_changed_enable: send NOTIFY_CONSUMER_IDS_CHANGED.
        group_sys_flag: 5.x.
        consume_timeout_minute: 5.x.
        subscription_data_set: 5.x simple subscriptions (parsed JSON), or None.
        attributes: 5.x attributes.
    """

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    group_retry_policy: dict[str, Any] | None = None
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    subscription_data_set: list[Any] | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        d: dict[str, Any] = {
            "attributes": self.attributes,
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "consumeMessageOrderly": self.consume_message_orderly,
            "consumeTimeoutMinute": self.consume_timeout_minute,
            "groupName": self.group_name,
        }
        if self.group_retry_policy is not None:
            d["groupRetryPolicy"] = self.group_retry_policy
        d["groupSysFlag"] = self.group_sys_flag
        d["notifyConsumerIdsChangedEnable"] = self.notify_consumer_ids_changed_enable
        d["retryMaxTimes"] = self.retry_max_times
        d["retryQueueNums"] = self.retry_queue_nums
        if self.subscription_data_set is not None:
            d["subscriptionDataSet"] = self.subscription_data_set
        d["whichBrokerWhenConsumeSlowly"] = self.which_broker_when_consume_slowly
        return d

    @classmethod
    def from_obj(cls, d: Any) -> SubscriptionGroupConfig:
        """Build from a parsed bean (missing keys take the Java defaults)."""
        d = jj.as_dict(d)
        grp = d.get("groupRetryPolicy")
        sds = d.get("subscriptionDataSet")
        return cls(
            group_name=jj.as_str(d.get("groupName"), "") or "",
            consume_enable=jj.as_bool(d.get("consumeEnable"), True),
            consume_from_min_enable=jj.as_bool(d.get("consumeFromMinEnable"), True),
            consume_broadcast_enable=jj.as_bool(d.get("consumeBroadcastEnable"), True),
            consume_message_orderly=jj.as_bool(d.get("consumeMessageOrderly"), False),
            retry_queue_nums=jj.as_int(d.get("retryQueueNums"), 1),
            retry_max_times=jj.as_int(d.get("retryMaxTimes"), 16),
            group_retry_policy=grp if isinstance(grp, dict) else None,
            broker_id=jj.as_int(d.get("brokerId"), 0),
            which_broker_when_consume_slowly=jj.as_int(d.get("whichBrokerWhenConsumeSlowly"), 1),
            notify_consumer_ids_changed_enable=jj.as_bool(d.get("notifyConsumerIdsChangedEnable"), True),
            group_sys_flag=jj.as_int(d.get("groupSysFlag"), 0),
            consume_timeout_minute=jj.as_int(d.get("consumeTimeoutMinute"), 15),
            subscription_data_set=sds if isinstance(sds, list) else None,
            attributes={str(k): jj.as_str(v, "") or "" for k, v in jj.as_dict(d.get("attributes")).items()},
        )

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> SubscriptionGroupConfig:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))


@dataclass(slots=True)
class TopicOffset:
    """Offsets of one queue (Java ``TopicOffset``).

    Attributes:
        min_offset: smallest available offset.
        max_offset: next offset to be written.
        last_update_timestamp: store time of the last message, ms (0 if empty).
    """

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_obj(cls, d: Any) -> TopicOffset:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            jj.as_int(d.get("minOffset")), jj.as_int(d.get("maxOffset")), jj.as_int(d.get("lastUpdateTimestamp"))
        )


@dataclass(slots=True)
class TopicStatsTable:
    """GET_TOPIC_STATS_INFO response body (Java ``TopicStatsTable``).

    Attributes:
        offset_table: queue -> offsets.
    """

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Encode with object-literal MessageQueue keys (fastjson form)."""
        return jj.dumps({"offsetTable": {mq: self.offset_table[mq].to_obj() for mq in sorted(self.offset_table)}})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> TopicStatsTable:
        """Decode any MessageQueue-map shape.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(jj.message_queue_map(d.get("offsetTable"), TopicOffset.from_obj))


@dataclass(slots=True)
class OffsetWrapper:
    """Consumption state of one queue (Java ``OffsetWrapper``).

    Attributes:
        broker_offset: queue max offset.
        consumer_offset: committed offset.
        pull_offset: max(consumer offset, last pull offset).
        last_timestamp: store time of the last consumed message, ms.
    """

    broker_offset: int = 0
    consumer_offset: int = 0
    pull_offset: int = 0
    last_timestamp: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
            "pullOffset": self.pull_offset,
        }

    @classmethod
    def from_obj(cls, d: Any) -> OffsetWrapper:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            jj.as_int(d.get("brokerOffset")),
            jj.as_int(d.get("consumerOffset")),
            jj.as_int(d.get("pullOffset")),
            jj.as_int(d.get("lastTimestamp")),
        )


@dataclass(slots=True)
class ConsumeStats:
    """GET_CONSUME_STATS response body (Java ``ConsumeStats``).

    Attributes:
        offset_table: queue -> consumption state.
        consume_tps: consumed messages per second.
    """

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """Total lag: sum of broker offset - consumer offset (Java ``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def encode(self) -> bytes:
        """Encode with object-literal MessageQueue keys (fastjson form)."""
        return jj.dumps(
            {
                "consumeTps": float(self.consume_tps),
                "offsetTable": {mq: self.offset_table[mq].to_obj() for mq in sorted(self.offset_table)},
            }
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ConsumeStats:
        """Decode any MessageQueue-map shape.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(jj.message_queue_map(d.get("offsetTable"), OffsetWrapper.from_obj), jj.as_float(d.get("consumeTps")))


@dataclass(slots=True)
class ResetOffsetBody:
    """RESET_CONSUMER_CLIENT_OFFSET request / INVOKE_BROKER_TO_RESET_OFFSET response body
    (Java ``ResetOffsetBody``). The C++ list form (``ResetOffsetBodyForC``) is also decoded.

    Attributes:
        offset_table: queue -> new offset.
    """

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Encode with object-literal MessageQueue keys (fastjson form)."""
        return jj.dumps({"offsetTable": dict(sorted(self.offset_table.items()))})

    def encode_for_c(self) -> bytes:
        """Encode the list form sent to CPP clients (Java ``ResetOffsetBodyForC``)."""
        return jj.dumps(
            {
                "offsetTable": [
                    {"brokerName": mq.broker_name, "offset": off, "queueId": mq.queue_id, "topic": mq.topic}
                    for mq, off in sorted(self.offset_table.items())
                ]
            }
        )

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> ResetOffsetBody:
        """Decode the map (any key shape) or the C++ list-of-objects form.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        table = d.get("offsetTable")
        if isinstance(table, list) and all(isinstance(x, dict) for x in table):
            out: dict[MessageQueue, int] = {}
            for x in table:
                mq = jj.message_queue_from(x)
                if mq is not None:
                    out[mq] = jj.as_int(x.get("offset"))
            return cls(out)
        return cls(jj.message_queue_map(table, jj.as_int))


@dataclass(slots=True)
class GroupList:
    """QUERY_TOPIC_CONSUME_BY_WHO response body (Java ``GroupList``).

    Attributes:
        group_list: consumer groups.
    """

    group_list: set[str] = field(default_factory=set)

    def encode(self) -> bytes:
        """Encode (groups sorted)."""
        return jj.dumps({"groupList": sorted(self.group_list)})

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> GroupList:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls({x for x in jj.as_list(d.get("groupList")) if isinstance(x, str)})


@dataclass(slots=True)
class SubscriptionGroupWrapper:
    """Every subscription group of a broker (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201).

    Mirrors what Java's broker answers, ``SubscriptionGroupManager.encode()`` (read by clients
    as ``SubscriptionGroupWrapper``): ``subscriptionGroupTable`` (group -> bean),
    ``dataVersion``, and the 5.x ``forbiddenTable`` (group -> topic -> forbidden bits).

    Attributes:
        subscription_group_table: group name -> config.
        data_version: ``{"counter", "stateVersion", "timestamp"}`` of the table (parsed JSON).
        forbidden_table: 5.x per-topic forbidden bits of each group.
    """

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: dict[str, Any] = field(default_factory=dict)
    forbidden_table: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson form (keys sorted as fastjson writes beans)."""
        return {
            "dataVersion": self.data_version,
            "forbiddenTable": self.forbidden_table,
            "subscriptionGroupTable": {g: c.to_obj() for g, c in self.subscription_group_table.items()},
        }

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> SubscriptionGroupWrapper:
        """Decode (4.9 bodies have no ``forbiddenTable``).

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        table = {
            str(g): SubscriptionGroupConfig.from_obj(c) for g, c in jj.as_dict(d.get("subscriptionGroupTable")).items()
        }
        forbidden = {
            str(g): {str(t): jj.as_int(v) for t, v in jj.as_dict(m).items()}
            for g, m in jj.as_dict(d.get("forbiddenTable")).items()
        }
        return cls(table, jj.as_dict(d.get("dataVersion")), forbidden)
