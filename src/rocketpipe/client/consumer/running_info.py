"""The push consumer's GET_CONSUMER_RUNNING_INFO answer (L3).

Mirrors ``DefaultMQPushConsumerImpl.consumerRunningInfo``: the settings as properties (Java
field names; durations in ms, ``consumeTimeout`` in minutes, sizes in MiB) plus
``PROP_CONSUMEORDERLY``, ``PROP_THREADPOOL_CORE_SIZE``, ``PROP_CONSUMER_START_TIMESTAMP`` and
``PROP_CONSUME_TYPE``; the subscriptions; one ``ProcessQueueInfo`` per held queue
(``ProcessQueue.fillProcessQueueInfo``, loop times turned into epoch ms); a ``ConsumeStatus``
per subscribed topic (``ConsumerStatsManager.consumeStatus``).

Imports sibling client modules and protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...protocol.bodies.consumer import ConsumerRunningInfo
from .orderly import OrderlyProcessQueue
from .stats import zero_consume_status

if TYPE_CHECKING:
    from ...protocol.bodies.heartbeat import SubscriptionData
    from ...protocol.message import MessageQueue
    from .pop_push import PopSettings
    from .pull import PullRequest, PullSettings
    from .push_view import PushConsumerView
    from .stats import ConsumerStats


def push_properties(
    consumer: PushConsumerView, settings: PullSettings, pop: PopSettings, start_ms: int
) -> dict[str, str]:
    """The ``properties`` of the running info: settings under their Java names."""
    c, s = consumer, settings
    cfg = c.runtime.config
    return {
        "consumerGroup": c.group,
        "messageModel": c.message_model.value,
        "consumeFromWhere": c.consume_from_where.value,
        "consumeTimestamp": c.consume_timestamp,
        "consumeThreadMin": str(c.consume_thread_max),
        "consumeThreadMax": str(c.consume_thread_max),
        "consumeMessageBatchMaxSize": str(c.consume_message_batch_max_size),
        "pullBatchSize": str(s.pull_batch_size),
        "pullInterval": str(int(s.pull_interval * 1000)),
        "pullThresholdForQueue": str(s.limits.pull_threshold_for_queue),
        "pullThresholdSizeForQueue": str(s.limits.pull_threshold_size_for_queue),
        "consumeConcurrentlyMaxSpan": str(s.limits.consume_concurrently_max_span),
        "maxReconsumeTimes": str(c.max_reconsume_times),
        "suspendCurrentQueueTimeMillis": str(c.suspend_current_queue_time_millis),
        "consumeTimeout": str(int(c.consume_timeout // 60)),
        "postSubscriptionWhenPull": str(s.post_subscription_when_pull).lower(),
        "allocateMessageQueueStrategy": getattr(c.allocate_strategy, "__name__", repr(c.allocate_strategy)),
        "namesrvAddr": cfg.namesrv_addr,
        "clientIP": cfg.client_ip,
        "instanceName": cfg.instance_name,
        "unitMode": "false",
        "clientRebalance": str(c.client_rebalance).lower(),
        "popThresholdForQueue": str(pop.pop_threshold_for_queue),
        "popInvisibleTime": str(round(pop.pop_invisible_time * 1000)),
        "popBatchNums": str(pop.pop_batch_nums),
        "PROP_CONSUMEORDERLY": str(c.orderly).lower(),
        "PROP_THREADPOOL_CORE_SIZE": str(c.consume_thread_max),
        "PROP_CONSUMER_START_TIMESTAMP": str(start_ms),
        "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
    }


def process_queue_table(
    queues: Mapping[MessageQueue, PullRequest],
    commit_offset: Callable[[MessageQueue], int],
    now_ms: int,
    loop_now: float,
) -> dict[MessageQueue, dict[str, Any]]:
    """One ``ProcessQueueInfo`` per held queue (sorted); loop times become epoch ms.

    Args:
        queues: the held queues.
        commit_offset: the in-memory consume offset of a queue (−1 if none).
        now_ms: wall clock now, epoch ms.
        loop_now: the event loop's time now, seconds.
    """

    def wall(t: float) -> int:
        return int(now_ms - (loop_now - t) * 1000)

    table: dict[MessageQueue, dict[str, Any]] = {}
    for mq, req in sorted(queues.items()):
        pq = req.pq
        first = pq.first_offset()
        orderly_pq = pq if isinstance(pq, OrderlyProcessQueue) else None
        table[mq] = {
            "cachedMsgCount": pq.msg_count,
            "cachedMsgMaxOffset": pq.queue_offset_max if pq.msg_count else 0,
            "cachedMsgMinOffset": first if first is not None else 0,
            "cachedMsgSizeInMiB": pq.msg_size // (1024 * 1024),
            "commitOffset": commit_offset(mq),
            "droped": pq.dropped,
            "lastConsumeTimestamp": wall(pq.last_consume_time),
            "lastLockTimestamp": wall(orderly_pq.last_lock_time) if orderly_pq else 0,
            "lastPullTimestamp": wall(pq.last_pull_time),
            "locked": bool(orderly_pq and orderly_pq.locked),
            "transactionMsgCount": 0,
            "transactionMsgMaxOffset": 0,
            "transactionMsgMinOffset": 0,
            "tryUnlockTimes": orderly_pq.try_unlock_times if orderly_pq else 0,
        }
    return table


def running_info(
    properties: dict[str, str],
    subscriptions: Mapping[str, SubscriptionData],
    mq_table: dict[MessageQueue, dict[str, Any]],
    stats: ConsumerStats | None,
    group: str,
) -> ConsumerRunningInfo:
    """Assemble the answer; each subscribed topic's status comes from ``stats`` (zeros if None)."""
    status = {
        t: stats.consume_status(group, t) if stats is not None else zero_consume_status() for t in sorted(subscriptions)
    }
    return ConsumerRunningInfo(
        properties=properties,
        subscription_set=list(subscriptions.values()),
        mq_table=mq_table,
        status_table=status,
    )


__all__ = ["process_queue_table", "push_properties", "running_info"]
