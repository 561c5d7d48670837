"""Reserved topic names and broker ids shared by client, broker, name server and store (L1, pure).

Mirrors ``MixAll`` (``getRetryTopic`` / ``getDLQTopic``, ``MASTER_ID``), ``TopicValidator``
(``AUTO_CREATE_TOPIC_KEY_TOPIC``, ``RMQ_SYS_SCHEDULE_TOPIC``) and ``KeyBuilder`` (``parseGroup``).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "DLQ_GROUP_TOPIC_PREFIX",
    "MASTER_ID",
    "RETRY_GROUP_TOPIC_PREFIX",
    "SCHEDULE_TOPIC",
    "SYSTEM_TOPICS",
    "TIMER_TOPIC",
    "dlq_topic",
    "group_of_retry_topic",
    "is_retry_topic",
    "is_system_topic",
    "is_validator_system_topic",
    "retry_topic",
]

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
#: ``TopicValidator.RMQ_SYS_SCHEDULE_TOPIC``
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
#: ``TimerMessageStore.TIMER_TOPIC`` (5.x): timer messages wait here for their delivery time
TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
#: ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC``
AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
#: ``MixAll.MASTER_ID``
MASTER_ID: Final = 0


def retry_topic(group: str) -> str:
    """Return the retry topic of a consumer group.

    >>> retry_topic("cg")
    '%RETRY%cg'
    """
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """Return the dead-letter topic of a consumer group.

    >>> dlq_topic("cg")
    '%DLQ%cg'
    """
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    """True for ``%RETRY%...`` topics.

    >>> is_retry_topic("%RETRY%cg"), is_retry_topic("T")
    (True, False)
    """
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def group_of_retry_topic(topic: str) -> str:
    """Return the group of ``%RETRY%<group>`` (``KeyBuilder.parseGroup``; POP v2 ``+topic`` cut)."""
    group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
    return group.split("+", 1)[0]


#: TopicValidator.SYSTEM_TOPIC_SET (4.9/5.x common part)
SYSTEM_TOPICS: Final = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


def is_system_topic(topic: str) -> bool:
    """``TopicValidator.isSystemTopic`` (set or ``rmq_sys_`` prefix), plus retry and DLQ topics."""
    return topic in SYSTEM_TOPICS or topic.startswith(("rmq_sys_", "%RETRY%", "%DLQ%"))


def is_validator_system_topic(topic: str) -> bool:
    """``TopicValidator.isSystemTopic`` exactly: the system topic set or the ``rmq_sys_`` prefix.

    Retry and DLQ topics are not system topics here (the metrics' ``is_system`` label).
    """
    return topic in SYSTEM_TOPICS or topic.startswith("rmq_sys_")
