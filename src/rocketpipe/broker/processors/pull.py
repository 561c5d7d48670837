"""PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), with long polling.

Mirrors ``PullMessageProcessor.processRequest`` + ``DefaultPullMessageResultHandler`` of
apache/rocketmq 5.x: permission and subscription checks, the store read, the status table of
``messages-and-broker.md`` §3.4, the piggy-backed offset commit (first pass only) and the hold
of PULL_NOT_FOUND pulls that carry FLAG_SUSPEND (:mod:`rocketpipe.broker.pull_hold`). The
processing itself is synchronous (the store is); a held pull is re-run with ``allow_suspend``
False and answered on its connection with its original opaque.

Response bodies are the store's raw record buffers, joined without decoding.
"""

from __future__ import annotations

import logging
from typing import Any

from ...errors import InvalidArgumentError
from ...protocol import message as pm
from ...protocol import sysflag as sf
from ...protocol.bodies.heartbeat import SubscriptionData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from ...store.api import GetResult, GetStatus
from ...transport import Connection, Router
from ..context import BrokerContext
from ..filter.manager import compile_filter, is_tag_type, record_properties, record_queue_offset
from ..filter.sql92 import Sql92Expression, SQL92ParseError
from ..pull_hold import HeldPull
from ..topics import SubscriptionGroupConfig, TopicConfig
from .common import decode_header, error, require

log = logging.getLogger(__name__)

# GetStatus name -> response code (request offset 0 vs non-zero matters for the first two).
_NOT_FOUND_OR_MOVED = frozenset({"NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"})
_STATUS_CODES: dict[str, ResponseCode] = {
    "FOUND": ResponseCode.SUCCESS,
    "NO_MATCHED_MESSAGE": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "MESSAGE_WAS_REMOVING": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_ONE": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_TOO_SMALL": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_RESET": ResponseCode.PULL_OFFSET_MOVED,
}


def pull_response_code(status: str, request_offset: int) -> ResponseCode:
    """Map a store GetStatus name to the pull response code (reference §3.4 table).

    Args:
        status: ``GetStatus`` name.
        request_offset: the offset the client asked for.
    """
    if status in _NOT_FOUND_OR_MOVED:
        return ResponseCode.PULL_OFFSET_MOVED if request_offset != 0 else ResponseCode.PULL_NOT_FOUND
    return _STATUS_CODES.get(status, ResponseCode.SYSTEM_ERROR)


def tag_code_set(sub_string: str | None) -> frozenset[int] | None:
    """Tag hash codes of a TAG expression (``FilterAPI.buildSubscriptionData``); None = all."""
    if sub_string is None:
        return None
    s = sub_string.strip()
    if not s or s == "*":
        return None
    tags = [t.strip() for t in s.split("||")]
    tags = [t for t in tags if t]
    if not tags:
        return None
    return frozenset(pm.java_string_hash(t) for t in tags)


class PullProcessor:
    """Handler of the pull codes plus the re-run of held pulls."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.PULL_MESSAGE, self.handle)
        router.register(RequestCode.LITE_PULL_MESSAGE, self.handle)

    async def handle(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """First pass of a pull; returns None when the pull is held for long polling."""
        h = decode_header(PullMessageRequestHeader, cmd)
        for name in ("consumer_group", "topic", "queue_id", "queue_offset", "max_msg_nums"):
            require(getattr(h, name), name)
        return self.process(cmd, conn, h, allow_suspend=True)

    def rerun(self, entry: HeldPull) -> None:
        """Re-run a released held pull (no suspend, no commit) and answer on its connection."""
        conn: Connection = entry.channel  # type: ignore[assignment]
        if conn.is_closed:
            return
        try:
            resp = self.process(entry.request, conn, entry.context, allow_suspend=False)
        except Exception as exc:
            log.exception("held pull re-run failed topic=%s queue=%d", entry.topic, entry.queue_id)
            resp = error(entry.request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if resp is not None:
            conn.send_response(resp)

    def process(
        self, cmd: RemotingCommand, conn: Connection, h: PullMessageRequestHeader, *, allow_suspend: bool
    ) -> RemotingCommand | None:
        """Run the pull: checks, store read, commit, and hold when allowed.

        ``PullMessageProcessor.processRequest``: the permission checks (:meth:`_check_request`),
        the subscription (:meth:`_filter_codes`), a pending server-side offset reset
        (:meth:`_offset_reset_response`), the store read (:meth:`_read`); then
        ``DefaultPullMessageResultHandler``: the piggy-backed commit and the hold of a
        PULL_NOT_FOUND pull (first pass only, :meth:`_suspend`), else the response
        (:meth:`_response`).

        Returns:
            The response, or None when the pull was parked.
        """
        group: str = h.consumer_group  # type: ignore[assignment]
        topic: str = h.topic  # type: ignore[assignment]
        queue_id: int = h.queue_id  # type: ignore[assignment]
        offset: int = h.queue_offset  # type: ignore[assignment]
        checked = self._check_request(cmd, group, topic, queue_id)
        if isinstance(checked, RemotingCommand):
            return checked
        gcfg, tc = checked
        codes = self._filter_codes(cmd, h, group, topic, gcfg)
        if isinstance(codes, RemotingCommand):
            return codes
        sql: Sql92Expression | None = None
        if isinstance(codes, Sql92Expression):
            # SQL92: no tags-code prefilter; records are matched on their properties
            sql, codes = codes, None
        reset = self.broker.offsets.take_reset(group, topic, queue_id)
        if reset is not None:
            return self._offset_reset_response(cmd, topic, queue_id, reset, tc, gcfg)
        result = self._read(h, topic, queue_id, offset, codes, sql)
        status = getattr(result.status, "name", str(result.status))
        code = pull_response_code(status, offset)
        if allow_suspend:
            sys_flag = h.sys_flag or 0
            # Piggy-backed commit: first pass only, whatever the result (PullMessageProcessor step 14).
            if sys_flag & sf.PULL_COMMIT_OFFSET and h.commit_offset is not None and h.commit_offset >= 0:
                self.broker.offsets.commit_from_client(group, topic, queue_id, h.commit_offset)
            if code == ResponseCode.PULL_NOT_FOUND and sys_flag & sf.PULL_SUSPEND:
                self._suspend(cmd, conn, h, topic, queue_id, offset, codes)
                return None
        return self._response(cmd, code, status, result, topic, tc, gcfg)

    def _check_request(
        self, cmd: RemotingCommand, group: str, topic: str, queue_id: int
    ) -> RemotingCommand | tuple[SubscriptionGroupConfig, TopicConfig]:
        """The permission checks of ``processRequest``: the group's and the topic's configs, or
        the error response.

        Broker readable, the subscription group exists and may consume, the topic exists and is
        readable, the queue id is one of its read queues.
        """
        b = self.broker
        if not sf.is_readable(b.config.broker_permission):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the broker[{b.config.host}] pulling message is forbidden")
        gcfg = b.groups_config.find(group)
        if gcfg is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist")
        if not gcfg.consume_enable:
            return error(cmd, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        tc = b.topics.get(topic)
        if tc is None:
            return error(cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not sf.is_readable(tc.perm):
            return error(cmd, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return error(
                cmd,
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}]",
            )
        return gcfg, tc

    def _offset_reset_response(
        self,
        cmd: RemotingCommand,
        topic: str,
        queue_id: int,
        reset: int,
        tc: TopicConfig,
        gcfg: SubscriptionGroupConfig,
    ) -> RemotingCommand:
        """5.x server-side reset (``useServerSideResetOffset``): OFFSET_RESET -> PULL_OFFSET_MOVED
        with ``nextBeginOffset`` = the reset offset."""
        store = self.broker.store
        rh = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=reset,
            min_offset=store.get_min_offset(topic, queue_id),
            max_offset=store.get_max_offset(topic, queue_id),
            topic_sys_flag=tc.topic_sys_flag,
            group_sys_flag=gcfg.group_sys_flag,
        )
        return cmd.response(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET", rh.to_ext_fields())

    def _read(
        self,
        h: PullMessageRequestHeader,
        topic: str,
        queue_id: int,
        offset: int,
        codes: frozenset[int] | None,
        sql: Sql92Expression | None,
    ) -> GetResult:
        """``getMessage``: up to ``maxMsgNums`` (at least 1) records and ``maxMsgBytes`` bytes
        (when > 0) from ``offset``, filtered by tag codes (None: all) or by ``sql``; neither
        filter applies to a class-filter pull (FLAG_CLASS_FILTER)."""
        max_nums = max(1, h.max_msg_nums or 1)
        kwargs: dict[str, Any] = {}
        if h.max_msg_bytes is not None and h.max_msg_bytes > 0:
            kwargs["max_total_bytes"] = h.max_msg_bytes
        class_filter = (h.sys_flag or 0) & sf.PULL_CLASS_FILTER
        if sql is not None and not class_filter:
            return self._get_message_sql(topic, queue_id, offset, max_nums, sql, kwargs)
        tag_filter = None
        if codes is not None and not class_filter:
            wanted = codes
            tag_filter = lambda code: pm.int32(code) in wanted  # noqa: E731
        return self.broker.store.get_message(
            topic, queue_id, offset, max_nums, tag_filter=tag_filter, per_message=False, **kwargs
        )

    def _suspend(
        self,
        cmd: RemotingCommand,
        conn: Connection,
        h: PullMessageRequestHeader,
        topic: str,
        queue_id: int,
        offset: int,
        codes: frozenset[int] | None,
    ) -> None:
        """``PullRequestHoldService.suspendPullRequest``: hold the pull for ``suspendTimeoutMillis``
        (long polling) or ``shortPollingTimeMills``; it is re-run (:meth:`rerun`) when a message
        with a wanted tag code (``codes``, None: any) arrives on its queue or the time is up."""
        b = self.broker
        hold_ms = (h.suspend_timeout_millis or 0) if b.config.long_polling_enable else b.config.short_polling_time_mills
        b.park_pull(
            HeldPull(
                topic=topic,
                queue_id=queue_id,
                offset=offset,
                deadline=b.loop_time() + hold_ms / 1000.0,
                code_set=codes,
                request=cmd,
                channel=conn,
                context=h,
            )
        )

    def _response(
        self,
        cmd: RemotingCommand,
        code: ResponseCode,
        status: str,
        result: GetResult,
        topic: str,
        tc: TopicConfig,
        gcfg: SubscriptionGroupConfig,
    ) -> RemotingCommand:
        """``DefaultPullMessageResultHandler``: the response header from the read; on SUCCESS the
        records (the store's buffers, joined only when there are several) and the get stats."""
        rh = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
            topic_sys_flag=tc.topic_sys_flag,
            group_sys_flag=gcfg.group_sys_flag,
        )
        body: bytes | memoryview = b""
        if code == ResponseCode.SUCCESS:
            self.broker.stats.on_get(topic, result.message_count, group=gcfg.group_name, size=result.buffer_total_size)
            bufs = result.buffers if result.runs is None else result.runs
            body = bufs[0] if len(bufs) == 1 else b"".join(bufs)
        return cmd.response(int(code), status, rh.to_ext_fields(), body)

    def _get_message_sql(
        self, topic: str, queue_id: int, offset: int, max_nums: int, sql: Sql92Expression, kwargs: dict[str, Any]
    ) -> GetResult:
        """``getMessage`` with an SQL92 filter (``isMatchedByCommitLog`` on each record's properties).

        The store filters only on tags codes, so unfiltered reads are matched here, repeated from
        the returned ``next_begin_offset`` until ``max_nums`` records matched or the scan window
        (``max(maxFilterMessageSize, maxMsgNums * 20)`` consume-queue bytes) is used up. Nothing
        matching in the window gives NO_MATCHED_MESSAGE with ``next_begin_offset`` past the
        scanned entries (-> PULL_RETRY_IMMEDIATELY), as in Java.
        """
        store = self.broker.store
        max_scan = max(store.config.max_filter_message_size, max_nums * 20) // 20
        max_bytes = min(kwargs.get("max_total_bytes", 1 << 62), store.config.max_transfer_bytes_on_message_in_memory)
        matched: list[memoryview | bytes] = []
        total = 0
        cur = offset
        first: GetResult | None = None
        last: GetResult | None = None
        full = False
        while not full and len(matched) < max_nums and cur - offset < max_scan:
            r = store.get_message(topic, queue_id, cur, max_nums - len(matched), **kwargs)
            if first is None:
                first = r
                if r.status is not GetStatus.FOUND:
                    return r  # offset / queue statuses and MESSAGE_WAS_REMOVING pass through
            elif r.status is not GetStatus.FOUND:
                break
            last = r
            for buf in r.buffers:
                if sql.matches(record_properties(buf)):
                    if matched and total + len(buf) > max_bytes:
                        # byte cap reached: this record is read again by the next pull
                        cur, full = record_queue_offset(buf), True
                        break
                    matched.append(buf)
                    total += len(buf)
            if full:
                break
            if r.next_begin_offset <= cur:
                break
            cur = r.next_begin_offset
        assert first is not None
        ref = last or first
        status = GetStatus.FOUND if matched else GetStatus.NO_MATCHED_MESSAGE
        return GetResult(status, cur, ref.min_offset, ref.max_offset, matched, len(matched), total)

    def _compile_sql(
        self, cmd: RemotingCommand, expr_type: str, expression: str | None
    ) -> RemotingCommand | Sql92Expression:
        """enablePropertyFilter check (SYSTEM_ERROR) then compile (SUBSCRIPTION_PARSE_FAILED)."""
        if not self.broker.config.enable_property_filter:
            return error(
                cmd, ResponseCode.SYSTEM_ERROR, f"The broker does not support consumer to filter message by {expr_type}"
            )
        try:
            return compile_filter(expr_type, expression)
        except SQL92ParseError as exc:
            return error(
                cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}"
            )

    def _filter_codes(
        self, cmd: RemotingCommand, h: PullMessageRequestHeader, group: str, topic: str, gcfg: SubscriptionGroupConfig
    ) -> RemotingCommand | frozenset[int] | Sql92Expression | None:
        """Resolve the subscription: from the header (FLAG_SUBSCRIPTION) or the heartbeat registry.

        Returns an error response, the TAG code set (None = all) or a compiled SQL92 selector.
        """
        b = self.broker
        if (h.sys_flag or 0) & sf.PULL_SUBSCRIPTION:
            expr_type = h.expression_type or "TAG"
            if not is_tag_type(expr_type):
                # Java compiles via ConsumerFilterManager.build and (assertions off) silently
                # matches everything when that fails; answering SUBSCRIPTION_PARSE_FAILED is stricter.
                return self._compile_sql(cmd, expr_type, h.subscription)
            try:
                sd = SubscriptionData.build(topic, h.subscription, expr_type)
            except InvalidArgumentError as exc:
                return error(
                    cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}"
                )
            return None if sd.is_sub_all else frozenset(sd.code_set)
        info = b.clients.consumer_group(group)
        if info is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist, {group}")
        if info.message_model == "BROADCASTING" and not gcfg.consume_broadcast_enable:
            return error(
                cmd, ResponseCode.NO_PERMISSION, f"the consumer group[{group}] can not consume by broadcast way"
            )
        sub = info.subscriptions.get(topic)
        if sub is None:
            return error(cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, {topic}")
        if (getattr(sub, "sub_version", 0) or 0) < (h.sub_version or 0):
            return error(cmd, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        expr_type = getattr(sub, "expression_type", None) or "TAG"
        if not is_tag_type(expr_type):
            fd = b.consumer_filters.get(topic, group)
            if fd is None:
                return error(
                    cmd,
                    ResponseCode.FILTER_DATA_NOT_EXIST,
                    "The broker's consumer filter data is not exist!Your expression may be wrong!",
                )
            if fd.client_version < (h.sub_version or 0):
                return error(cmd, ResponseCode.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest")
            if not b.config.enable_property_filter:
                return error(
                    cmd,
                    ResponseCode.SYSTEM_ERROR,
                    f"The broker does not support consumer to filter message by {expr_type}",
                )
            return fd.compiled
        return tag_code_set(getattr(sub, "sub_string", None))
