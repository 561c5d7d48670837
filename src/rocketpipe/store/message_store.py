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

import errno
import functools
import itertools
import logging
import operator
import os
import shutil
import struct
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate, compress
from types import TracebackType
from typing import Final

import orjson

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ClientClosedError, InvalidArgumentError, ProtocolError
from ..protocol import sysflag as sf
from ..protocol.message import (
    NO_QUEUE_SLOT,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_TAGS,
    PROPERTY_TIMER_OUT_MS,
    MessageExt,
    create_offset_msg_id,
    create_offset_msg_ids,
    encode_records,
    tag_code,
)
from ..protocol.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, TIMER_TOPIC, is_validator_system_topic
from ..protocol.names import SCHEDULE_TOPIC as SCHEDULE_TOPIC
from ..ratelog import RateLimitedLog
from .api import (
    CommitLogFile,
    GetResult,
    GetStatus,
    MessageBatch,
    MessageInner,
    PutResult,
    PutStatus,
    QueryResult,
    property_value,
)
from .batch_encoder import decode_inners, encode_batch
from .checkpoint import Checkpoint
from .commit_log import END_FILE_MIN_BLANK_LENGTH, CommitLog
from .config import CQ_STORE_UNIT_SIZE, StoreConfig
from .consume_queue import BLANK_ENTRY_SIZE, ConsumeQueue
from .index import KeyIndex, index_names, scan_commit_log
from .json_file import save_json
from .segments import StoreFileError

log = logging.getLogger(__name__)

#: physical memory of the machine, bytes (Java's ``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``)
TOTAL_PHYSICAL_MEMORY_SIZE: Final = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

#: ``DefaultMessageStore.MAX_PULL_MSG_SIZE`` (5.x): cap of one read, bytes.
MAX_PULL_MSG_SIZE: Final = 128 * 1024 * 1024
_PAGE: Final = 4096
#: One consume-queue entry: commit-log offset, size, tags code (``ConsumeQueue.CQ_STORE_UNIT_SIZE``).
_CQ_ENTRY: Final = struct.Struct(">qiq")


@functools.lru_cache(maxsize=64)
def _cq_entries_struct(n: int) -> struct.Struct:
    """A struct unpacking ``n`` consume-queue entries at once (commit-log offset, size, tags code, ...)."""
    return struct.Struct(">" + "qiq" * n)


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
        self._manifest_path = root / "consumequeue.json"  # max offset of every queue at the last clean stop
        self._disk_full = False  # RunningFlags DISK_FULL: puts refused
        self._disk_full_warn = RateLimitedLog(log, 60.0)
        self._checkpoint = Checkpoint(root / "checkpoint")
        self.commit_log = CommitLog(root / "commitlog", config.mapped_file_size_commit_log)
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
        self._tag_codes_b: dict[bytes, int] = {}  # the same, keyed by the UTF-8 bytes (batch puts)
        #: key index (``index/``, Java's IndexService) behind :meth:`query_message`; None when disabled
        self.index: KeyIndex | None = (
            KeyIndex(root / "index", config.max_hash_slot_num, config.max_index_num)
            if config.message_index_enable
            else None
        )

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> MessageStore:
        self.load()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def load(self) -> None:
        """Open the files and recover (``DefaultMessageStore.load`` + ``recover``).

        After a clean stop (no ``abort`` file, checkpoint agrees with the files, no file missing
        or cut short) the files are trusted as they are; nothing is scanned. After a crash the
        commit log is walked from the checkpoint's flushed offset (not the start of its segment):
        each record is checked, damaged ranges that good records follow are skipped and
        recorded, only a torn tail is cut, and consume queues are cut and re-dispatched so that
        they reference exactly the recovered records. Records that were on disk are checked
        again whenever they are read (see :meth:`CommitLog.record_ok`), so a record damaged
        below the checkpoint is never handed out either.

        Consume queues with a missing or short file, a gap, entries that do not match the
        commit log, or fewer entries than the last clean stop recorded are rebuilt from the
        commit log (one WARNING line each). Then ``abort`` is created; :meth:`close` removes it.

        Raises:
            StoreFileError: a commit-log file is missing from the middle of the sequence (the
                broker refuses to start; the message names the files) or has the wrong size.
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
        cl = self.commit_log
        cl.files.load()
        for problem in cl.files.damage:
            if "missing" in problem:
                cl.close()
                raise StoreFileError(
                    f"commit log {cl.files.directory}: {problem}; refusing to start, as the data after the gap "
                    "could not be addressed. Restore the missing file, or move the later files away to start "
                    "without them"
                )
            log.warning("commitlog %s; recovering as after a crash", problem)
        clean = not abnormal and cp is not None and cl.trust_end(cp.master_flushed_offset)
        if not clean and (cp is not None or cl.files.segments):
            log.warning("store root=%s abnormal recovery (abort=%s checkpoint=%s)", root, abnormal, cp is not None)
        rebuild = self._load_consume_queues(thorough=not clean)
        if not clean:
            self._recover_abnormally(cp.master_flushed_offset if cp is not None else cl.min_offset)
        rebuild.update(self._check_consume_queues(rebuild))
        if rebuild:
            self._rebuild_consume_queues(rebuild)
        for queues in self._queues.values():
            for cq in queues.values():
                cq.correct_min_offset(cl.min_offset)
        if self.index is not None:  # maps index/, re-indexes the commit log past its last entry
            self.index.load(cl.write_offset, lambda start: scan_commit_log(cl, start))
        self._last_store_ts = self._checkpoint.physic_msg_timestamp
        if cp is None:  # the file's page exists from now on: a later save never needs disk space
            self._checkpoint.save()
        self._abort_path.touch()
        self._loaded = True
        if not clean or rebuild:
            self.flush()

    def _load_consume_queues(self, *, thorough: bool) -> dict[tuple[str, int], str]:
        """Map every consume queue; return the ones whose files are missing or cut short."""
        damaged: dict[tuple[str, int], str] = {}
        if not self._cq_root.is_dir():
            return damaged
        for tdir in sorted(self._cq_root.iterdir()):
            if not tdir.is_dir():
                continue
            for qdir in sorted(tdir.iterdir()):
                if qdir.is_dir() and qdir.name.lstrip("-").isdigit():
                    cq = self._new_queue(tdir.name, int(qdir.name))
                    cq.load(thorough=thorough)
                    if cq.files.damage:
                        damaged[(cq.topic, cq.queue_id)] = "; ".join(cq.files.damage)
        return damaged

    def _check_consume_queues(self, known: dict[tuple[str, int], str]) -> dict[tuple[str, int], str]:
        """Consume queues that disagree with the commit log or with the last clean stop.

        Checks the first and last entry of every file against the record it points to (same
        topic, queue id and queue offset; the record itself checks out), and each queue's max
        offset against the manifest :meth:`close` writes. Cheap: two records per file.
        """
        bad: dict[tuple[str, int], str] = {}
        manifest = self._read_manifest()
        for topic, qids in manifest.items():
            for qid, max_offset in qids.items():
                key = (topic, qid)
                cq = self._queue(topic, qid)
                if key in known:
                    continue
                if cq is None:
                    bad[key] = f"its directory is gone (it had {max_offset} entries at the last clean stop)"
                elif cq.max_offset < max_offset:
                    bad[key] = f"it has {cq.max_offset} entries, {max_offset} at the last clean stop"
        cl = self.commit_log
        for queues in self._queues.values():
            for cq in queues.values():
                key = (cq.topic, cq.queue_id)
                if key in known or key in bad:
                    continue
                problem = cq.check_samples(cl)
                if problem is not None:
                    bad[key] = problem
        return bad

    def _rebuild_consume_queues(self, targets: dict[tuple[str, int], str]) -> None:
        """Recreate ``targets`` from the commit log: one walk over every stored record."""
        started = time.monotonic()
        manifest = self._read_manifest()
        for topic, qid in targets:
            old = self._queue(topic, qid)
            if old is not None:
                old.close()
            qdir = self._cq_root / topic / str(qid)
            if qdir.is_dir():
                for f in qdir.iterdir():
                    f.unlink()
            self._new_queue(topic, qid)
        counts = dict.fromkeys(targets, 0)

        def on_record(msg: MessageExt) -> None:
            key = (msg.topic, msg.queue_id)
            if key not in counts or msg.sys_flag & sf.TRANSACTION_TYPE_MASK in NO_QUEUE_SLOT:
                return
            cq = self._queues[msg.topic][msg.queue_id]
            qo = msg.queue_offset
            if not cq.files.segments:
                cq.start_at(qo)
            elif qo < cq.max_offset:
                return  # an older copy at the same queue offset was kept; entries never go back
            cq.fill_blanks_to(qo)
            cq.append(msg.commit_log_offset, msg.store_size, self._recovered_tags_code(msg))
            counts[key] += 1

        cl = self.commit_log
        cl.scan(cl.min_offset, self.config.check_crc_on_recover, on_record, stop=cl.write_offset)
        for (topic, qid), reason in targets.items():
            cq = self._queues[topic][qid]
            if not cq.files.segments and (last := manifest.get(topic, {}).get(qid, 0)):
                cq.start_at(last)  # every record is gone: keep the offsets where they were
            cq.fill_blanks_to(manifest.get(topic, {}).get(qid, 0))  # damaged last records: never rewind
            log.warning(
                "consume queue topic=%s queue=%d rebuilt from the commit log: %d entries, offsets [%d, %d) (%s)",
                topic,
                qid,
                counts[(topic, qid)],
                self.get_min_offset(topic, qid),
                self.get_max_offset(topic, qid),
                reason,
            )
        log.warning("rebuilt %d consume queues in %.1f s", len(targets), time.monotonic() - started)

    def _read_manifest(self) -> dict[str, dict[int, int]]:
        """``{topic: {queue id: max offset}}`` from the last clean stop, or {} (missing/bad)."""
        try:
            raw = orjson.loads(self._manifest_path.read_bytes())
            return {str(t): {int(q): int(m) for q, m in qs.items()} for t, qs in raw.items()}
        except FileNotFoundError:
            return {}
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
            log.warning(
                "file=%s unreadable (%s); consume queues checked against the commit log only", self._manifest_path, exc
            )
            return {}

    def _write_manifest(self) -> None:
        table = {t: {str(q): cq.max_offset for q, cq in qs.items()} for t, qs in self._queues.items()}
        save_json(self._manifest_path, table)

    def _recover_abnormally(self, checkpoint_offset: int) -> None:
        def redispatch(msg: MessageExt) -> None:
            if msg.sys_flag & sf.TRANSACTION_TYPE_MASK in NO_QUEUE_SLOT:
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
                    log.warning(
                        "topic=%s queue=%d dropped %d entries beyond commitlog end=%d", cq.topic, cq.queue_id, n, end
                    )
        if self._checkpoint.master_flushed_offset > end:
            self._checkpoint.master_flushed_offset = end

    def _recovered_tags_code(self, msg: MessageExt) -> int:
        """The consume-queue tags code of a record re-dispatched by recovery (the one its put gave)."""
        if msg.topic == SCHEDULE_TOPIC:
            code = self._schedule_tags_code(msg.properties.get(PROPERTY_DELAY_TIME_LEVEL), msg.store_timestamp)
            if code is not None:
                return code
        elif msg.topic == TIMER_TOPIC:  # the broker's timer puts its delivery time there
            try:
                return int(msg.properties.get(PROPERTY_TIMER_OUT_MS, ""))
            except ValueError:
                pass
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

        When the final flush or manifest write fails (a full disk, an I/O error) the error is
        logged in one line, ``abort`` stays so that the next load recovers from the checkpoint,
        and the files are still unmapped and closed: close never raises for it.
        """
        if self._closed or not self._loaded:
            self._closed = True
            return
        with self._flush_lock:
            with self._lock:  # no put can be half-way through an append below
                self._closed = True
            try:
                self._flush_locked(consume_queues=True, least_pages=0, force_checkpoint=True)
                self._write_manifest()
            except OSError as exc:
                log.error(
                    "store root=%s final flush failed (%s); the abort marker stays and the next start recovers "
                    "from the checkpoint at offset %d",
                    self.config.root_dir,
                    exc,
                    self._checkpoint.master_flushed_offset,
                )
            else:
                self._abort_path.unlink(missing_ok=True)
            finally:
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
        cq = ConsumeQueue(
            topic, queue_id, self._cq_root / topic / str(queue_id), self.config.mapped_file_size_consume_queue
        )
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

    def _put_refusal(self, msgs: list[MessageInner]) -> PutStatus | None:
        """Why a put is refused before any work (``DefaultMessageStore.checkStoreStatus`` +
        ``checkMessage``); None = go on.

        SERVICE_NOT_AVAILABLE: not loaded, closed, or the disk is full. MESSAGE_ILLEGAL: a topic
        that is empty, over 127 bytes (255 for retry/DLQ topics) or not a safe directory name, or
        a body over ``max_message_size``.

        Raises:
            InvalidArgumentError: empty list, or messages for different queues.
        """
        refused = self._store_refusal()
        if refused is not None:
            return refused
        if not msgs:
            raise InvalidArgumentError("put_messages needs at least one message")
        topic, qid = msgs[0].topic, msgs[0].queue_id
        refused = _topic_refusal(topic)
        if refused is not None:
            return refused
        max_size = self.config.max_message_size
        for m in msgs:
            if m.topic != topic or m.queue_id != qid:
                raise InvalidArgumentError("all messages of one put_messages call must share topic and queue_id")
            if len(m.body) > max_size:
                return PutStatus.MESSAGE_ILLEGAL
        return None

    def _store_refusal(self) -> PutStatus | None:
        """SERVICE_NOT_AVAILABLE when the store cannot take puts (``checkStoreStatus``); None = go on."""
        if not self._loaded or self._closed:
            return PutStatus.SERVICE_NOT_AVAILABLE
        if self._disk_full:
            self._disk_full_warn.warning(
                "put-refused", "put refused: the store's disk is full (root=%s)", self.config.root_dir
            )
            return PutStatus.SERVICE_NOT_AVAILABLE
        return None

    def _new_id_prefix(self, store_host: str) -> str | None:
        """Hex of ``store_host``'s address bytes, the offsetMsgId prefix (memoised); None = bad host."""
        try:
            prefix = create_offset_msg_id(store_host, 0)[:-16]
        except InvalidArgumentError:
            return None
        self._id_prefixes[store_host] = prefix
        return prefix

    def put_messages(self, msgs: list[MessageInner]) -> PutResult:
        """Append a batch to one queue in one write (``putMessages``); offsets are consecutive.

        Encodes each record with its final queue offset, physical offset and store timestamp
        (one clock read per batch), writes the batch into the mapped segment (rolling to a new
        segment as a whole when it does not fit), then appends the consume-queue entries. No
        fsync happens here; see :meth:`flush`. Prepared/rollback transaction records get queue
        offset 0 and no consume-queue entry.

        The steps follow ``CommitLog.asyncPutMessages``: refuse (:meth:`_put_refusal`), encode
        (:func:`~rocketpipe.protocol.message.encode_records`, ``MessageExtEncoder``), append (``CommitLog.append``, Java's
        ``doAppend``), dispatch (:meth:`_dispatch`: consume-queue entries, key index,
        offsetMsgIds). Each step runs once per batch; its loop over the messages is inside it.

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
        refused = self._put_refusal(msgs)
        if refused is not None:
            return PutResult(refused)
        first = msgs[0]
        topic, qid = first.topic, first.queue_id
        tags_code = self._put_tags_code
        tags: list[int | None] = [tags_code(m) for m in msgs]
        prefix = self._id_prefixes.get(first.store_host) or self._new_id_prefix(first.store_host)
        if prefix is None:
            return PutResult(PutStatus.MESSAGE_ILLEGAL)
        with self._lock:  # encode at the final offsets, append, dispatch
            if self._closed:
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
            now = self.clock.now_ms()
            cq = self._queue(topic, qid) or self._new_queue(topic, qid)
            first_qo = cq.max_offset
            base = self.commit_log.write_offset
            try:
                records, dispatched, qo, total = encode_records(msgs, topic, qid, first_qo, base, now)
            except InvalidArgumentError as exc:
                return _encode_failed(exc, topic, qid)
            if total + END_FILE_MIN_BLANK_LENGTH > self.commit_log.segment_size:
                return PutResult(PutStatus.MESSAGE_ILLEGAL)
            try:  # every file this put needs exists before a byte is written
                cq.ensure_capacity(qo - first_qo)
                start = self.commit_log.append(records, total)
            except OSError as exc:
                return self._allocation_failed(exc, topic, qid)
            ids = self._dispatch(cq, msgs, records, dispatched, tags, start, now, prefix)
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

    def put_batch(self, batch: MessageBatch) -> PutResult:
        """Append a client's batch to one queue (``putMessages(MessageExtBatch)``), encoded in one
        pass from its wire body (:func:`~rocketpipe.store.batch_encoder.encode_batch`).

        Same outcome and records as :meth:`put_messages` of the batch's messages
        (:func:`~rocketpipe.store.batch_encoder.decode_inners`), which serves the batches this
        path does not: a transactional sysflag, ``SCHEDULE_TOPIC_XXXX``, or a body over
        ``max_message_size`` (each message is checked then). The result also carries every
        record's tags code.

        Returns:
            As :meth:`put_messages`; MESSAGE_ILLEGAL with a ``remark`` for a malformed or empty body.
        """
        topic = batch.topic
        if (
            batch.sys_flag & sf.TRANSACTION_TYPE_MASK in NO_QUEUE_SLOT
            or topic == SCHEDULE_TOPIC
            or len(batch.body) > self.config.max_message_size
        ):
            try:
                msgs = decode_inners(batch)
            except ProtocolError as exc:
                return _batch_refused(str(exc), topic, batch.queue_id)
            if not msgs:
                return _batch_refused("empty batch body", topic, batch.queue_id)
            return self.put_messages(msgs)
        refused = self._store_refusal() or _topic_refusal(topic)
        if refused is not None:
            return PutResult(refused)
        qid, host = batch.queue_id, batch.store_host
        prefix = self._id_prefixes.get(host) or self._new_id_prefix(host)
        if prefix is None:
            return PutResult(PutStatus.MESSAGE_ILLEGAL)
        with self._lock:  # as put_messages, the encoding and dispatch one pass each
            if self._closed:
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
            now = self.clock.now_ms()
            cq = self._queue(topic, qid)
            first_qo = 0 if cq is None else cq.max_offset
            base = self.commit_log.write_offset
            try:
                enc = encode_batch(batch, first_qo, base, now, self._bytes_tags_code)
            except ProtocolError as exc:
                return _batch_refused(str(exc), topic, qid)
            except InvalidArgumentError as exc:
                return _encode_failed(exc, topic, qid)
            n = len(enc.records)
            if n == 0:
                return _batch_refused("empty batch body", topic, qid)
            if enc.total + END_FILE_MIN_BLANK_LENGTH > self.commit_log.segment_size:
                return PutResult(PutStatus.MESSAGE_ILLEGAL)
            try:  # every file this put needs exists before a byte is written
                if cq is None:
                    cq = self._new_queue(topic, qid)
                cq.ensure_capacity(n)
                start = self.commit_log.append(enc.records, enc.total)
            except OSError as exc:
                return self._allocation_failed(exc, topic, qid)
            entries = enc.entries
            if start != base:  # rolled to a new segment: the records moved as a whole
                shift = start - base
                entries = [(phys + shift, size, code) for phys, size, code in entries]
            cq.append_many(entries)
            offsets = [e[0] for e in entries]
            if self.index is not None:
                self.index.add_batch(topic, enc.keys, offsets, now)
            self._last_store_ts = now
            max_offset = cq.max_offset
        listener = self.arrival_listener
        if listener is not None:
            listener(topic, qid, max_offset)
        return PutResult(
            PutStatus.PUT_OK,
            wrote_offset=start,
            wrote_bytes=enc.total,
            msg_ids=create_offset_msg_ids(prefix, offsets),
            queue_offset=first_qo,
            msg_num=n,
            store_timestamp=now,
            tags_codes=[e[2] for e in entries],
        )

    def _bytes_tags_code(self, tags: bytes) -> int:
        """Tags code of a ``TAGS`` value given as UTF-8 bytes (bounded memo, as :meth:`_put_tags_code`)."""
        code = self._tag_codes_b.get(tags)
        if code is None:
            if len(self._tag_codes_b) >= 4096:
                self._tag_codes_b.clear()
            code = self._tag_codes_b[tags] = tag_code(tags.decode())
        return code

    def _dispatch(
        self,
        cq: ConsumeQueue,
        msgs: list[MessageInner],
        records: list[bytes],
        dispatched: list[bool],
        tags: list[int | None],
        phys: int,
        now: int,
        prefix: str,
    ) -> list[str]:
        """Index the appended batch; return its offsetMsgIds (``CommitLogDispatcherBuildConsumeQueue``
        + ``CommitLogDispatcherBuildIndex``, done in the put under the append lock).

        Appends one consume-queue entry ``(physical offset, size, tags code)`` per dispatched
        record (schedule-topic tags codes, the delivery time in ms, are computed here from
        ``now``), adds every record to the key index when there is one, and builds each
        record's offsetMsgId (``prefix`` + its physical offset as 16 hex digits).

        Args:
            cq: the batch's consume queue.
            msgs, records, dispatched, tags: per message: the input, its encoded record, whether
                it gets a consume-queue entry, and its tags code (None = schedule topic).
            phys: commit-log offset of the first record, bytes.
            now: the batch's store timestamp, ms.
            prefix: offsetMsgId prefix of the store host.
        """
        topic = cq.topic
        offsets: list[int] = []
        entries: list[tuple[int, int, int]] = []
        index = self.index
        for rec, dispatch, code, m in zip(records, dispatched, tags, msgs, strict=False):
            n = len(rec)
            if index is not None:
                index.add(topic, m.properties, phys, m.sys_flag, now)
            if dispatch:
                if code is None:
                    code = self._schedule_tags_code(_property(m.properties, PROPERTY_DELAY_TIME_LEVEL), now) or 0
                entries.append((phys, n, code))
            offsets.append(phys)
            phys += n
        cq.append_many(entries)
        return create_offset_msg_ids(prefix, offsets)

    def _allocation_failed(self, exc: OSError, topic: str, qid: int) -> PutResult:
        """A store file could not be created: disk full → SERVICE_NOT_AVAILABLE, else CREATE_MAPPED_FILE_FAILED."""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            if not self.set_disk_full(True):
                log.error(
                    "store root=%s disk full: cannot allocate a file (%s); puts refused until space returns",
                    self.config.root_dir,
                    exc,
                )
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
        log.error("topic=%s queue=%d cannot create a store file: %s", topic, qid, exc)
        return PutResult(PutStatus.CREATE_MAPPED_FILE_FAILED)

    # ------------------------------------------------------------------ disk space and retention

    @property
    def disk_full(self) -> bool:
        """True while puts are refused because the disk is (nearly) full (``RunningFlags.isDiskFull``)."""
        return self._disk_full

    def set_disk_full(self, full: bool) -> bool:
        """Mark the disk full (puts refused) or OK again; return the previous value.

        Mirrors ``RunningFlags.getAndMakeDiskFull`` / ``getAndMakeDiskOK``. The clean service
        calls it from its disk check; the put path marks the disk full itself when a file
        cannot be allocated (ENOSPC).
        """
        prev, self._disk_full = self._disk_full, full
        return prev

    @property
    def damaged_records(self) -> int:
        """Damaged commit-log records (or ranges) found so far; never handed out."""
        return len(self.commit_log.damaged)

    def commit_log_files(self) -> list[CommitLogFile]:
        """The commit-log segments, oldest first, as the clean service sees them."""
        segs = list(self.commit_log.files.segments)
        out: list[CommitLogFile] = []
        for i, seg in enumerate(segs):
            try:
                mtime_ms = os.stat(seg.path).st_mtime_ns // 1_000_000
            except FileNotFoundError:
                continue
            out.append(CommitLogFile(seg.path, seg.start, seg.end, mtime_ms, i == len(segs) - 1))
        return out

    def delete_oldest_commit_log_file(self) -> bool:
        """Delete the oldest commit-log segment unless it is being written (``deleteExpiredFile``).

        Then every consume queue's min offset moves to its first entry still in the commit log
        (``correctMinOffset``), consume-queue files wholly below the new minimum are deleted
        (``deleteExpiredFileByOffset``), and the key index drops its files below it. Call on the
        thread that serves reads (the broker's event loop). Segments deleted by an earlier call
        are unmapped here, when no flush is running.

        Returns:
            False when nothing was deleted (one segment left).

        Raises:
            OSError: a file cannot be unlinked.
        """
        if self._closed or not self._loaded:
            return False
        self._close_retired()
        with self._lock:
            seg = self.commit_log.files.delete_first()
        if seg is None:
            return False
        min_phy = self.commit_log.min_offset
        cq_files = 0
        for queues in list(self._queues.values()):
            for cq in list(queues.values()):
                cq.correct_min_offset(min_phy)
                cq_files += cq.delete_files_below(min_phy)
        index_files = 0
        delete_expired = getattr(self.index, "delete_expired", None)
        if delete_expired is not None:
            index_files = delete_expired(min_phy)
        log.info(
            "deleted commit-log file=%s [%d, %d); min offset now %d; %d consume-queue and %d index files deleted",
            seg.path.name,
            seg.start,
            seg.end,
            min_phy,
            cq_files,
            index_files,
        )
        return True

    def clean_expired_consume_queues(self) -> tuple[int, int]:
        """Destroy every consume queue whose last record ends below the commit log's min offset.

        Mirrors ``DefaultMessageStore.cleanExpiredConsumerQueue`` (``ConsumeQueueStore.cleanExpired``):
        queues of system topics (``TopicValidator.isSystemTopic``) and queues without an entry
        are kept; a topic left without queues is forgotten. A destroyed queue starts again at
        offset 0 when a message arrives for it, as in Java. Call on the thread that serves
        reads (the broker's event loop); puts and flushes wait meanwhile.

        Returns:
            (queues destroyed, topics forgotten).
        """
        if self._closed or not self._loaded:
            return 0, 0
        min_phy = self.commit_log.min_offset
        queues = topics = 0
        with self._flush_lock, self._lock:
            for topic, table in list(self._queues.items()):
                if is_validator_system_topic(topic):
                    continue
                for qid, cq in list(table.items()):
                    end = cq.last_record_end()
                    if 0 <= end < min_phy:
                        log.info(
                            "consume queue topic=%s queue=%d destroyed: its last record ends at %d, "
                            "below the commit log's min offset %d",
                            topic,
                            qid,
                            end,
                            min_phy,
                        )
                        cq.destroy()
                        del table[qid]
                        queues += 1
                if not table:
                    del self._queues[topic]
                    shutil.rmtree(self._cq_root / topic, ignore_errors=True)
                    topics += 1
        return queues, topics

    def _close_retired(self) -> None:
        if not self._flush_lock.acquire(blocking=False):
            return  # a flush may still be syncing a retired segment; next time
        try:
            self.commit_log.files.close_retired()
            for queues in self._queues.values():
                for cq in queues.values():
                    cq.files.close_retired()
        finally:
            self._flush_lock.release()

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
                try:
                    index.write(*index_batch, force=force_checkpoint)
                except OSError as exc:  # the key index lags (it catches up from the commit log on load)
                    self._disk_full_warn.error(
                        "index-write", "key index write failed (%s); queries by key may miss the newest messages", exc
                    )
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

    def check_in_mem_by_consume_offset(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether the message at queue ``offset`` lies within ``access_message_in_memory_max_ratio``
        percent of the physical memory from the end of the commit log (Java's
        ``checkInMemByConsumeOffset`` with a batch of 1: the page cache most likely still holds
        it). False when the queue has no entry there."""
        cq = self._queue(topic, queue_id)
        entry = cq.entry(offset) if cq is not None else None
        if entry is None:
            return False
        memory = TOTAL_PHYSICAL_MEMORY_SIZE * self.config.access_message_in_memory_max_ratio // 100
        return self.commit_log.write_offset - entry[0] < memory

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
        *,
        per_message: bool = True,
    ) -> GetResult:
        """Read raw records of one queue from ``offset`` (``DefaultMessageStore.getMessage``).

        Status and ``next_begin_offset`` follow the reference's §2.8 (this store is a master, so
        offsets are always corrected). The scan stays inside one consume-queue file and stops at
        ``max_msg_nums`` messages, ``max_total_bytes`` (at least 100, at most 128 MiB),
        ``max_transfer_bytes/count_on_message_in_memory``, or after
        ``max(max_filter_message_size, max_msg_nums * 20)`` bytes of entries; at least one
        matching message is returned when there is one in range. ``next_begin_offset`` is one
        past the last entry scanned, filtered-out entries included.

        As in Java, the status/bounds decision (:func:`_offset_refusal`) comes first and the scan
        loop over the entries (:meth:`_scan`) runs once per call.

        Args:
            topic: topic.
            queue_id: queue id.
            offset: first queue offset wanted.
            max_msg_nums: most messages to return.
            max_total_bytes: byte cap of the records returned.
            tag_filter: predicate on the consume-queue tags code; False skips the entry.
            per_message: False when the caller needs only the records' concatenation (a pull
                body): ``buffers`` may then be empty, with ``runs`` set.

        Returns:
            The result; ``buffers`` (and ``runs``) are views into the mapped commit log (valid
            until the store closes).

        Raises:
            ClientClosedError: the store is closed.
        """
        if self._closed:
            raise ClientClosedError("message store is closed")
        cq = self._queue(topic, queue_id)
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, 0)
        min_off, max_off = cq.min_offset, cq.max_offset
        refused = _offset_refusal(offset, min_off, max_off)
        if refused is not None:
            return refused
        view = cq.entries_view(offset, max_off)
        if view is None:
            return GetResult(GetStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_off, max_off)
        if tag_filter is None:
            found = self._scan_plain(view, max_msg_nums, max_total_bytes, per_message)
            if found is not None:
                buffers, n, total, runs = found
                return GetResult(GetStatus.FOUND, offset + n, min_off, max_off, buffers, n, total, runs)
        status, next_begin, buffers, total = self._scan(
            _CQ_ENTRY.iter_unpack(view), offset, max_msg_nums, max_total_bytes, tag_filter
        )
        return GetResult(status, next_begin, min_off, max_off, buffers, len(buffers), total)

    def _caps(self, max_msg_nums: int, max_total_bytes: int) -> tuple[int, int, int]:
        """``(max entries scanned, max bytes, max messages)`` of one :meth:`get_message` call."""
        cfg = self.config
        max_scan = max(cfg.max_filter_message_size, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
        max_bytes = min(max(max_total_bytes, 100), MAX_PULL_MSG_SIZE, cfg.max_transfer_bytes_on_message_in_memory)
        max_count = min(max_msg_nums, cfg.max_transfer_count_on_message_in_memory)
        return max_scan, max_bytes, max_count

    def _scan_plain(
        self, view: memoryview, max_msg_nums: int, max_total_bytes: int, per_message: bool
    ) -> tuple[list[memoryview | bytes], int, int, list[memoryview]] | None:
        """The common case of :meth:`_scan` without a per-entry Python loop, or None for the loop.

        Applies when nothing needs looking at one entry at a time: no tag filter (checked by the
        caller), no blank entry in the window, every record written by this process (none to
        verify) and all of them in one commit-log segment. The window's entries are unpacked by
        one ``struct`` call; the caps are found on the running byte sum, the runs of records
        lying back to back in the commit log by comparing each record's end with the next one's
        start (C-level ``map``/``compress``).

        Returns:
            ``(buffers, count, total bytes, runs)``: ``buffers`` as :meth:`_scan`'s (empty unless
            ``per_message``), ``runs`` views of the same records, one per back-to-back run.
        """
        max_scan, max_bytes, max_count = self._caps(max_msg_nums, max_total_bytes)
        n = min(len(view) // CQ_STORE_UNIT_SIZE, max_scan, max_count)
        if n == 0:
            return None
        fields = _cq_entries_struct(n).unpack_from(view)
        phys, sizes = fields[0::3], fields[1::3]
        if BLANK_ENTRY_SIZE in sizes or min(sizes) <= 0:
            return None
        sums = list(accumulate(sizes))
        n = min(n, max(1, bisect_right(sums, max_bytes)))
        if n < len(phys):
            phys, sizes = phys[:n], sizes[:n]
        first, last_end, total = phys[0], phys[-1] + sizes[-1], sums[n - 1]
        log_ = self.commit_log
        seg = log_.files.find(first)
        if seg is None or first < log_.disk_loaded_end or last_end > min(seg.end, log_.write_offset):
            return None
        ends = list(map(operator.add, phys, sizes))
        if not all(map(operator.le, ends, phys[1:])):
            return None  # not in commit-log order: only the loop looks at such entries
        base, seg_view = seg.start, seg.view
        cuts = [0, *compress(range(1, n), map(operator.ne, ends, phys[1:])), n]
        runs = [seg_view[phys[a] - base : ends[b - 1] - base] for a, b in itertools.pairwise(cuts)]
        buffers: list[memoryview | bytes] = (
            [seg_view[p - base : e - base] for p, e in zip(phys, ends, strict=True)] if per_message else []
        )
        return buffers, n, total, runs

    def _scan(
        self,
        entries: Iterator[tuple[int, int, int]],
        offset: int,
        max_msg_nums: int,
        max_total_bytes: int,
        tag_filter: Callable[[int], bool] | None,
    ) -> tuple[GetStatus, int, list[memoryview | bytes], int]:
        """The scan loop of :meth:`get_message` over the consume-queue entries from ``offset``.

        Mirrors the ``for`` loop of ``DefaultMessageStore.getMessage``: applies the caps (see
        :meth:`get_message`), skips blank entries and entries the filter rejects, skips the rest
        of a commit-log segment that is gone, and drops records damaged on disk.

        Args:
            entries: ``(physical offset, size, tags code)`` entries of one consume-queue file,
                the first at queue offset ``offset``.
            offset, max_msg_nums, max_total_bytes, tag_filter: as for :meth:`get_message`.

        Returns:
            ``(status, next_begin_offset, buffers, total bytes)``; status is FOUND,
            NO_MATCHED_MESSAGE or MESSAGE_WAS_REMOVING.
        """
        max_scan, max_bytes, max_count = self._caps(max_msg_nums, max_total_bytes)
        read = self.commit_log.read
        verify_below = self.commit_log.disk_loaded_end
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
            if phys < verify_below and not self.commit_log.record_ok(buf, phys, size):
                continue  # damaged on disk: logged and counted, never handed out
            buffers.append(buf)
            total += size
            status = GetStatus.FOUND
        return status, next_begin, buffers, total


def _offset_refusal(offset: int, min_off: int, max_off: int) -> GetResult | None:
    """The answer of a get whose ``offset`` lies outside the queue ``[min_off, max_off)``, else None.

    The bounds decision of ``DefaultMessageStore.getMessage`` (master: next offsets corrected):
    NO_MESSAGE_IN_QUEUE (empty queue, next 0), OFFSET_TOO_SMALL (next = min), OFFSET_OVERFLOW_ONE
    (offset = max, next = offset), OFFSET_OVERFLOW_BADLY (beyond max, next = max).
    """
    if max_off == 0:
        return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, min_off, max_off)
    if offset < min_off:
        return GetResult(GetStatus.OFFSET_TOO_SMALL, min_off, min_off, max_off)
    if offset == max_off:
        return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, min_off, max_off)
    if offset > max_off:
        return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, max_off, min_off, max_off)
    return None


_property = property_value  # hot-path alias


@functools.lru_cache(maxsize=4096)
def _topic_refusal(topic: str) -> PutStatus | None:
    """MESSAGE_ILLEGAL for a topic that is empty, over 127 bytes (255 for retry/DLQ topics) or
    not a safe directory name (``DefaultMessageStore.checkMessage``); None = go on.

    Memoised: a put checks its topic once per call, and most puts go to a few topics."""
    tlen = len(topic.encode())
    if (
        tlen == 0
        or tlen > 255
        or (tlen > 127 and not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)))
    ):
        return PutStatus.MESSAGE_ILLEGAL
    if topic in (".", "..") or "/" in topic or "\x00" in topic or "\\" in topic:
        return PutStatus.MESSAGE_ILLEGAL  # would escape consumequeue/<topic>/
    return None


def _batch_refused(reason: str, topic: str, qid: int) -> PutResult:
    """MESSAGE_ILLEGAL for a batch whose body cannot be read, with ``reason`` as the remark."""
    log.info("topic=%s queue=%d batch put rejected: %s", topic, qid, reason)
    return PutResult(PutStatus.MESSAGE_ILLEGAL, remark=f"bad batch body: {reason}")


def _encode_failed(exc: InvalidArgumentError, topic: str, qid: int) -> PutResult:
    """Map an encoding error to PROPERTIES_SIZE_EXCEEDED (properties too long) or MESSAGE_ILLEGAL."""
    status = PutStatus.PROPERTIES_SIZE_EXCEEDED if "properties" in str(exc) else PutStatus.MESSAGE_ILLEGAL
    log.info("topic=%s queue=%d put rejected: %s", topic, qid, exc)
    return PutResult(status)
