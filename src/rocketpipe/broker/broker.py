"""The broker's composition root (L3): :class:`Broker`.

Wires a :class:`~rocketpipe.transport.RemotingServer` + :class:`~rocketpipe.transport.Router`,
the :class:`~rocketpipe.store.MessageStore`, the broker state tables (topics, subscription
groups, consumer offsets, client registry, held pulls, queue locks) and the processors
(send, pull, offset, consumer, admin, lock, assignment), and runs the
background loops in one :class:`asyncio.TaskGroup`:

* ``_register_loop`` — REGISTER_BROKER to every name server every 30 s and on topic changes;
* ``_schedule_loop`` — delivers due delayed messages (``SCHEDULE_TOPIC_XXXX``) every 100 ms,
  in capped slices (yielding between them while a level has a backlog);
* ``_hold_loop`` — long-poll sweep every 5 s; in between it only expires held pulls whose
  deadline passed (deadline heap; parking a pull re-arms the timer only for an earlier deadline);
* ``_expiry_loop`` — closes client channels without a heartbeat for 120 s;
* ``_notify_loop`` — pushes NOTIFY_CONSUMER_IDS_CHANGED to the members of changed groups
  (concurrently, each send bounded, so a slow client delays nobody);
* ``_persist_loop`` — consumer offsets every 5 s, delay progress every 10 s, topics/groups
  when changed (all again on close); never two writes of one file at once;
* ``_flush_loop`` — commit log every ``flush_interval_commit_log_ms`` (least pages / thorough
  interval), consume queues + checkpoint every ``flush_interval_consume_queue_ms``, in a worker
  thread; plus the SYNC_FLUSH group commit (:mod:`.flush`, commit log only);
* ``_clean_loop`` — retention and the disk-full flag every ``clean_resource_interval``
  (:mod:`rocketpipe.store.clean`; ``statvfs`` in a thread, deletions on the loop).

Mirrors ``BrokerController``. The event-loop thread owns every table; only the store's
``flush``/``load``/``close`` and JSON file writes run in worker threads. Imports L0–L2 only
(never ``client`` or ``namesrv``). What it composes sees it as a
:class:`~rocketpipe.broker.context.BrokerContext` (the processors) or a
:class:`~rocketpipe.broker.pop.PopHost` (POP): nothing in the package but its ``__init__`` and
``__main__`` imports this module (``tests/unit/test_import_cycles.py``).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..acl import PlainPermissionManager
from ..acl.auth_checker import AuthChecker
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import RocketMQError
from ..protocol import message as pm
from ..protocol import sysflag as sf
from ..protocol.bodies.register import DataVersion as WireDataVersion
from ..protocol.bodies.register import RegisterBrokerBody, TopicConfigSerializeWrapper
from ..protocol.bodies.register import TopicConfig as WireTopicConfig
from ..protocol.codes import RequestCode, ResponseCode
from ..protocol.command import RemotingCommand
from ..protocol.headers.consumer import NotifyConsumerIdsChangedRequestHeader
from ..protocol.headers.route import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader
from ..store import MessageBatch, MessageInner, MessageStore, PutResult, StoreConfig
from ..store.clean import CleanCommitLogService
from ..store.json_file import save_json
from ..transport import Connection, ConnectionPool, RemotingServer, Router, ServerLimits
from ..transport.periodic import periodic
from . import metadata
from .config import BrokerConfig
from .filter.manager import ConsumerFilterManager
from .flush import GroupCommit
from .groups import ClientRegistry
from .locks import QueueLocks
from .offsets import ConsumerOffsets
from .pop import install as install_pop
from .processors.admin import AdminProcessor
from .processors.assignment import AssignmentProcessor
from .processors.auth import AuthProcessor
from .processors.broker_admin import BrokerAdminProcessor
from .processors.consumer import ConsumerProcessor
from .processors.end_transaction import EndTransactionProcessor
from .processors.lock import LockProcessor
from .processors.offset import OffsetProcessor
from .processors.pull import PullProcessor
from .processors.query import QueryProcessor
from .processors.recall import RecallProcessor
from .processors.reply import ReplyProcessor
from .processors.send import SendProcessor
from .pull_hold import HeldPull, PullHoldTable
from .schedule import SCHEDULE_TOPIC, DueMessage, ScheduleDelivery, parse_delay_levels, redirect_properties
from .stats import BrokerStats
from .timer import (
    TIMER_TOPIC,
    TimerDelivery,
    TimerNotEnabledError,
    delivered_message,
    drop_timer_properties,
    is_timer_message,
    timer_delivery_ms,
)
from .topics import SubscriptionGroupTable, TopicTable
from .transaction import TransactionService

log = logging.getLogger(__name__)

__all__ = ["Broker"]

_SCHEDULE_PERIOD_S = 0.1
#: how long one NOTIFY_CONSUMER_IDS_CHANGED send waits for a client's socket to drain
_NOTIFY_SEND_TIMEOUT_S = 0.5


class Broker:
    """An embedded RocketMQ broker (single master).

    Args:
        config: broker configuration.
        clock: wall clock for store/born timestamps, delay due times and channel expiry
            (tests pass a fake one). Deadlines use the event loop's clock.

    Attributes:
        config: the configuration.
        address: ``"ip:port"`` once started ("" before).
        store: the message store.
        topics, groups_config, offsets, clients, hold, locks: the broker's state tables.

    Use ``async with Broker(cfg) as b`` or :meth:`start` / :meth:`close`.
    """

    def __init__(self, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.address = ""
        self.delay_levels = parse_delay_levels(config.message_delay_level)
        store_kwargs: dict[str, Any] = {}
        if config.mapped_file_size_commit_log is not None:
            store_kwargs["mapped_file_size_commit_log"] = config.mapped_file_size_commit_log
        if config.mapped_file_size_consume_queue is not None:
            store_kwargs["mapped_file_size_consume_queue"] = config.mapped_file_size_consume_queue
        self.store = MessageStore(
            StoreConfig(
                root_dir=Path(config.store_dir),
                flush_disk_type=config.flush_disk_type,
                max_message_size=config.max_message_size,
                flush_interval_commit_log_ms=config.flush_interval_commit_log_ms,
                flush_commit_log_least_pages=config.flush_commit_log_least_pages,
                flush_commit_log_thorough_interval_ms=config.flush_commit_log_thorough_interval_ms,
                flush_interval_consume_queue_ms=config.flush_interval_consume_queue_ms,
                sync_flush_timeout_ms=config.sync_flush_timeout_ms,
                message_delay_level=config.message_delay_level,
                disk_max_used_space_ratio=config.disk_max_used_space_ratio,
                disk_space_warning_level_ratio=config.disk_space_warning_level_ratio,
                disk_space_clean_forcibly_ratio=config.disk_space_clean_forcibly_ratio,
                file_reserved_time=config.file_reserved_time,
                delete_when=config.delete_when,
                clean_file_forcibly_enable=config.clean_file_forcibly_enable,
                delete_commit_log_files_interval=config.delete_commit_log_files_interval,
                clean_resource_interval=config.clean_resource_interval,
                destroy_mapped_file_interval_forcibly=config.destroy_mapped_file_interval_forcibly,
                max_transfer_count_on_message_in_memory=config.max_transfer_count_on_message_in_memory,
                max_transfer_bytes_on_message_in_memory=config.max_transfer_bytes_on_message_in_memory,
                message_index_enable=config.message_index_enable,
                max_hash_slot_num=config.max_hash_slot_num,
                max_index_num=config.max_index_num,
                **store_kwargs,
            ),
            clock,
        )
        self.topics = TopicTable(
            broker_name=config.broker_name,
            cluster_name=config.broker_cluster_name,
            auto_create_topic_enable=config.auto_create_topic_enable,
            default_topic_queue_nums=config.default_topic_queue_nums,
            schedule_queue_nums=len(self.delay_levels),
            trace_topic=config.msg_trace_topic_name if config.trace_topic_enable else None,
            timer_wheel_enable=config.timer_wheel_enable,
        )
        self.groups_config = SubscriptionGroupTable(auto_create=config.auto_create_subscription_group)
        self.offsets = ConsumerOffsets()
        self.consumer_filters = ConsumerFilterManager()  # SQL92 filter data from heartbeats
        self.clients = ClientRegistry()
        self.hold = PullHoldTable()
        self.locks = QueueLocks()
        self.unique_ids = pm.UniqueIdGenerator(_ip_bytes(config.host))
        #: counters behind GET_BROKER_RUNTIME_INFO (bootTimestamp = construction time)
        self.stats = BrokerStats(clock.now_ms())
        self.schedule = ScheduleDelivery(self.delay_levels, self._read_schedule, self._deliver_scheduled)
        self.timer = TimerDelivery(
            self._read_timer, self._deliver_timer, clock.now_ms, precision_ms=config.timer_precision_ms
        )
        self._persisted_timer: dict[str, int] = {}
        self.router = Router()
        self.send_processor = SendProcessor(self)
        self.pull_processor = PullProcessor(self)
        #: ACL 2.0 users and ACLs (AUTH_* requests); its metadata backs ``auth_checker``
        self.auth_processor = AuthProcessor(self)
        for proc in (
            self.send_processor,
            self.pull_processor,
            OffsetProcessor(self),
            ConsumerProcessor(self),
            AdminProcessor(self),
            BrokerAdminProcessor(self),
            self.auth_processor,
            LockProcessor(self),
            QueryProcessor(self),
            RecallProcessor(self),
        ):
            proc.register(self.router)
        ReplyProcessor(self).register(self.router)
        self.transactions = TransactionService(self, self.put_message)
        EndTransactionProcessor(self.transactions).register(self.router)
        self.pop = install_pop(self)
        self.assignment = AssignmentProcessor(self)  # QUERY_ASSIGNMENT / SET_ / GET_ALL_MESSAGE_REQUEST_MODE
        self.assignment.register(self.router)
        self.acl: PlainPermissionManager | None = None
        self.auth_checker: AuthChecker | None = None
        if config.auth_enabled:  # ACL 2.0 wins over ACL 1.0, as Apache 5.3 ignores aclEnable
            if config.acl_enable:
                log.warning("aclEnable (ACL 1.0) ignored: ACL 2.0 authentication/authorization is enabled")
            self.auth_checker = AuthChecker(
                self.auth_processor.metadata,
                config.broker_cluster_name,
                authentication_enabled=config.authentication_enabled,
                authorization_enabled=config.authorization_enabled,
                authentication_whitelist=config.authentication_whitelist,
                authorization_whitelist=config.authorization_whitelist,
            )
            self.router.guard = self.auth_checker.guard
        elif config.acl_enable:  # raises AclError when the file is missing or malformed
            self.acl = PlainPermissionManager(config.acl_file or "")
            self.router.guard = self.acl.guard
        self.server = RemotingServer(
            self.router,
            config.host,
            config.listen_port,
            limits=ServerLimits.from_config(config),
            tls=config.tls_server,
        )
        self.server.add_close_callback(self._on_channel_closed)
        inner = config.inner_client_authentication_credentials  # signs the registrations (namesrv ACL)
        self._pool = ConnectionPool(
            ssl_context=config.tls_client.client_context() if config.tls_enable else None,
            request_hook=None if inner is None else inner.sign,
        )
        #: retention and disk-full checks (``CleanCommitLogService``), run by ``_clean_loop``
        self.clean_service = CleanCommitLogService(self.store, clock)
        # group commit syncs the commit log only; consume queues + checkpoint are _flush_loop's job
        self.group_commit = GroupCommit(
            functools.partial(self.store.flush, consume_queues=False), config.sync_flush_timeout_ms / 1000.0
        )
        self._register_wake = asyncio.Event()
        self._hold_wake = asyncio.Event()
        self._hold_armed = math.inf  # loop time the hold loop's timer is set for
        self._notify_wake = asyncio.Event()
        self._persist_wake = asyncio.Event()
        self._pending_notify: set[str] = set()
        self._runner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._started = False
        self._closed = False
        self._persisted_delay: dict[int, int] = {}
        self._delay_persisted_at = 0.0
        self._saving: dict[Path, asyncio.Task[None]] = {}
        #: times a JSON write waited for an earlier write of the same file to finish
        self.save_waits = 0
        self.registrations = 0

    # ------------------------------------------------------------------ paths
    @property
    def pool(self) -> ConnectionPool:
        """The broker's outbound connections (name servers: registration, route lookups)."""
        return self._pool

    @property
    def config_dir(self) -> Path:
        """``<store_dir>/config`` (topics, groups, offsets, delay progress)."""
        return Path(self.config.store_dir) / "config"

    def _path(self, name: str) -> Path:
        return self.config_dir / name

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> str:
        """Load state, recover the store, listen, start the loops, register with name servers.

        Returns:
            The address clients connect to, ``"ip:port"``.

        Raises:
            OSError: the port cannot be bound or the store directory is unusable.
            MetadataError: a ``config/*.json`` file and its ``.bak`` are both unusable and
                ``recover_metadata`` is False (:mod:`rocketpipe.backup_file`; the message names
                every such file).
            StoreFileError: a commit-log file is missing from the middle of the sequence.
            RuntimeError: already started.
        """
        if self._started:
            raise RuntimeError("Broker already started")
        self._started = True
        self.config_dir.mkdir(parents=True, exist_ok=True)
        now = self.clock.now_ms()
        self.topics.create_system_topics(now)
        # metadata files (:mod:`.metadata`): .bak when a file is bad; topics rebuilt from the
        # consume queues; any other file without a usable copy stops the start (all are checked
        # first, so one error names them all) unless recover_metadata
        recover = self.config.recover_metadata
        errors: list[metadata.MetadataError] = []
        topics_read = await asyncio.to_thread(
            metadata.read_topics, self._path("topics.json"), self.store.config.root_dir
        )
        groups, offsets, delay_obj, timer_obj = [
            await metadata.attempt(
                errors, asyncio.to_thread(metadata.load_file, self._path(name), shape, recover=recover, what=what)
            )
            for name, shape, what in (
                ("subscriptionGroup.json", self.groups_config.JSON_SHAPE, "subscription groups"),
                ("consumerOffset.json", self.offsets.JSON_SHAPE, "consumer offsets"),
                ("delayOffset.json", metadata.DELAY_OFFSET_SHAPE, "delay progress"),
                ("timerCheckpoint.json", metadata.TIMER_CHECKPOINT_SHAPE, "timer progress"),
            )
        ]
        await metadata.attempt(errors, self.pop.load())  # popCheckpoint.json
        await metadata.attempt(errors, self.assignment.load())  # messageRequestMode.json
        if errors:
            self._closed = True  # close() must not write empty tables over the files the operator has to see
            metadata.raise_collected(errors)
        metadata.apply_topics(self.topics, topics_read, now)
        self.groups_config.load_json(groups)
        self.offsets.load_json(offsets)
        delay = ScheduleDelivery.offsets_from_json(delay_obj)
        self.schedule.offsets.update(delay)
        self._persisted_delay = dict(delay)
        self.timer.load_json(timer_obj)
        self._persisted_timer = self.timer.to_json()
        await asyncio.to_thread(self.store.load)
        await self.pop.start()
        self.address = await self.server.start()
        self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"broker-{self.config.broker_name}")
        await self._ready.wait()
        if self.config.namesrv_addrs:
            await self.register_broker_all()
        log.info(
            "broker started name=%s addr=%s store=%s", self.config.broker_name, self.address, self.config.store_dir
        )
        return self.address

    async def close(self) -> None:
        """Unregister, stop serving, persist offsets/topics/groups/delay progress, close the store.

        Idempotent. Held pulls are dropped with their connections.
        """
        if self._closed or not self._started:
            self._closed = True
            return
        self._closed = True
        if self.config.namesrv_addrs and self.address:
            await self._unregister_broker_all()
        await self.server.close()
        if self._runner is not None:
            self._runner.cancel()
            try:
                await self._runner
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("broker loops ended with an error")
        self.hold.drain()
        await self.transactions.close()
        await self.pop.close()
        await self.assignment.close()
        try:
            await self._persist(force=True)
        except Exception:
            log.exception("final persist failed")
        await asyncio.to_thread(self.store.close)
        self.group_commit.release_all()
        await self._pool.close()
        log.info("broker closed name=%s addr=%s", self.config.broker_name, self.address)

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._register_loop(), name="broker-register")
            tg.create_task(self._schedule_loop(), name="broker-schedule")
            tg.create_task(self._timer_loop(), name="broker-timer")
            tg.create_task(self._hold_loop(), name="broker-hold")
            tg.create_task(self._expiry_loop(), name="broker-expiry")
            tg.create_task(self._notify_loop(), name="broker-notify")
            tg.create_task(self._persist_loop(), name="broker-persist")
            tg.create_task(self._flush_loop(), name="broker-flush")
            tg.create_task(self._stats_loop(), name="broker-stats")
            tg.create_task(self._clean_loop(), name="broker-clean")
            tg.create_task(self.transactions.run(), name="broker-transaction-check")
            if self.config.flush_disk_type == "SYNC_FLUSH":
                tg.create_task(self.group_commit.run(), name="broker-group-commit")
            self._ready.set()

    # ------------------------------------------------------------------ services for processors
    def loop_time(self) -> float:
        """The event loop's clock, seconds (deadlines)."""
        return asyncio.get_running_loop().time()

    def put_message(self, inner: MessageInner, *, counted: bool = True) -> PutResult:
        """Append one message and wake the pulls held on its queue.

        ``counted=False`` (scheduled deliveries) keeps it out of ``msgPutTotalTodayNow``.
        """
        result = self.store.put_message(inner)
        if result.is_ok:
            self.stats.on_put(inner.topic, result.msg_num, result.wrote_bytes, counted=counted)
            self._on_arrival(inner, result)
        return result

    def put_batch(self, batch: MessageBatch) -> PutResult:
        """Append a client's batch (consecutive offsets in one queue) and wake held pulls."""
        result = self.store.put_batch(batch)
        if result.is_ok:
            self.stats.on_put(batch.topic, result.msg_num, result.wrote_bytes)
            self.pop.notify_message_arriving(batch.topic)
            if self.hold.has(batch.topic, batch.queue_id):
                self._release_held(batch.topic, batch.queue_id, result, result.tags_codes)
        return result

    async def wait_durable(self, result: PutResult) -> bool:
        """SYNC_FLUSH: wait (group commit) until ``result`` is on disk; ASYNC_FLUSH: True at once.

        Returns:
            False when the flush did not complete within ``sync_flush_timeout_ms``.
        """
        if self.config.flush_disk_type != "SYNC_FLUSH":
            return True
        return await self.group_commit.wait_flushed(result.wrote_offset + result.wrote_bytes)

    def apply_delay(self, inner: MessageInner) -> MessageInner:
        """Redirect a message with ``DELAY > 0`` into ``SCHEDULE_TOPIC_XXXX`` (``handleScheduleMessage``),
        or a 5.x timer message into ``rmq_sys_wheel_timer`` (:meth:`_apply_timer`).

        The level is clamped to the table; ``REAL_TOPIC``/``REAL_QID`` keep the destination and
        the tags code is the delivery time (ms). A delay level drops the timer properties.
        Transactional prepared/rollback messages and messages without a delay are returned
        unchanged.

        Raises:
            TimerMessageIllegalError, TimerNotEnabledError: a timer message is refused.
        """
        props = inner.properties if isinstance(inner.properties, dict) else pm.string_to_properties(inner.properties)
        try:
            level = int(props.get(pm.PROPERTY_DELAY_TIME_LEVEL, "0") or 0)
        except ValueError:
            level = 0
        if inner.sys_flag & sf.TRANSACTION_TYPE_MASK not in (sf.TRANSACTION_NOT_TYPE, sf.TRANSACTION_COMMIT_TYPE):
            return inner
        if level <= 0:
            return self._apply_timer(inner, props)
        drop_timer_properties(props)
        level = min(level, len(self.delay_levels))
        props = redirect_properties(props, inner.topic, inner.queue_id)
        props[pm.PROPERTY_DELAY_TIME_LEVEL] = str(level)
        inner.properties = props
        inner.topic = SCHEDULE_TOPIC
        inner.queue_id = level - 1
        inner.tags_code = self.clock.now_ms() + self.delay_levels[level - 1]
        return inner

    def _apply_timer(self, inner: MessageInner, props: dict[str, str]) -> MessageInner:
        """A 5.x timer message due in the future waits in ``rmq_sys_wheel_timer`` (:mod:`.timer`).

        Raises:
            TimerMessageIllegalError: see :func:`.timer.timer_delivery_ms`.
            TimerNotEnabledError: ``timer_wheel_enable`` is off.
        """
        if not is_timer_message(props, inner.topic):
            return inner
        cfg = self.config
        if not cfg.timer_wheel_enable:
            raise TimerNotEnabledError("accurate timer message is not enabled, timerWheelEnable is false")
        due = timer_delivery_ms(
            props, self.clock.now_ms(), precision_ms=cfg.timer_precision_ms, max_delay_sec=cfg.timer_max_delay_sec
        )
        if due is None:
            return inner
        props = redirect_properties(props, inner.topic, inner.queue_id)
        props[pm.PROPERTY_TIMER_OUT_MS] = str(due)
        inner.properties = props
        inner.topic = TIMER_TOPIC
        inner.queue_id = 0
        inner.tags_code = due
        return inner

    def topics_changed(self) -> None:
        """Note a topic-table change: persist soon and re-register with the name servers."""
        self.topics.dirty = True
        self._register_wake.set()
        self._persist_wake.set()

    def park_pull(self, entry: HeldPull) -> None:
        """Hold a pull until a message arrives for its queue or its deadline passes."""
        self.hold.park(entry)
        if entry.deadline < self._hold_armed:  # re-arm only for an earlier deadline; never sweep on park
            self._hold_armed = entry.deadline
            self._hold_wake.set()

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Queue NOTIFY_CONSUMER_IDS_CHANGED for every channel of ``group`` (if enabled)."""
        if not self.config.notify_consumer_ids_changed_enable:
            return
        self._pending_notify.add(group)
        self._notify_wake.set()

    # ------------------------------------------------------------------ arrival / held pulls
    def _on_arrival(self, inner: MessageInner, result: PutResult) -> None:
        """Wake the pulls held on ``inner``'s queue (a batch: :meth:`put_batch`)."""
        self.pop.notify_message_arriving(inner.topic)
        if not self.hold.has(inner.topic, inner.queue_id):
            return
        tags_codes = _tags_code_of(inner)
        self._release_held(inner.topic, inner.queue_id, result, tags_codes)

    def _release_held(self, topic: str, queue_id: int, result: PutResult, tags_codes: int | list[int] | None) -> None:
        """Re-run the pulls held on (topic, queue) that the put's messages satisfy."""
        max_offset = result.queue_offset + max(1, result.msg_num)
        released = self.hold.on_arrival(topic, queue_id, max_offset, tags_codes, self.loop_time())
        if released:
            asyncio.get_running_loop().call_soon(self._rerun_held, released)

    def _rerun_held(self, entries: list[HeldPull]) -> None:
        for e in entries:
            try:
                self.pull_processor.rerun(e)
            except Exception:
                log.exception("answering a released held pull failed topic=%s queue=%d", e.topic, e.queue_id)

    def _on_channel_closed(self, conn: Connection) -> None:
        self.hold.drop_channel(conn)
        models = {g: info.message_model for g, info in self.clients.consumers.items() if conn in info.channels}
        for group in self.clients.remove_channel(conn):
            gcfg = self.groups_config.groups.get(group)
            if models.get(group) == "BROADCASTING":
                continue
            if gcfg is None or gcfg.notify_consumer_ids_changed_enable:
                self.notify_consumer_ids_changed(group)

    # ------------------------------------------------------------------ schedule
    def _read_schedule(self, queue_id: int, offset: int, max_nums: int) -> tuple[list[pm.MessageExt], int, int, int]:
        res = self.store.get_message(SCHEDULE_TOPIC, queue_id, offset, max_nums)
        records: list[pm.MessageExt] = []
        for buf in res.buffers:
            records.extend(pm.decode_records(buf, decompress_body=False))
        return records, res.next_begin_offset, res.min_offset, res.max_offset

    def _deliver_scheduled(self, due: DueMessage) -> bool:
        rec = due.record
        inner = MessageInner(
            topic=due.real_topic,
            queue_id=due.real_queue_id,
            body=rec.body,
            flag=rec.flag,
            properties=due.properties,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            born_host=rec.born_host,
            store_host=rec.store_host,
            reconsume_times=rec.reconsume_times,
        )
        result = self.put_message(inner, counted=False)
        if not result.is_ok:
            log.warning("schedule delivery failed topic=%s status=%s", due.real_topic, result.status)
        return result.is_ok

    def _read_timer(self, offset: int, max_nums: int) -> tuple[list[pm.MessageExt], int]:
        res = self.store.get_message(TIMER_TOPIC, 0, offset, max_nums)
        records: list[pm.MessageExt] = []
        for buf in res.buffers:
            records.extend(pm.decode_records(buf, decompress_body=False))
        return records, res.next_begin_offset

    def _deliver_timer(self, rec: pm.MessageExt) -> bool:
        inner = delivered_message(rec, self.clock.now_ms())
        result = self.put_message(inner)
        if not result.is_ok:
            log.warning("timer delivery failed topic=%s status=%s", inner.topic, result.status)
        return result.is_ok

    # ------------------------------------------------------------------ name server
    def _register_body(self) -> bytes:
        dv = self.topics.data_version
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table={
                name: WireTopicConfig(
                    topic_name=tc.topic_name,
                    read_queue_nums=tc.read_queue_nums,
                    write_queue_nums=tc.write_queue_nums,
                    perm=tc.perm,
                    topic_filter_type=tc.topic_filter_type,
                    topic_sys_flag=tc.topic_sys_flag,
                    order=tc.order,
                )
                for name, tc in self.topics.topics.items()
            },
            data_version=WireDataVersion(dv.state_version, dv.timestamp, dv.counter),
        )
        return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode()

    async def register_broker_all(self) -> None:
        """Send REGISTER_BROKER to every name server; failures are logged, never raised."""
        host, _, port = self.address.rpartition(":")
        header = RegisterBrokerRequestHeader(
            broker_name=self.config.broker_name,
            broker_addr=self.address,
            cluster_name=self.config.broker_cluster_name,
            ha_server_addr=f"{host}:{int(port) + 1}",
            broker_id=self.config.broker_id,
            heartbeat_timeout_millis=self.config.channel_expired_timeout_ms,
            compressed=False,
            body_crc32=0,
        )
        body = self._register_body()
        timeout = self.config.register_broker_timeout_mills / 1000.0
        for addr in self.config.namesrv_addrs:
            cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)
            try:
                resp = await self._pool.request(addr, cmd, timeout)
            except (RocketMQError, OSError) as exc:
                log.warning("register broker failed namesrv=%s error=%s", addr, exc)
                continue
            if resp.code != ResponseCode.SUCCESS:
                log.warning("register broker refused namesrv=%s code=%d remark=%s", addr, resp.code, resp.remark)
            else:
                self.registrations += 1

    async def _unregister_broker_all(self) -> None:
        header = UnRegisterBrokerRequestHeader(
            broker_name=self.config.broker_name,
            broker_addr=self.address,
            cluster_name=self.config.broker_cluster_name,
            broker_id=self.config.broker_id,
        )
        for addr in self.config.namesrv_addrs:
            try:
                await self._pool.request(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields()), 3.0
                )
            except (RocketMQError, OSError) as exc:
                log.info("unregister broker failed namesrv=%s error=%s", addr, exc)

    # ------------------------------------------------------------------ loops
    async def _periodic(
        self, name: str, interval_s: float, fn: Callable[[], Awaitable[None]], wake: asyncio.Event | None = None
    ) -> None:
        """Run ``fn`` every ``interval_s`` seconds (or when ``wake`` is set); log and survive errors."""
        await periodic(name, interval_s, fn, initial_delay=interval_s, wake=wake, logger=log)

    async def _register_loop(self) -> None:
        if not self.config.namesrv_addrs:
            return
        await self._periodic(
            "register",
            self.config.register_name_server_period_ms / 1000.0,
            self.register_broker_all,
            self._register_wake,
        )

    async def _stats_loop(self) -> None:
        async def step() -> None:
            self.stats.sample(self.clock.now_ms())

        await self._periodic("stats", 1.0, step)  # StoreStatsService: one sample a second

    async def _clean_loop(self) -> None:
        """``CleanCommitLogService`` every ``clean_resource_interval`` ms.

        ``statvfs`` runs in a worker thread; deletions run here on the loop thread (reads do),
        one file at a time with ``delete_commit_log_files_interval`` ms between them. After
        deleting, the disk is measured again so refused puts resume without waiting a period.
        """
        svc = self.clean_service
        scfg = self.store.config
        pause_s = scfg.delete_commit_log_files_interval / 1000.0

        async def step() -> None:
            deleted = 0
            for _ in svc.deletions(svc.plan(await asyncio.to_thread(svc.measure))):
                deleted += 1
                if pause_s > 0:
                    await asyncio.sleep(pause_s)
            if deleted:
                svc.check_disk_space(await asyncio.to_thread(svc.measure))

        await self._periodic("clean", scfg.clean_resource_interval / 1000.0, step)

    async def _schedule_loop(self) -> None:
        async def step() -> None:
            self.schedule.deliver_due(self.clock.now_ms())
            while self.schedule.backlog:  # a level hit its per-tick cap: let other work run, then go on
                await asyncio.sleep(0)
                self.schedule.deliver_due(self.clock.now_ms())

        await self._periodic("schedule", _SCHEDULE_PERIOD_S, step)

    async def _timer_loop(self) -> None:
        async def step() -> None:
            self.timer.tick()

        await self._periodic("timer", _SCHEDULE_PERIOD_S, step)

    async def _hold_loop(self) -> None:
        interval = (
            self.config.long_polling_check_interval_ms
            if self.config.long_polling_enable
            else self.config.short_polling_time_mills
        ) / 1000.0
        loop = asyncio.get_running_loop()
        next_sweep = loop.time() + interval
        while True:
            deadline = self.hold.next_deadline()
            wake_at = next_sweep if deadline is None else min(next_sweep, deadline)
            self._hold_armed = wake_at
            if not self._hold_wake.is_set():
                try:
                    async with asyncio.timeout(max(0.0, wake_at - loop.time())):
                        await self._hold_wake.wait()
                except TimeoutError:
                    pass
            self._hold_wake.clear()
            now = loop.time()
            try:
                if now >= next_sweep:  # periodic full check of every held queue (PullRequestHoldService)
                    next_sweep = now + interval
                    released = self.hold.sweep(self.store.get_max_offset, now)
                else:  # a deadline came due (or one earlier than the armed timer was parked)
                    released = self.hold.expire(now)
                self._rerun_held(released)
            except Exception:
                log.exception("long-poll sweep failed")

    async def _expiry_loop(self) -> None:
        await self._periodic("expiry", self.config.client_housekeeping_interval_ms / 1000.0, self.scan_expired_channels)

    async def scan_expired_channels(self) -> None:
        """Close client channels without a heartbeat for ``channel_expired_timeout_ms``.

        Their groups' remaining members get NOTIFY_CONSUMER_IDS_CHANGED. Runs every
        ``client_housekeeping_interval_ms``; tests call it directly after advancing a fake clock.
        """
        timeout = self.config.channel_expired_timeout_ms
        for ch in self.clients.expired_channels(self.clock.now_ms(), timeout):
            log.info(
                "client channel expired (no heartbeat for %d ms) remote=%s", timeout, getattr(ch, "remote_address", ch)
            )
            self._on_channel_closed(ch)  # type: ignore[arg-type]
            close = getattr(ch, "close", None)
            if close is not None:
                await close()

    async def _notify_loop(self) -> None:
        while True:
            await self._notify_wake.wait()
            self._notify_wake.clear()
            groups, self._pending_notify = self._pending_notify, set()
            sends = []
            for group in sorted(groups):
                ext = NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext_fields()
                for ch in self.clients.channels_of(group):
                    conn: Connection = ch  # type: ignore[assignment]
                    if not conn.is_closed:
                        sends.append(self._notify_one(conn, group, ext))
            # concurrently, each bounded: one slow client (full socket buffer) delays nobody else
            await asyncio.gather(*sends)

    async def _notify_one(self, conn: Connection, group: str, ext: dict[str, str]) -> None:
        try:
            async with asyncio.timeout(_NOTIFY_SEND_TIMEOUT_S):
                await conn.oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(ext)))
        except TimeoutError:  # the frame stays queued; only the wait for the peer to drain ends
            log.info(
                "notify consumer ids changed: slow client, not waiting group=%s remote=%s", group, conn.remote_address
            )
        except (RocketMQError, OSError) as exc:
            log.info("notify consumer ids changed failed group=%s remote=%s error=%s", group, conn.remote_address, exc)
        except Exception:
            log.exception("notify consumer ids changed failed group=%s", group)

    async def _persist_loop(self) -> None:
        async def step() -> None:
            await self._persist(force=False)

        await self._periodic(
            "persist", self.config.flush_consumer_offset_interval_ms / 1000.0, step, self._persist_wake
        )

    async def _persist(self, *, force: bool) -> None:
        """Write changed JSON files (all of them when ``force``).

        A table's dirty flag is cleared when its snapshot is taken and set again when the write
        fails (or never started because the caller was cancelled), so the next round retries.

        Raises:
            OSError, TypeError: the first failed write (the other files are still written).
        """
        jobs: list[tuple[Path, Any, Callable[[], None]]] = []
        for name, table in (
            ("consumerOffset.json", self.offsets),
            ("topics.json", self.topics),
            ("subscriptionGroup.json", self.groups_config),
        ):
            if force or table.dirty:
                table.dirty = False
                jobs.append((self._path(name), table.to_json(), functools.partial(setattr, table, "dirty", True)))
        loop_now = self.loop_time()
        delay_due = loop_now - self._delay_persisted_at >= self.config.flush_delay_offset_interval_ms / 1000.0
        if force or (delay_due and self.schedule.offsets != self._persisted_delay):
            prev_delay = self._persisted_delay
            self._persisted_delay = dict(self.schedule.offsets)
            self._delay_persisted_at = loop_now
            jobs.append(
                (
                    self._path("delayOffset.json"),
                    self.schedule.to_json(),
                    functools.partial(setattr, self, "_persisted_delay", prev_delay),
                )
            )
        timer_now = self.timer.to_json()
        if force or (delay_due and timer_now != self._persisted_timer):
            prev_timer = self._persisted_timer
            self._persisted_timer = timer_now
            jobs.append(
                (
                    self._path("timerCheckpoint.json"),
                    timer_now,
                    functools.partial(setattr, self, "_persisted_timer", prev_timer),
                )
            )
        failure: Exception | None = None
        for i, (path, obj, restore) in enumerate(jobs):
            try:
                await self._save_json(path, obj)
            except asyncio.CancelledError:
                # the current write may still finish in its thread; marking it dirty again only
                # costs one redundant write, while the files not started yet would be lost
                for _, _, unfinished in jobs[i:]:
                    unfinished()
                raise
            except Exception as exc:
                restore()
                log.warning("persisting %s failed: %s", path.name, exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    async def _save_json(self, path: Path, obj: Any) -> None:
        """``save_json`` in a worker thread; never two writes of one file at once.

        The write runs in its own task: cancelling the caller (``close`` cancels the persist
        loop) does not abandon a write still running in its thread — the next save of the same
        file waits for it first.
        """
        while (prev := self._saving.get(path)) is not None and not prev.done():
            self.save_waits += 1
            await asyncio.wait((prev,))
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(save_json, path, obj))
        task.add_done_callback(_consume_result)
        self._saving[path] = task
        await asyncio.shield(task)

    async def _flush_loop(self) -> None:
        """``FlushRealTimeService`` + ``FlushConsumeQueueService`` on the store's configured periods.

        Every ``flush_interval_commit_log_ms``: sync the commit log when at least
        ``flush_commit_log_least_pages`` pages are dirty (any amount once per
        ``flush_commit_log_thorough_interval_ms``); every ``flush_interval_consume_queue_ms``
        also the consume queues and the checkpoint.
        """
        loop = asyncio.get_running_loop()
        scfg = self.store.config
        thorough_s = scfg.flush_commit_log_thorough_interval_ms / 1000.0
        cq_s = scfg.flush_interval_consume_queue_ms / 1000.0
        last_thorough = last_cq = loop.time()

        async def step() -> None:
            nonlocal last_thorough, last_cq
            now = loop.time()
            least = scfg.flush_commit_log_least_pages
            if now - last_thorough >= thorough_s:
                least, last_thorough = 0, now
            cq = now - last_cq >= cq_s
            if cq:
                last_cq = now
            await asyncio.to_thread(self.store.flush, consume_queues=cq, least_pages=least)

        await self._periodic("flush", scfg.flush_interval_commit_log_ms / 1000.0, step)


def _consume_result(task: asyncio.Task[None]) -> None:
    """Mark a background write's outcome as seen (its caller may have been cancelled)."""
    if not task.cancelled():
        task.exception()


def _tags_code_of(inner: MessageInner) -> int | None:
    if inner.tags_code is not None:
        return inner.tags_code
    return pm.tag_code(inner.get_property(pm.PROPERTY_TAGS))


def _ip_bytes(host: str) -> bytes:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return b"\x7f\x00\x00\x01"
    return ip.packed if ip.version == 4 else b"\x7f\x00\x00\x01"
