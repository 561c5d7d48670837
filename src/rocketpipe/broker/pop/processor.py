"""POP_MESSAGE (200050), ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151) and
CHANGE_MESSAGE_INVISIBLETIME (200053) handlers (L3).

Mirrors ``PopMessageProcessor`` (the non-KV path), ``AckMessageProcessor`` and
``ChangeInvisibleTimeProcessor`` of apache/rocketmq 5.x:

* POP: checks (timeout-too-much, broker/topic perm, ``maxMsgNums <= 32``, queue id, group),
  then, with probability ``pop_from_retry_probability`` %, the group's pop retry topic first;
  the requested queue (or every queue from a random start for ``queueId = -1``); and the retry
  topic when the batch is not full. Per queue: the pop offset (pending admin reset, else this
  broker's pop offset, else the group's consumer offset, else ``initMode``: MIN = min offset,
  MAX = max offset − 1 as Java) is read, the store read with the tag filter, a checkpoint
  recorded for the messages found and the offset advanced to the read's ``nextBeginOffset``
  at once (also committed to the consumer offset table). Messages of a retry topic are
  re-encoded with the subscribed topic and a ``POP_CK`` property (``popResponseReturnActualRetryTopic``
  false, the Java default). With nothing found and ``pollTime > 0`` the request is held (long
  polling) until a message may be there or ``pollTime`` passes (then POLLING_TIMEOUT).
* ACK: TOPIC_NOT_EXIST / MESSAGE_ILLEGAL (queue id, bad handle) / NO_MESSAGE (offset outside
  the queue, or — rocketpipe — a handle whose checkpoint is unknown: already acked, changed
  or revived) / SUCCESS.
* CHANGE_INVISIBLETIME: the message moves to a new one-message checkpoint starting at its
  offset with pop time = now; the response carries ``popTime``/``invisibleTime``/``reviveQid``
  from which the client builds the new handle.

Orderly pop (``order=true``) is not implemented: answered SYSTEM_ERROR.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
from dataclasses import dataclass, field

from ...errors import InvalidArgumentError, ProtocolError
from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.bodies.heartbeat import SubscriptionData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.pop import (
    AckMessageRequestHeader,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ConsumeInitMode,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_msg_offset_info,
    build_start_offset_info,
    pop_retry_topic,
    real_topic,
)
from ...store.api import GetStatus
from ...transport import Connection, Router
from .. import retry
from ..processors.common import decode_header, error, require
from .checkpoint import PROPERTY_POP_CK, REVIVE_QUEUE_NUM
from .context import PopContext

log = logging.getLogger(__name__)

#: PopMessageProcessor: ``maxMsgNums`` above this is INVALID_PARAMETER.
MAX_POP_MSG_NUMS = 32
#: ``PopMessageRequestHeader.isTimeoutTooMuch`` tolerance, ms.
TIMEOUT_TOO_MUCH_MS = 500
_QUEUE_OFFSET = struct.Struct(">q")
_QUEUE_OFFSET_POS = 20  # TOTALSIZE, MAGIC, BODYCRC, QUEUEID, FLAG -> QUEUEOFFSET
_RESET_STATUSES = frozenset({GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY, GetStatus.OFFSET_FOUND_NULL})
_ADVANCE_STATUSES = frozenset(
    {GetStatus.FOUND, GetStatus.NO_MATCHED_MESSAGE, GetStatus.MESSAGE_WAS_REMOVING, GetStatus.OFFSET_FOUND_NULL}
)


#: Java answers POP / CHANGE_INVISIBLETIME errors with a response header of zeros
#: (``createResponseCommand(<header class>)``); its client decodes that header for
#: POLLING_TIMEOUT / POLLING_FULL / PULL_NOT_FOUND pops and for every change-invisible reply.
_ZERO_POP_HEADER: dict[str, str] = PopMessageResponseHeader().to_ext_fields()
_ZERO_CHANGE_HEADER: dict[str, str] = ChangeInvisibleTimeResponseHeader().to_ext_fields()


def _with_zero_header(resp: RemotingCommand, zero: dict[str, str]) -> RemotingCommand:
    if resp.code != ResponseCode.SUCCESS:
        for k, v in zero.items():
            resp.ext_fields.setdefault(k, v)
    return resp


@dataclass(slots=True)
class _PopBatch:
    """What one POP request collected so far."""

    max_nums: int
    pop_time: int
    revive_qid: int
    bodies: list[bytes | memoryview] = field(default_factory=list)
    count: int = 0
    rest: int = 0
    start_offset_info: str = ""
    msg_offset_info: str = ""

    @property
    def full(self) -> bool:
        return self.count >= self.max_nums


class PopProcessor:
    """Handlers of the POP codes."""

    def __init__(self, service: PopContext) -> None:
        self.service = service
        self.broker = service.broker
        self._rand = random.Random()
        self._ck_counter = 0

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.POP_MESSAGE, self.handle_pop)
        router.register(RequestCode.ACK_MESSAGE, self.handle_ack)
        router.register(RequestCode.BATCH_ACK_MESSAGE, self.handle_batch_ack)
        router.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self.handle_change_invisible_time)

    # ------------------------------------------------------------------ POP
    async def handle_pop(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """POP_MESSAGE: pop now, or hold up to ``pollTime`` when nothing is available."""
        b = self.broker
        h = decode_header(PopMessageRequestHeader, cmd)
        for name in ("consumer_group", "topic", "queue_id", "max_msg_nums", "invisible_time"):
            require(getattr(h, name), name)
        now = b.clock.now_ms()
        poll_ms = h.poll_time or 0
        if h.born_time and now - h.born_time - poll_ms > TIMEOUT_TOO_MUCH_MS:
            return _with_zero_header(
                error(
                    cmd, ResponseCode.POLLING_TIMEOUT, f"the broker[{b.config.host}] pop message is timeout too much"
                ),
                _ZERO_POP_HEADER,
            )
        checked = self._check(cmd, h)
        if isinstance(checked, RemotingCommand):
            return _with_zero_header(checked, _ZERO_POP_HEADER)
        codes = checked
        batch = self._pop(h, codes)
        if batch.count or poll_ms <= 0:
            return self._pop_response(cmd, h, batch)
        # long polling: wait for a possible arrival (or a revive), then pop again
        svc = self.service
        key = (h.topic or "", h.consumer_group or "", h.queue_id if h.queue_id is not None else -1)
        if not svc.polling_admit(key):
            return self._pop_response(cmd, h, batch, code=ResponseCode.POLLING_FULL)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + poll_ms / 1000.0
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                await svc.wait_for_arrival(h.topic or "", min(remaining, svc.config.poll_check_interval))
                if conn.is_closed:
                    return None
                if not self._maybe_available(h):
                    continue
                batch = self._pop(h, codes)
                if batch.count:
                    return self._pop_response(cmd, h, batch)
        finally:
            svc.polling_release(key)
        return self._pop_response(cmd, h, batch)

    def _check(self, cmd: RemotingCommand, h: PopMessageRequestHeader) -> RemotingCommand | frozenset[int] | None:
        b = self.broker
        if not sf.is_readable(b.config.broker_permission):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the broker[{b.config.host}] pop message is forbidden")
        if (h.max_msg_nums or 0) > MAX_POP_MSG_NUMS:
            return error(
                cmd, ResponseCode.INVALID_PARAMETER, f"the broker[{b.config.host}] pop message's num is greater than 32"
            )
        if h.order:
            return error(cmd, ResponseCode.SYSTEM_ERROR, "orderly pop is not supported by this broker")
        topic: str = h.topic  # type: ignore[assignment]
        tc = b.topics.get(topic)
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not sf.is_readable(tc.perm):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden")
        qid = h.queue_id if h.queue_id is not None else -1
        if qid >= tc.read_queue_nums:
            return error(
                cmd,
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{qid}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}]",
            )
        gcfg = b.groups_config.find(h.consumer_group or "")
        if gcfg is None:
            return error(
                cmd,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{h.consumer_group}] does not exist",
            )
        if not gcfg.consume_enable:
            return error(cmd, ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}")
        if not h.exp:
            return None
        expr_type = h.exp_type or "TAG"
        if expr_type != "TAG":
            return error(
                cmd,
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                "The broker does not support consumer to filter message by SQL92",
            )
        try:
            sd = SubscriptionData.build(topic, h.exp, expr_type)
        except InvalidArgumentError:
            return error(cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
        return None if sd.is_sub_all else frozenset(sd.code_set)

    def _pop(self, h: PopMessageRequestHeader, codes: frozenset[int] | None) -> _PopBatch:
        """One synchronous pass over the retry topic and the requested queue(s)."""
        b = self.broker
        svc = self.service
        topic: str = h.topic  # type: ignore[assignment]
        group: str = h.consumer_group  # type: ignore[assignment]
        self._ck_counter += 1
        batch = _PopBatch(max(1, h.max_msg_nums or 1), b.clock.now_ms(), self._ck_counter % REVIVE_QUEUE_NUM)
        rand = self._rand.randrange(100)
        need_retry = rand < svc.config.pop_from_retry_probability
        retry_topic = pop_retry_topic(topic, group, svc.config.retry_topic_v2)
        if need_retry:
            self._pop_topic(retry_topic, True, h, codes, batch, rand)
        qid = h.queue_id if h.queue_id is not None else -1
        if qid < 0:
            self._pop_topic(topic, False, h, codes, batch, rand)
        else:
            self._pop_queue(topic, False, qid, h, codes, batch)
        if not need_retry and not batch.full:
            self._pop_topic(retry_topic, True, h, codes, batch, rand)
        return batch

    def _pop_topic(
        self,
        topic: str,
        is_retry: bool,
        h: PopMessageRequestHeader,
        codes: frozenset[int] | None,
        batch: _PopBatch,
        rand: int,
    ) -> None:
        tc = self.broker.topics.get(topic)
        if tc is None:
            return
        n = tc.read_queue_nums
        for i in range(n):
            self._pop_queue(topic, is_retry, (rand + i) % n, h, codes, batch)

    def pop_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int:
        """The next offset to pop: a reset, else max(own pop table, the group's consumer offset).

        Mirrors ``PopMessageProcessor.getPopOffset``: the committed consumer offset (shared with
        PULL) is the floor and the pop buffer's offset may be ahead of it, so a group switched
        from PULL to POP at runtime does not get the already pulled messages popped again. A
        group new to the queue starts as ``getInitOffset``: MIN (and retry topics) at the min
        offset; MAX at 0 while the queue starts at 0 and its first message is in memory
        (``initPopOffsetByCheckMsgInMem``), else at the last message ("pop last one").
        """
        b = self.broker
        table = self.service.table
        reset = b.offsets.take_reset(group, topic, queue_id)
        if reset is not None:
            table.set_pop_offset(group, topic, queue_id, reset)
            return reset
        off = table.pop_offset(group, topic, queue_id)
        if off is not None:
            committed = b.offsets.query(group, topic, queue_id)
            if committed > off:
                table.set_pop_offset(group, topic, queue_id, committed)
                return committed
            return off
        off = b.offsets.query(group, topic, queue_id)
        if off < 0:
            if init_mode == ConsumeInitMode.MIN or retry.is_retry_topic(topic):
                off = b.store.get_min_offset(topic, queue_id)
            elif (
                b.config.init_pop_offset_by_check_msg_in_mem
                and b.store.get_min_offset(topic, queue_id) <= 0
                and b.store.check_in_mem_by_consume_offset(topic, queue_id, 0)
            ):
                off = 0  # a young queue: from its first message, as Java's getInitOffset
            else:
                off = max(0, b.store.get_max_offset(topic, queue_id) - 1)  # "pop last one"
            b.offsets.commit(group, topic, queue_id, off)
        table.set_pop_offset(group, topic, queue_id, off)
        return off

    def _advance(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.service.table.set_pop_offset(group, topic, queue_id, offset)
        if self.broker.offsets.query(group, topic, queue_id) != offset:
            self.broker.offsets.commit(group, topic, queue_id, offset)

    def _pop_queue(
        self,
        topic: str,
        is_retry: bool,
        queue_id: int,
        h: PopMessageRequestHeader,
        codes: frozenset[int] | None,
        batch: _PopBatch,
    ) -> None:
        b = self.broker
        svc = self.service
        group: str = h.consumer_group  # type: ignore[assignment]
        offset = self.pop_offset(group, topic, queue_id, h.init_mode or 0)
        if batch.full:
            batch.rest += max(0, b.store.get_max_offset(topic, queue_id) - offset)
            return
        tag_filter = None
        if codes is not None:
            wanted = codes
            tag_filter = lambda code: pm.int32(code) in wanted  # noqa: E731
        want = batch.max_nums - batch.count
        res = b.store.get_message(topic, queue_id, offset, want, tag_filter=tag_filter)
        if res.status in _RESET_STATUSES and res.next_begin_offset != offset:
            log.info("pop offset corrected %s@%s[%d] %d -> %d", topic, group, queue_id, offset, res.next_begin_offset)
            offset = res.next_begin_offset
            self._advance(group, topic, queue_id, offset)
            res = b.store.get_message(topic, queue_id, offset, want, tag_filter=tag_filter)
        if res.buffers:
            b.stats.on_get(topic, len(res.buffers), group=group, size=res.buffer_total_size)
            offsets = [_QUEUE_OFFSET.unpack_from(buf, _QUEUE_OFFSET_POS)[0] for buf in res.buffers]
            svc.table.add(
                group=group,
                topic=topic,
                origin_topic=h.topic or topic,
                queue_id=queue_id,
                start_offset=offset,
                pop_time=batch.pop_time,
                invisible_time=h.invisible_time or 0,
                revive_qid=batch.revive_qid,
                broker_name=b.config.broker_name,
                offsets=offsets,
            )
            batch.start_offset_info = build_start_offset_info(batch.start_offset_info, topic, queue_id, offset)
            batch.msg_offset_info = build_msg_offset_info(batch.msg_offset_info, topic, queue_id, offsets)
            if is_retry:
                for buf in res.buffers:
                    batch.bodies.append(self._recode_retry(buf, offset, batch, h))
            else:
                batch.bodies.extend(res.buffers)
            batch.count += len(res.buffers)
        if res.status in _ADVANCE_STATUSES and res.next_begin_offset > offset:
            self._advance(group, topic, queue_id, res.next_begin_offset)
        batch.rest += max(0, res.max_offset - max(res.next_begin_offset, offset))

    def _recode_retry(
        self, buf: bytes | memoryview, ck_offset: int, batch: _PopBatch, h: PopMessageRequestHeader
    ) -> bytes:
        """Re-encode a retry-topic record with the subscribed topic and its ``POP_CK``."""
        rec = pm.decode_records(buf, decompress_body=False)[0]
        props = dict(rec.properties)
        props.setdefault(
            PROPERTY_POP_CK,
            ExtraInfo.of(
                ck_offset,
                batch.pop_time,
                h.invisible_time or 0,
                batch.revive_qid,
                rec.topic,
                self.broker.config.broker_name,
                rec.queue_id,
                rec.queue_offset,
            ).build(),
        )
        return pm.encode_record(
            topic=h.topic or rec.topic,
            body=rec.body,
            properties=props,
            queue_id=rec.queue_id,
            flag=rec.flag,
            queue_offset=rec.queue_offset,
            physical_offset=rec.commit_log_offset,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            born_host=rec.born_host,
            store_timestamp=rec.store_timestamp,
            store_host=rec.store_host,
            reconsume_times=rec.reconsume_times,
            prepared_transaction_offset=rec.prepared_transaction_offset,
            crc=rec.body_crc,
        )

    def _maybe_available(self, h: PopMessageRequestHeader) -> bool:
        """Cheap check before re-running a held pop: does any queue read hold unread messages?"""
        b = self.broker
        group: str = h.consumer_group  # type: ignore[assignment]
        topic: str = h.topic  # type: ignore[assignment]
        table = self.service.table
        candidates: list[tuple[str, int]] = []
        qid = h.queue_id if h.queue_id is not None else -1
        tc = b.topics.get(topic)
        if tc is not None:
            candidates.extend((topic, q) for q in (range(tc.read_queue_nums) if qid < 0 else (qid,)))
        rt = pop_retry_topic(topic, group, self.service.config.retry_topic_v2)
        rtc = b.topics.get(rt)
        if rtc is not None:
            candidates.extend((rt, q) for q in range(rtc.read_queue_nums))
        for t, q in candidates:
            off = table.pop_offset(group, t, q)
            if off is None:  # unknown offset: let the pop decide
                return True
            if b.store.get_max_offset(t, q) > off:
                return True
        return False

    def _pop_response(
        self, cmd: RemotingCommand, h: PopMessageRequestHeader, batch: _PopBatch, code: ResponseCode | None = None
    ) -> RemotingCommand:
        rh = PopMessageResponseHeader(
            pop_time=batch.pop_time,
            invisible_time=h.invisible_time or 0,
            revive_qid=batch.revive_qid,
            rest_num=batch.rest,
            start_offset_info=batch.start_offset_info,
            msg_offset_info=batch.msg_offset_info,
        )
        if batch.count:
            body = b"".join(batch.bodies)
            return cmd.response(ResponseCode.SUCCESS, "FOUND", rh.to_ext_fields(), body)
        return cmd.response(int(code or ResponseCode.POLLING_TIMEOUT), "NO_MESSAGE_IN_QUEUE", rh.to_ext_fields())

    # ------------------------------------------------------------------ ACK
    def _check_queue(self, cmd: RemotingCommand, topic: str, queue_id: int) -> RemotingCommand | None:
        tc = self.broker.topics.get(topic)
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return error(
                cmd,
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}]",
            )
        return None

    async def handle_ack(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """ACK_MESSAGE: settle one popped message."""
        b = self.broker
        h = decode_header(AckMessageRequestHeader, cmd)
        for name in ("consumer_group", "topic", "queue_id", "extra_info", "offset"):
            require(getattr(h, name), name)
        topic: str = h.topic  # type: ignore[assignment]
        qid: int = h.queue_id  # type: ignore[assignment]
        offset: int = h.offset  # type: ignore[assignment]
        bad = self._check_queue(cmd, topic, qid)
        if bad is not None:
            return bad
        lo, hi = b.store.get_min_offset(topic, qid), b.store.get_max_offset(topic, qid)
        if offset < lo or offset > hi:
            return error(
                cmd, ResponseCode.NO_MESSAGE, f"offset is illegal, key:{topic}@{qid}, commit:{offset}, store:{lo}~{hi}"
            )
        try:
            ei = ExtraInfo.parse(h.extra_info)
        except InvalidArgumentError as exc:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, str(exc))
        ck = self.service.table.ack(
            h.consumer_group or "", topic, qid, ei.ck_queue_offset, ei.pop_time, offset, ei.invisible_time
        )
        if ck is None:
            return error(
                cmd, ResponseCode.NO_MESSAGE, f"no in-flight message for handle [{h.extra_info}] offset {offset}"
            )
        self.service.changed()
        return cmd.response(ResponseCode.SUCCESS)

    async def handle_batch_ack(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """BATCH_ACK_MESSAGE: settle every offset of every ``BatchAck`` (unknown ones ignored, as Java)."""
        b = self.broker
        try:
            body = BatchAckMessageRequestBody.decode(cmd.body) if cmd.body else None
        except ProtocolError as exc:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, str(exc))
        if body is None or not body.acks:
            return error(cmd, ResponseCode.NO_MESSAGE, "no acks")
        table = self.service.table
        for ba in body.acks:
            try:
                topic = real_topic(ba.topic, ba.consumer_group, ba.retry)
            except InvalidArgumentError:
                continue
            lo, hi = b.store.get_min_offset(topic, ba.queue_id), b.store.get_max_offset(topic, ba.queue_id)
            for offset in ba.offsets:
                if lo <= offset <= hi:
                    table.ack(
                        ba.consumer_group, topic, ba.queue_id, ba.start_offset, ba.pop_time, offset, ba.invisible_time
                    )
        self.service.changed()
        return cmd.response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ CHANGE_INVISIBLETIME
    async def handle_change_invisible_time(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """CHANGE_MESSAGE_INVISIBLETIME: move the message to a new checkpoint due ``invisibleTime`` from now.

        Error responses carry a zero ``ChangeInvisibleTimeResponseHeader`` as Java's do (the Java
        client decodes the header before it looks at the code).
        """
        return _with_zero_header(await self._change_invisible_time(cmd), _ZERO_CHANGE_HEADER)

    async def _change_invisible_time(self, cmd: RemotingCommand) -> RemotingCommand:
        b = self.broker
        h = decode_header(ChangeInvisibleTimeRequestHeader, cmd)
        for name in ("consumer_group", "topic", "queue_id", "extra_info", "offset", "invisible_time"):
            require(getattr(h, name), name)
        group: str = h.consumer_group  # type: ignore[assignment]
        topic: str = h.topic  # type: ignore[assignment]
        qid: int = h.queue_id  # type: ignore[assignment]
        offset: int = h.offset  # type: ignore[assignment]
        bad = self._check_queue(cmd, topic, qid)
        if bad is not None:
            return bad
        lo, hi = b.store.get_min_offset(topic, qid), b.store.get_max_offset(topic, qid)
        if offset < lo or offset >= hi:
            return error(
                cmd, ResponseCode.NO_MESSAGE, f"offset is illegal, key:{topic}@{qid}, offset:{offset}, store:{lo}~{hi}"
            )
        try:
            ei = ExtraInfo.parse(h.extra_info)
        except InvalidArgumentError as exc:
            return error(cmd, ResponseCode.MESSAGE_ILLEGAL, str(exc))
        table = self.service.table
        old = table.find(group, topic, qid, ei.ck_queue_offset, ei.pop_time, offset, ei.invisible_time)
        if old is None:
            return error(
                cmd, ResponseCode.NO_MESSAGE, f"no in-flight message for handle [{h.extra_info}] offset {offset}"
            )
        now = b.clock.now_ms()
        table.settle(old, offset)
        table.add(
            group=group,
            topic=topic,
            origin_topic=old.origin_topic,
            queue_id=qid,
            start_offset=offset,
            pop_time=now,
            invisible_time=h.invisible_time or 0,
            revive_qid=ei.revive_qid,
            broker_name=old.broker_name,
            offsets=[offset],
        )
        self.service.changed()
        rh = ChangeInvisibleTimeResponseHeader(pop_time=now, invisible_time=h.invisible_time, revive_qid=ei.revive_qid)
        return cmd.response(ResponseCode.SUCCESS, None, rh.to_ext_fields())
