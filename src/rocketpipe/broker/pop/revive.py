"""The revive step (L3): expired checkpoints → pop retry topic (or ``%DLQ%<group>``).

Mirrors ``PopReviveService.reviveRetry`` / ``addRetryTopicIfNotExist``: for every message of a
checkpoint whose deadline passed without an ack, read it back from the store and put a copy —
body, flag, sysflag, born time and all properties kept, ``reconsumeTimes + 1``, ``1ST_POP_TIME``
set — into queue 0 of ``%RETRY%<group>_<topic>`` (``%RETRY%<group>+<topic>`` with retry topic
v2), which is created on first use with one queue and perm 6. The copy is stored at once (no
delay level), so it is visible to the next pop. See :func:`.checkpoint.decide_revive` for the
dead-letter rule.

Synchronous (the store is); :class:`~.service.PopService` runs :meth:`Reviver.revive_due` in its
loop and tests call it directly after advancing a fake clock.
"""

from __future__ import annotations

import logging

from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.headers.pop import pop_retry_topic
from ...store import MessageInner
from .. import retry
from .checkpoint import Checkpoint, decide_revive, first_pop_time_properties
from .context import PopContext

log = logging.getLogger(__name__)

#: ``PopAckConstants.retryQueueNum``: queues of a pop retry topic.
POP_RETRY_QUEUE_NUMS = 1


class Reviver:
    """Moves expired popped messages to their retry topic or the DLQ."""

    def __init__(self, service: PopContext) -> None:
        self.service = service
        self.revived = 0
        self.dead_lettered = 0

    def revive_due(self, now_ms: int) -> int:
        """Revive every checkpoint due at ``now_ms``; return how many messages were moved.

        A message that cannot be read any more (deleted from the store) is dropped; a failed
        put leaves it pending, retried on the next call.
        """
        svc = self.service
        moved = 0
        woken: set[str] = set()
        for ck in svc.table.due(now_ms):
            for offset in list(ck.pending):
                outcome = self._revive_one(ck, offset)
                if outcome is None:
                    break  # put failed: keep the rest of this checkpoint for the next round
                svc.table.settle(ck, offset)
                if outcome:
                    moved += 1
                    woken.add(ck.origin_topic)
        for topic in woken:
            svc.notify_message_arriving(topic)
        return moved

    def _read(self, ck: Checkpoint, offset: int) -> pm.MessageExt | None:
        store = self.service.broker.store
        res = store.get_message(ck.topic, ck.queue_id, offset, 1)
        for buf in res.buffers:
            for rec in pm.decode_records(buf, decompress_body=False):
                if rec.queue_offset == offset:
                    return rec
        return None

    def _revive_one(self, ck: Checkpoint, offset: int) -> bool | None:
        """Move one message. Returns True when moved, False when it no longer exists, None on
        a failed put."""
        svc = self.service
        b = svc.broker
        rec = self._read(ck, offset)
        if rec is None:
            log.warning(
                "pop revive: message gone topic=%s queue=%d offset=%d group=%s", ck.topic, ck.queue_id, offset, ck.group
            )
            return False
        gcfg = b.groups_config.find(ck.group)
        max_times = gcfg.retry_max_times if gcfg is not None else retry.DEFAULT_RETRY_MAX_TIMES
        decision = decide_revive(
            group=ck.group,
            ck_topic=ck.topic,
            retry_topic=pop_retry_topic(ck.origin_topic, ck.group, svc.config.retry_topic_v2),
            reconsume_times=rec.reconsume_times,
            max_times=max_times,
        )
        props = first_pop_time_properties(rec.properties, rec.reconsume_times, ck.pop_time)
        if decision.is_dlq:
            props.setdefault(pm.PROPERTY_RETRY_TOPIC, ck.origin_topic)
            if not props.get(pm.PROPERTY_ORIGIN_MESSAGE_ID):
                props[pm.PROPERTY_ORIGIN_MESSAGE_ID] = rec.offset_msg_id
            self._ensure_topic(decision.topic, retry.DLQ_NUMS_PER_GROUP, None)
        else:
            self._ensure_topic(decision.topic, POP_RETRY_QUEUE_NUMS, ck.group)
        inner = MessageInner(
            topic=decision.topic,
            queue_id=0,
            body=rec.body,
            flag=rec.flag,
            properties=props,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            born_host=b.address or rec.born_host,
            store_host=b.address or rec.store_host,
            reconsume_times=decision.reconsume_times,
        )
        result = b.put_message(inner)
        if not result.is_ok:
            log.warning("pop revive put failed topic=%s status=%s", decision.topic, result.status)
            return None
        if decision.is_dlq:
            self.dead_lettered += 1
        else:
            self.revived += 1
        log.debug(
            "pop revive group=%s %s[%d]@%d -> %s reconsume=%d",
            ck.group,
            ck.topic,
            ck.queue_id,
            offset,
            decision.topic,
            decision.reconsume_times,
        )
        return True

    def _ensure_topic(self, topic: str, queue_nums: int, group: str | None) -> None:
        b = self.service.broker
        if b.topics.get(topic) is not None:
            return
        b.topics.create_if_missing(topic, queue_nums, sf.PERM_READ | sf.PERM_WRITE, 0, b.clock.now_ms())
        b.topics_changed()
        if (
            group is not None
            and self.service.table.pop_offset(group, topic, 0) is None
            and b.offsets.query(group, topic, 0) < 0
        ):
            # initPopRetryOffset: a new pop retry topic is read from its start
            self.service.table.set_pop_offset(group, topic, 0, 0)
            b.offsets.commit(group, topic, 0, 0)
