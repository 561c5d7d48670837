"""The message store: commit log + consume queues + checkpoint + recovery (L2, synchronous).

Mirrors ``DefaultMessageStore``. Imports stdlib, ``errors``, ``clock``, ``protocol`` and the
store's own modules; never asyncio or ``transport``.

Threads: every method may be called from the broker's event-loop thread. :meth:`MessageStore.flush`
may run concurrently in one worker thread (group commit / periodic flush): puts and flushes share
a short lock around the append state, and the fsyncs happen outside it. Reads
(:meth:`~MessageStore.get_message`, offsets, lookups) take no lock and are safe against
concurrent puts and flushes. :meth:`~MessageStore.load` must finish before any other call;
:meth:`~MessageStore.close` may race with puts (they then return SERVICE_NOT_AVAILABLE) but not
with reads running in other threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Final

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ClientClosedError, InvalidArgumentError
from ..protocol import sysflag as sf
from ..protocol.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_TAGS,
    MessageExt,
    create_offset_msg_id,
    encode_record,
    string_to_properties,
    tag_code,
)
from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from ..protocol.names import SCHEDULE_TOPIC as SCHEDULE_TOPIC
from .api import GetResult, GetStatus, MessageInner, PutResult, PutStatus, QueryResult
from .checkpoint import Checkpoint
from .commit_log import END_FILE_MIN_BLANK_LENGTH, CommitLog
from .config import CQ_STORE_UNIT_SIZE, StoreConfig
from .consume_queue import BLANK_ENTRY_SIZE, ConsumeQueue
from .index import KeyIndex, index_names, scan_commit_log

log = logging.getLogger(__name__)

#: ``DefaultMessageStore.MAX_PULL_MSG_SIZE`` (5.x): cap of one read, bytes.
MAX_PULL_MSG_SIZE: Final = 128 * 1024 * 1024
_NO_DISPATCH: Final = (sf.TRANSACTION_PREPARED_TYPE, sf.TRANSACTION_ROLLBACK_TYPE)
_PAGE: Final = 4096


class MessageStore:
    """Persistent store of one broker (``DefaultMessageStore``).

    Args:
        config: sizes, flush settings and the root directory.
        clock: source of store timestamps (ms).

    Attributes:
        arrival_listener: called as ``(topic, queue_id, max_offset)`` after each put that adds
            consume-queue entries (``MessageArrivingListener``); runs in the putting thread.
    """

    def __init__(self, config: StoreConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.arrival_listener: Callable[[str, int, int], None] | None = None
        root = config.root_dir
        self._abort_path = root / "abort"
        self._checkpoint = Checkpoint(root / "checkpoint")
        self.commit_log = CommitLog(root / "commitlog", config.mapped_file_size_commit_log, config.prefault_ahead_bytes)
        self._cq_root = root / "consumequeue"
        self._queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._lock = threading.Lock()  # append state: commit-log write offset, CQ tables
        self._flush_lock = threading.Lock()  # one flusher at a time; close waits for it
        self._last_store_ts = 0
        self._delay_levels = config.delay_levels_ms
        self._loaded = False
        self._closed = False
        self._id_prefixes: dict[str, str] = {}  # store host -> hex of its address bytes
        self._tag_codes: dict[str, int] = {}  # TAGS value -> tags code (bounded memo)
        #: key index (``keyindex/``) behind :meth:`query_message`; None when disabled
        self.index: KeyIndex | None = KeyIndex(root / "keyindex") if config.message_index_enable else None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> MessageStore:
        self.load()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def load(self) -> None:
        """Open the files and recover (``DefaultMessageStore.load`` + ``recover``).

        After a clean stop (no ``abort`` file, checkpoint agrees with the files) the files are
        trusted. After a crash the commit log is scanned from the segment holding the checkpoint's
        flushed offset, each record is validated, the torn tail is cut, and consume queues are
        cut and rebuilt so that they reference exactly the recovered records. Then ``abort`` is
        created; :meth:`close` removes it.

        Raises:
            StoreFileError: a segment file does not match the configured size.
            OSError: files cannot be read, created or mapped.
        """
        if self._loaded:
            return
        root = self.config.root_dir
        root.mkdir(parents=True, exist_ok=True)
        abnormal = self._abort_path.exists()
        cp = Checkpoint.load(self._checkpoint.path)
        if cp is not None:
            self._checkpoint = cp
        self.commit_log.files.load()
        clean = not abnormal and cp is not None and self.commit_log.trust_end(cp.master_flushed_offset)
        if not clean and (cp is not None or self.commit_log.files.segments):
            log.warning("store root=%s abnormal recovery (abort=%s checkpoint=%s)", root, abnormal, cp is not None)
        self._load_consume_queues(thorough=not clean)
        if not clean:
            self._recover_abnormally(cp.master_flushed_offset if cp is not None else 0)
        if self.index is not None:  # reads keyindex/, re-indexes the commit log past it
            self.index.load(self.commit_log.write_offset, lambda start: scan_commit_log(self.commit_log, start))
        self._last_store_ts = self._checkpoint.physic_msg_timestamp
        self._abort_path.touch()
        self._loaded = True
        if not clean:
            self.flush()

    def _load_consume_queues(self, *, thorough: bool) -> None:
        if not self._cq_root.is_dir():
            return
        for tdir in sorted(self._cq_root.iterdir()):
            if not tdir.is_dir():
                continue
            for qdir in sorted(tdir.iterdir()):
                if qdir.is_dir() and qdir.name.lstrip("-").isdigit():
                    cq = self._new_queue(tdir.name, int(qdir.name))
                    cq.load(thorough=thorough)

    def _recover_abnormally(self, checkpoint_offset: int) -> None:
        def redispatch(msg: MessageExt) -> None:
            if msg.sys_flag & sf.TRANSACTION_TYPE_MASK in _NO_DISPATCH:
                return
            cq = self._queue(msg.topic, msg.queue_id) or self._new_queue(msg.topic, msg.queue_id)
            qo = msg.queue_offset
            if qo < cq.max_offset:
                entry = cq.entry(qo)
                if entry is not None and entry[0] == msg.commit_log_offset and entry[1] == msg.store_size:
                    return
                cq.truncate_to(qo)
            cq.fill_blanks_to(qo)
            cq.append(msg.commit_log_offset, msg.store_size, self._recovered_tags_code(msg))

        end = self.commit_log.recover(checkpoint_offset, self.config.check_crc_on_recover, redispatch)
        for queues in self._queues.values():
            for cq in queues.values():
                n = cq.truncate_beyond(end)
                if n:
                    log.warning("topic=%s queue=%d dropped %d entries beyond commitlog end=%d", cq.topic, cq.queue_id, n, end)
        if self._checkpoint.master_flushed_offset > end:
            self._checkpoint.master_flushed_offset = end

    def _recovered_tags_code(self, msg: MessageExt) -> int:
        if msg.topic == SCHEDULE_TOPIC:
            code = self._schedule_tags_code(msg.properties.get(PROPERTY_DELAY_TIME_LEVEL), msg.store_timestamp)
            if code is not None:
                return code
        return tag_code(msg.properties.get(PROPERTY_TAGS))

    def _schedule_tags_code(self, level_str: str | None, store_ts: int) -> int | None:
        """Delivery time of a SCHEDULE_TOPIC_XXXX message (``computeDeliverTimestamp``)."""
        try:
            level = int(level_str) if level_str else 0
        except ValueError:
            return None
        if level <= 0 or not self._delay_levels:
            return None
        return store_ts + self._delay_levels[min(level, len(self._delay_levels)) - 1]

    def close(self) -> None:
        """Flush everything, write the checkpoint, remove ``abort`` and unmap (idempotent).

        Raises:
            OSError: the final flush failed (``abort`` then stays, so the next load recovers).
        """
        if self._closed or not self._loaded:
            self._closed = True
            return
        with self._flush_lock:
            with self._lock:  # no put can be half-way through an append below
                self._closed = True
            self._flush_locked(consume_queues=True, least_pages=0, force_checkpoint=True)
            self._abort_path.unlink(missing_ok=True)
            self.commit_log.close()
            if self.index is not None:
                self.index.close()
            for queues in self._queues.values():
                for cq in queues.values():
                    cq.close()

    @property
    def is_closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    # ------------------------------------------------------------------ queues

    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        q = self._queues.get(topic)
        return q.get(queue_id) if q is not None else None

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(topic, queue_id, self._cq_root / topic / str(queue_id), self.config.mapped_file_size_consume_queue)
        self._queues.setdefault(topic, {})[queue_id] = cq
        return cq

    def topics(self) -> list[str]:
        """Topics that have a consume queue, sorted."""
        return sorted(self._queues)

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids of ``topic`` that have a consume queue, sorted."""
        return sorted(self._queues.get(topic, {}))

    # ------------------------------------------------------------------ put

    def put_message(self, msg: MessageInner) -> PutResult:
        """Append one message (``DefaultMessageStore.putMessage``); see :meth:`put_messages`."""
        return self.put_messages([msg])

    def _check(self, msgs: list[MessageInner]) -> PutStatus | None:
        if not msgs:
            raise InvalidArgumentError("put_messages needs at least one message")
        topic, qid = msgs[0].topic, msgs[0].queue_id
        tlen = len(topic.encode())
        if tlen == 0 or tlen > 255 or (tlen > 127 and not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))):
            return PutStatus.MESSAGE_ILLEGAL
        if topic in (".", "..") or "/" in topic or "\x00" in topic or "\\" in topic:
            return PutStatus.MESSAGE_ILLEGAL  # would escape consumequeue/<topic>/
        for m in msgs:
            if m.topic != topic or m.queue_id != qid:
                raise InvalidArgumentError("all messages of one put_messages call must share topic and queue_id")
            if len(m.body) > self.config.max_message_size:
                return PutStatus.MESSAGE_ILLEGAL
        return None

    def put_messages(self, msgs: list[MessageInner]) -> PutResult:
        """Append a batch to one queue in one write (``putMessages``); offsets are consecutive.

        Encodes each record with its final queue offset, physical offset and store timestamp
        (one clock read per batch), writes the batch into the mapped segment (rolling to a new
        segment as a whole when it does not fit), then appends the consume-queue entries. No
        fsync happens here; see :meth:`flush`. Prepared/rollback transaction records get queue
        offset 0 and no consume-queue entry.

        Args:
            msgs: messages of one topic and queue id.

        Returns:
            PUT_OK with offsets and offsetMsgIds; MESSAGE_ILLEGAL (bad topic, body over
            ``max_message_size``, batch larger than a segment, bad host), PROPERTIES_SIZE_EXCEEDED
            (properties over 32767 bytes), SERVICE_NOT_AVAILABLE (not loaded / closed), or
            CREATE_MAPPED_FILE_FAILED (a segment file cannot be created; nothing was stored).

        Raises:
            InvalidArgumentError: empty list, or messages for different queues.
            OSError: a consume-queue file cannot be created (the record is in the commit log and
                is re-indexed by the next abnormal recovery).
        """
        if not self._loaded or self._closed:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
        bad = self._check(msgs)
        if bad is not None:
            return PutResult(bad)
        first = msgs[0]
        topic, qid = first.topic, first.queue_id
        tags: list[int | None] = [self._put_tags_code(m) for m in msgs]
        seg_size = self.commit_log.segment_size
        prefix = self._id_prefixes.get(first.store_host)
        if prefix is None:
            try:
                prefix = create_offset_msg_id(first.store_host, 0)[:-16]
            except InvalidArgumentError:
                return PutResult(PutStatus.MESSAGE_ILLEGAL)
            self._id_prefixes[first.store_host] = prefix
        with self._lock:
            if self._closed:
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
            now = self.clock.now_ms()
            cq = self._queue(topic, qid) or self._new_queue(topic, qid)
            qo = first_qo = cq.max_offset
            pos = base = self.commit_log.write_offset
            records: list[bytes] = []
            dispatched: list[bool] = []
            try:
                for m in msgs:
                    txn = m.sys_flag & sf.TRANSACTION_TYPE_MASK
                    dispatch = txn != sf.TRANSACTION_PREPARED_TYPE and txn != sf.TRANSACTION_ROLLBACK_TYPE
                    rec = encode_record(
                        topic=topic,
                        body=m.body,
                        properties=m.properties,
                        queue_id=qid,
                        flag=m.flag,
                        queue_offset=qo if dispatch else 0,
                        physical_offset=pos,
                        sys_flag=m.sys_flag,
                        born_timestamp=m.born_timestamp,
                        born_host=m.born_host,
                        store_timestamp=now,
                        store_host=m.store_host,
                        reconsume_times=m.reconsume_times,
                        prepared_transaction_offset=m.prepared_transaction_offset,
                    )
                    records.append(rec)
                    dispatched.append(dispatch)
                    pos += len(rec)
                    if dispatch:
                        qo += 1
            except InvalidArgumentError as exc:
                status = PutStatus.PROPERTIES_SIZE_EXCEEDED if "properties" in str(exc) else PutStatus.MESSAGE_ILLEGAL
                log.info("topic=%s queue=%d put rejected: %s", topic, qid, exc)
                return PutResult(status)
            total = pos - base
            if total + END_FILE_MIN_BLANK_LENGTH > seg_size:
                return PutResult(PutStatus.MESSAGE_ILLEGAL)
            try:
                start = self.commit_log.append(records, total)
            except OSError as exc:
                log.error("topic=%s queue=%d cannot create a commit-log segment: %s", topic, qid, exc)
                return PutResult(PutStatus.CREATE_MAPPED_FILE_FAILED)
            phys = start
            ids: list[str] = []
            entries: list[tuple[int, int, int]] = []
            index = self.index
            for rec, dispatch, code, m in zip(records, dispatched, tags, msgs):
                n = len(rec)
                if index is not None:
                    index.add(topic, m.properties, phys, m.sys_flag, now)
                if dispatch:
                    if code is None:
                        code = self._schedule_tags_code(_property(m.properties, PROPERTY_DELAY_TIME_LEVEL), now) or 0
                    entries.append((phys, n, code))
                ids.append(f"{prefix}{phys:016X}")
                phys += n
            cq.append_many(entries)
            self._last_store_ts = now
            max_offset = cq.max_offset
        listener = self.arrival_listener
        if listener is not None and max_offset > first_qo:
            listener(topic, qid, max_offset)
        return PutResult(
            PutStatus.PUT_OK,
            wrote_offset=start,
            wrote_bytes=total,
            msg_ids=ids,
            queue_offset=first_qo if dispatched[0] else 0,
            msg_num=len(records),
            store_timestamp=now,
        )

    def _put_tags_code(self, m: MessageInner) -> int | None:
        """Tags code known before the store time; None = schedule topic, computed under the lock."""
        if m.tags_code is not None:
            return m.tags_code
        if m.topic == SCHEDULE_TOPIC and _property(m.properties, PROPERTY_DELAY_TIME_LEVEL):
            return None
        tags = _property(m.properties, PROPERTY_TAGS)
        if not tags:
            return 0
        code = self._tag_codes.get(tags)
        if code is None:
            if len(self._tag_codes) >= 4096:
                self._tag_codes.clear()
            code = self._tag_codes[tags] = tag_code(tags)
        return code

    # ------------------------------------------------------------------ flush

    def flush(self, *, consume_queues: bool = True, least_pages: int = 0) -> int:
        """Sync appended data to disk; return the flushed commit-log offset (bytes).

        Mirrors ``FlushRealTimeService``/``GroupCommitService`` (the commit log) and
        ``FlushConsumeQueueService`` (consume queues + checkpoint). Thread-safe: runs in a worker
        thread while puts continue; the lock is held only to read positions.

        Args:
            consume_queues: also sync every dirty consume queue and rewrite the checkpoint (the
                group-commit path may pass False and leave that to a periodic call).
            least_pages: sync the commit log only when at least this many 4 KiB pages are dirty
                (``flushCommitLogLeastPages``); 0 = always.

        Raises:
            OSError: a sync failed; the flushed offset does not advance.
            ClientClosedError: the store is closed.
        """
        with self._flush_lock:
            if self._closed:
                raise ClientClosedError("message store is closed")
            return self._flush_locked(consume_queues=consume_queues, least_pages=least_pages, force_checkpoint=False)

    def _flush_locked(self, *, consume_queues: bool, least_pages: int, force_checkpoint: bool) -> int:
        with self._lock:
            upto = self.commit_log.write_offset
            ts = self._last_store_ts
            cqs = [cq for qs in self._queues.values() for cq in qs.values()] if consume_queues else []
            index = self.index if consume_queues else None
            index_batch = index.take_pending(upto) if index is not None else None
        files = self.commit_log.files
        if upto - files.flushed >= least_pages * _PAGE:
            files.flush(upto)
        flushed = files.flushed
        if consume_queues:
            for cq in cqs:
                if cq.files.flushed < cq.write_pos:
                    cq.flush()
            if index is not None and index_batch is not None:
                index.write(*index_batch, force=force_checkpoint)
            cp = self._checkpoint
            if force_checkpoint or cp.master_flushed_offset != flushed:
                cp.physic_msg_timestamp = cp.logics_msg_timestamp = ts
                cp.master_flushed_offset = cp.confirm_phy_offset = flushed
                cp.save()
        return flushed

    @property
    def flushed_offset(self) -> int:
        """Commit-log offset up to which data is on disk, bytes."""
        return self.commit_log.files.flushed

    # ------------------------------------------------------------------ offsets

    def get_max_phy_offset(self) -> int:
        """End of the commit log, bytes (``getMaxPhyOffset``)."""
        return self.commit_log.write_offset

    def get_min_phy_offset(self) -> int:
        """Start of the commit log, bytes (``getMinPhyOffset``)."""
        return self.commit_log.min_offset

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        """One past the last queue offset (``getMaxOffsetInQueue``); 0 for an unknown queue."""
        cq = self._queue(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        """First queue offset present (``getMinOffsetInQueue``); 0 for an unknown queue."""
        cq = self._queue(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def get_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """Store time (ms) of the message at queue ``offset``, or -1 (``getMessageStoreTimeStamp``)."""
        cq = self._queue(topic, queue_id)
        entry = cq.entry(offset) if cq is not None else None
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time (ms) of the queue's first message, or -1 (``getEarliestMessageTime``)."""
        cq = self._queue(topic, queue_id)
        if cq is None:
            return -1
        return self.get_store_timestamp(topic, queue_id, cq.min_offset)

    def get_offset_by_timestamp(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset whose store time is >= ``timestamp_ms`` (``getOffsetInQueueByTime``).

        Follows 5.x ``ConsumeQueue.getOffsetInQueueByTime(ts, BoundaryType.LOWER)``: when every
        message is older it returns the max offset, when every one is newer the min offset; an
        unknown or empty queue gives 0. The binary search runs over the whole queue.
        """
        cq = self._queue(topic, queue_id)
        if cq is None or cq.max_offset == 0:
            return 0
        lo, hi = cq.min_offset, cq.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            entry = cq.entry(mid)
            ts = self.commit_log.pickup_store_timestamp(entry[0], entry[1]) if entry is not None else -1
            if ts < timestamp_ms:  # removed/blank entries (-1) count as older
                lo = mid + 1
            else:
                hi = mid
        return lo

    def query_message(
        self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int, *, unique: bool = False
    ) -> QueryResult:
        """Records indexed under ``topic#key`` stored in ``[begin_ts, end_ts]`` (``queryMessage``).

        Like Java, the newest matches win: candidates are taken newest first until ``max_num``
        (capped by ``max_msgs_num_batch``, 64) are found, then returned in commit-log order. Each
        record is checked against the key (its UNIQ_KEY or a KEYS word; only UNIQ_KEY when
        ``unique``), so stale or colliding entries never reach the caller.

        Args:
            topic: topic the message was stored in.
            key: a KEYS word or a UNIQ_KEY.
            max_num: most records wanted.
            begin_ts: earliest store time, ms (inclusive).
            end_ts: latest store time, ms (inclusive).
            unique: ``key`` is a UNIQ_KEY (``_UNIQUE_KEY_QUERY``).

        Returns:
            The records (views into the mapped commit log) and the index's last update point;
            empty when the index is disabled.

        Raises:
            ClientClosedError: the store is closed.
        """
        if self._closed:
            raise ClientClosedError("message store is closed")
        index = self.index
        if index is None:
            return QueryResult()
        result = QueryResult([], index.last_timestamp, index.last_offset)
        max_num = min(max_num, self.config.max_msgs_num_batch)
        if max_num <= 0 or not key:
            return result
        found: list[tuple[int, memoryview]] = []
        cl = self.commit_log
        for offset in reversed(index.lookup(topic, key)):
            size = cl.record_size_at(offset)
            buf = cl.read(offset, size) if size > 0 else None
            if buf is None:
                continue
            ts = cl.pickup_store_timestamp(offset, size)
            if ts < begin_ts or ts > end_ts:
                continue
            msg = cl.look(offset)
            if msg is None or msg.topic != topic:
                continue
            if unique:
                if msg.properties.get("UNIQ_KEY") != key:
                    continue
            elif key not in index_names(msg.properties):
                continue
            found.append((offset, buf))
            if len(found) >= max_num:
                break
        found.sort(key=lambda f: f[0])
        result.buffers = [buf for _, buf in found]
        return result

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """Decode the record at a commit-log offset, body left compressed (``lookMessageByOffset``)."""
        return self.commit_log.look(commit_log_offset)

    # ------------------------------------------------------------------ get

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        max_total_bytes: int = MAX_PULL_MSG_SIZE,
        tag_filter: Callable[[int], bool] | None = None,
    ) -> GetResult:
        """Read raw records of one queue from ``offset`` (``DefaultMessageStore.getMessage``).

        Status and ``next_begin_offset`` follow the reference's §2.8 (this store is a master, so
        offsets are always corrected). The scan stays inside one consume-queue file and stops at
        ``max_msg_nums`` messages, ``max_total_bytes`` (at least 100, at most 128 MiB),
        ``max_transfer_bytes/count_on_message_in_memory``, or after
        ``max(max_filter_message_size, max_msg_nums * 20)`` bytes of entries; at least one
        matching message is returned when there is one in range. ``next_begin_offset`` is one
        past the last entry scanned, filtered-out entries included.

        Args:
            topic: topic.
            queue_id: queue id.
            offset: first queue offset wanted.
            max_msg_nums: most messages to return.
            max_total_bytes: byte cap of the records returned.
            tag_filter: predicate on the consume-queue tags code; False skips the entry.

        Returns:
            The result; ``buffers`` are views into the mapped commit log (valid until the store
            closes).

        Raises:
            ClientClosedError: the store is closed.
        """
        if self._closed:
            raise ClientClosedError("message store is closed")
        cq = self._queue(topic, queue_id)
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, 0)
        min_off, max_off = cq.min_offset, cq.max_offset
        if max_off == 0:
            return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, min_off, max_off)
        if offset < min_off:
            return GetResult(GetStatus.OFFSET_TOO_SMALL, min_off, min_off, max_off)
        if offset == max_off:
            return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, min_off, max_off)
        if offset > max_off:
            return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, max_off, min_off, max_off)
        entries = cq.entries_in_file(offset, max_off)
        if entries is None:
            return GetResult(GetStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_off, max_off)
        cfg = self.config
        max_scan = max(cfg.max_filter_message_size, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
        max_bytes = min(max(max_total_bytes, 100), MAX_PULL_MSG_SIZE, cfg.max_transfer_bytes_on_message_in_memory)
        max_count = min(max_msg_nums, cfg.max_transfer_count_on_message_in_memory)
        read = self.commit_log.read
        status = GetStatus.NO_MATCHED_MESSAGE
        buffers: list[memoryview | bytes] = []
        total = 0
        next_begin = offset
        skip_below = -1
        qo = offset - 1
        for phys, size, code in entries:
            qo += 1
            if qo - offset >= max_scan:
                break
            if total and (len(buffers) + 1 > max_count or total + size > max_bytes):
                break
            next_begin = qo + 1
            if phys < skip_below or size == BLANK_ENTRY_SIZE:
                continue
            if tag_filter is not None and not tag_filter(code):
                if not total:
                    status = GetStatus.NO_MATCHED_MESSAGE
                continue
            buf = read(phys, size)
            if buf is None:
                if not total:
                    status = GetStatus.MESSAGE_WAS_REMOVING
                skip_below = self.commit_log.roll_next_file(phys)
                continue
            buffers.append(buf)
            total += size
            status = GetStatus.FOUND
        return GetResult(status, next_begin, min_off, max_off, buffers, len(buffers), total)


def _property(props: dict[str, str] | str, key: str) -> str | None:
    """One property of a dict or a wire properties string (last duplicate wins, as in Java)."""
    if not isinstance(props, str):
        return props.get(key)
    needle = key + "\x01"
    i = props.rfind(needle)
    while i > 0 and props[i - 1] != "\x02":
        i = props.rfind(needle, 0, i)
    if i < 0:
        return None
    start = i + len(needle)
    j = props.find("\x02", start)
    return props[start : j if j >= 0 else len(props)] or None
