"""Topic configuration table (L3): validation, permissions, TBW102 auto-creation, data version.

Mirrors ``TopicConfigManager`` (``createTopicInSendMessageMethod``,
``createTopicInSendMessageBackMethod``, ``updateTopicConfig``), ``TopicValidator`` and
``DataVersion``; a topic's 5.x attributes follow ``TopicConfigManager.updateTopicConfig``
(rules in :mod:`rocketpipe.protocol.topic_attributes`). The table is plain state owned by the event loop; persistence to
``config/topics.json`` is done by the broker with ``rocketpipe.store.json_file`` using
:meth:`TopicTable.to_json` / :meth:`TopicTable.load_json` (read at start by
:mod:`.metadata`, which checks ``JSON_SHAPE`` and rebuilds lost topics from the consume
queues). Imports protocol constants only.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Final

from ..protocol import sysflag as sf
from ..protocol.names import AUTO_CREATE_TOPIC_KEY_TOPIC as AUTO_CREATE_TOPIC_KEY_TOPIC
from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, TIMER_TOPIC
from ..protocol.names import SCHEDULE_TOPIC as SCHEDULE_TOPIC
from ..protocol.topic_attributes import TopicMessageType, topic_message_type

log = logging.getLogger(__name__)

SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
#: TopicValidator.RMQ_SYS_BENCHMARK_TOPIC
BENCHMARK_TOPIC: Final = "BenchmarkTest"
#: TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX
SYNC_BROKER_MEMBER_GROUP_PREFIX: Final = "rmq_sys_SYNC_BROKER_MEMBER_"
#: BrokerConfig.msgTraceTopicName default (TopicValidator.RMQ_SYS_TRACE_TOPIC)
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
#: TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
#: TopicValidator.TOPIC_MAX_LENGTH; retry/DLQ topics may reach 255 (5.x).
TOPIC_MAX_LENGTH: Final = 127
RETRY_TOPIC_MAX_LENGTH: Final = 255
#: 5.x group name limit (so that %RETRY%<group> fits 127)
GROUP_MAX_LENGTH: Final = 120
_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def validate_topic(topic: str | None) -> str | None:
    """Check a topic name like ``TopicValidator.validateTopic``.

    Returns:
        None when valid, else the remark to answer with (INVALID_PARAMETER).
    """
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if not _VALID_NAME.match(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    limit = (
        RETRY_TOPIC_MAX_LENGTH
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
        else TOPIC_MAX_LENGTH
    )
    if len(topic) > limit:
        return f"The specified topic is longer than topic max length {limit}."
    return None


def validate_group(group: str | None) -> str | None:
    """Check a group name (same characters as topics, at most 120 chars).

    Returns:
        None when valid, else the remark to answer with.
    """
    if group is None or not group.strip():
        return "the specified group is blank"
    if not _VALID_NAME.match(group):
        return "the specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}"
    return None


def is_not_allowed_send_topic(topic: str) -> bool:
    """True for system topics clients may not send to (NO_PERMISSION)."""
    return topic in NOT_ALLOWED_SEND_TOPICS


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic's configuration (Java ``TopicConfig``; JSON keys in :meth:`to_json`).

    Attributes:
        topic_name: the topic.
        read_queue_nums: queues consumers read (ids ``0..n-1``).
        write_queue_nums: queues producers write.
        perm: PermName bits.
        topic_filter_type: ``SINGLE_TAG`` or ``MULTI_TAG``.
        topic_sys_flag: TopicSysFlag bits.
        order: orderly-topic marker.
        attributes: 5.x ``TopicConfig.attributes`` (``message.type`` …; keys without sign, see
            :mod:`rocketpipe.protocol.topic_attributes`); empty by default. Left out of the hash.
    """

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = sf.PERM_READ | sf.PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def queue_nums(self) -> int:
        """``max(read, write)``: the queue ids a send may target."""
        return max(self.read_queue_nums, self.write_queue_nums)

    @property
    def topic_message_type(self) -> TopicMessageType:
        """``TopicConfig.getTopicMessageType``: the ``message.type`` attribute, NORMAL when unset.

        Raises:
            ValueError: a stored value that is no ``TopicMessageType`` name.
        """
        return topic_message_type(self.attributes)

    def to_json(self) -> dict[str, Any]:
        """Return the fastjson bean form (Java field names; ``attributes`` always present, as
        a 5.x broker writes it)."""
        return {
            "attributes": dict(self.attributes),
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TopicConfig:
        """Build from the bean form; missing keys take Java's defaults (``attributes``: ``{}``;
        a 4.x file has none).

        Raises:
            KeyError, TypeError, ValueError: no ``topicName``, non-numeric counts or
            ``attributes`` that is not an object.
        """
        attributes = d.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise TypeError("attributes is not an object")
        return cls(
            topic_name=str(d["topicName"]),
            read_queue_nums=int(d.get("readQueueNums", 16)),
            write_queue_nums=int(d.get("writeQueueNums", 16)),
            perm=int(d.get("perm", 6)),
            topic_filter_type=str(d.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(d.get("topicSysFlag", 0)),
            order=bool(d.get("order", False)),
            attributes={str(k): "" if v is None else str(v) for k, v in attributes.items()},
        )


@dataclass(slots=True)
class DataVersion:
    """Java ``DataVersion``: bumped on every topic-table change so name servers re-read it."""

    state_version: int = 0
    timestamp: int = 0
    counter: int = 0

    def next_version(self, now_ms: int) -> None:
        """Advance the version (``DataVersion.nextVersion``)."""
        self.timestamp = now_ms
        self.counter += 1

    def to_json(self) -> dict[str, int]:
        """Return ``{"stateVersion", "timestamp", "counter"}``."""
        return {"stateVersion": self.state_version, "timestamp": self.timestamp, "counter": self.counter}


@dataclass(slots=True)
class TopicTable:
    """Topic configs of one broker.

    Args:
        broker_name, cluster_name: names of the per-broker / per-cluster system topics.
        auto_create_topic_enable: keep TBW102 with PERM_INHERIT.
        default_topic_queue_nums: queue count of TBW102.
        schedule_queue_nums: queues of ``SCHEDULE_TOPIC_XXXX`` (number of delay levels).
        now_ms: wall time for the data version.
    """

    broker_name: str
    cluster_name: str
    auto_create_topic_enable: bool = True
    default_topic_queue_nums: int = 8
    schedule_queue_nums: int = 18
    trace_topic: str | None = None
    revive_queue_num: int = 8
    timer_wheel_enable: bool = True
    topics: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    dirty: bool = False
    #: required top-level keys of ``topics.json`` (a file without them counts as bad)
    JSON_SHAPE: ClassVar[dict[str, type]] = {"topicConfigTable": dict}

    def create_system_topics(self, now_ms: int) -> None:
        """Create the topics a Java 5.3.3 broker creates at start (``TopicConfigManager.init``):
        self-test, ``TBW102`` (with ``autoCreateTopicEnable``), the benchmark topic (1024
        queues), the cluster- and broker-named topics, the offset-moved event, the schedule
        topic, the trace topic (with ``traceTopicEnable``), ``<cluster>_REPLY_TOPIC``, the POP
        revive topic, ``rmq_sys_SYNC_BROKER_MEMBER_<broker>``, the two transaction topics and
        the timer topic (with ``timerWheelEnable``)."""
        rw = sf.PERM_READ | sf.PERM_WRITE
        system = [TopicConfig(SELF_TEST_TOPIC, 1, 1)]
        if self.auto_create_topic_enable:
            n = self.default_topic_queue_nums
            system.append(TopicConfig(AUTO_CREATE_TOPIC_KEY_TOPIC, n, n, sf.PERM_INHERIT | rw))
        system += [
            TopicConfig(BENCHMARK_TOPIC, 1024, 1024),
            TopicConfig(self.cluster_name, 16, 16, sf.PERM_INHERIT | rw),
            TopicConfig(self.broker_name, 1, 1, sf.PERM_INHERIT | rw),
            TopicConfig(OFFSET_MOVED_EVENT, 1, 1),
            TopicConfig(SCHEDULE_TOPIC, self.schedule_queue_nums, self.schedule_queue_nums),
        ]
        if self.trace_topic:
            system.append(TopicConfig(self.trace_topic, 1, 1))
        system += [
            TopicConfig(f"{self.cluster_name}_REPLY_TOPIC", 1, 1),
            TopicConfig(f"rmq_sys_REVIVE_LOG_{self.cluster_name}", self.revive_queue_num, self.revive_queue_num),
            TopicConfig(f"{SYNC_BROKER_MEMBER_GROUP_PREFIX}{self.broker_name}", 1, 1, sf.PERM_INHERIT),
            TopicConfig(TRANS_HALF_TOPIC, 1, 1),
            TopicConfig(TRANS_OP_HALF_TOPIC, 1, 1),
        ]
        if self.timer_wheel_enable:
            system.append(TopicConfig(TIMER_TOPIC, 1, 1))
        for tc in system:
            self.topics[tc.topic_name] = tc
        self.data_version.next_version(now_ms)

    def get(self, topic: str) -> TopicConfig | None:
        """Return the config of ``topic``, or None."""
        return self.topics.get(topic)

    def put(self, tc: TopicConfig, now_ms: int) -> bool:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC).

        Returns:
            True when the table changed (an identical config is a no-op).
        """
        if self.topics.get(tc.topic_name) == tc:
            return False
        self.topics[tc.topic_name] = tc
        self.data_version.next_version(now_ms)
        self.dirty = True
        return True

    def delete(self, topic: str, now_ms: int) -> bool:
        """Remove a topic; return True when it existed."""
        if self.topics.pop(topic, None) is None:
            return False
        self.data_version.next_version(now_ms)
        self.dirty = True
        return True

    def create_in_send(
        self, topic: str, default_topic: str | None, default_topic_queue_nums: int, topic_sys_flag: int, now_ms: int
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from the template ``default_topic`` (``createTopicInSendMessageMethod``).

        The template must exist and carry PERM_INHERIT (TBW102 loses it when auto-creation is
        off). Queues = ``max(0, min(default_topic_queue_nums, template.write_queue_nums))``,
        perm = template perm without INHERIT.

        Returns:
            The (possibly pre-existing) config, or None when the topic cannot be created.
        """
        existing = self.topics.get(topic)
        if existing is not None:
            return existing
        template = self.topics.get(default_topic or "")
        if template is None:
            return None
        perm = template.perm
        if template.topic_name == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.auto_create_topic_enable:
            perm = sf.PERM_READ | sf.PERM_WRITE
        if not perm & sf.PERM_INHERIT:
            return None
        n = max(0, min(default_topic_queue_nums, template.write_queue_nums))
        if n <= 0:
            return None
        tc = TopicConfig(topic, n, n, perm & ~sf.PERM_INHERIT, template.topic_filter_type, topic_sys_flag)
        self.put(tc, now_ms)
        log.info("auto-created topic=%s queues=%d from template=%s", topic, n, template.topic_name)
        return tc

    def create_if_missing(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int, now_ms: int
    ) -> TopicConfig:
        """Return ``topic``'s config, creating it when missing (retry/DLQ topics).

        Mirrors ``createTopicInSendMessageBackMethod``.
        """
        existing = self.topics.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(topic, queue_nums, queue_nums, perm, "SINGLE_TAG", topic_sys_flag)
        self.put(tc, now_ms)
        return tc

    def to_json(self) -> dict[str, Any]:
        """Return the ``topics.json`` form (``TopicConfigSerializeWrapper``)."""
        return {
            "topicConfigTable": {name: tc.to_json() for name, tc in sorted(self.topics.items())},
            "dataVersion": self.data_version.to_json(),
        }

    def load_json(self, obj: Any) -> None:
        """Merge persisted topics over the system ones; skip malformed entries."""
        if not isinstance(obj, dict):
            return
        table = obj.get("topicConfigTable")
        if isinstance(table, dict):
            for name, d in table.items():
                try:
                    tc = TopicConfig.from_json(d)
                except (KeyError, TypeError, ValueError):
                    log.warning("topics.json: skipping malformed topic %r", name)
                    continue
                self.topics[tc.topic_name] = tc
        dv = obj.get("dataVersion")
        if isinstance(dv, dict):
            try:
                self.data_version.timestamp = int(dv.get("timestamp", 0))
                self.data_version.counter = int(dv.get("counter", 0)) + 1
            except (TypeError, ValueError):
                pass


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """A consumer group's configuration (Java ``SubscriptionGroupConfig``).

    Attributes follow the Java fields (snake_case); :meth:`to_json` gives the bean form.
    """

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        """Return the bean form with Java field names."""
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SubscriptionGroupConfig:
        """Build from the bean form; unknown keys ignored, missing keys take Java defaults.

        Raises:
            KeyError, TypeError, ValueError: no ``groupName`` or a value of the wrong type.
        """
        base = cls(group_name=str(d["groupName"]))
        kwargs: dict[str, Any] = {}
        for name in (
            "consume_enable",
            "consume_from_min_enable",
            "consume_broadcast_enable",
            "notify_consumer_ids_changed_enable",
        ):
            if _camel(name) in d:
                kwargs[name] = bool(d[_camel(name)])
        for name in (
            "retry_queue_nums",
            "retry_max_times",
            "broker_id",
            "which_broker_when_consume_slowly",
            "group_sys_flag",
        ):
            if _camel(name) in d:
                kwargs[name] = int(d[_camel(name)])
        return replace(base, **kwargs)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


@dataclass(slots=True)
class SubscriptionGroupTable:
    """Subscription-group configs (``SubscriptionGroupManager``)."""

    auto_create: bool = True
    groups: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    dirty: bool = False
    #: required top-level keys of ``subscriptionGroup.json``
    JSON_SHAPE: ClassVar[dict[str, type]] = {"subscriptionGroupTable": dict}

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """Return the group's config, auto-creating it when allowed (``findSubscriptionGroupConfig``)."""
        cfg = self.groups.get(group)
        if cfg is None and self.auto_create and validate_group(group) is None:
            cfg = self.groups[group] = SubscriptionGroupConfig(group)
            self.dirty = True
        return cfg

    def put(self, cfg: SubscriptionGroupConfig) -> None:
        """Create or replace a group config (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
        self.groups[cfg.group_name] = cfg
        self.dirty = True

    def to_json(self) -> dict[str, Any]:
        """Return the ``subscriptionGroup.json`` form."""
        return {"subscriptionGroupTable": {g: c.to_json() for g, c in sorted(self.groups.items())}}

    def load_json(self, obj: Any) -> None:
        """Load persisted groups; skip malformed entries."""
        table = obj.get("subscriptionGroupTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        for name, d in table.items():
            try:
                cfg = SubscriptionGroupConfig.from_json(d)
            except (KeyError, TypeError, ValueError):
                log.warning("subscriptionGroup.json: skipping malformed group %r", name)
                continue
            self.groups[cfg.group_name] = cfg
