"""Retention and disk-space checks of the commit log (L2; stdlib, ``clock``, ``ratelog`` only).

Mirrors ``DefaultMessageStore.CleanCommitLogService`` (``deleteExpiredFiles``,
``isSpaceToDelete``, ``isSpaceFull``), ``DefaultMessageStore.isTimeToDelete`` and
``MappedFileQueue.deleteExpiredFileByTime``. The decisions are pure given the injected wall
clock and disk-usage function, so tests drive them on a fake clock.

Threads: :meth:`CleanCommitLogService.measure` only calls ``statvfs`` (the broker runs it in a
worker thread); everything else must run on the thread that reads the store (the broker's
event-loop thread), because deleting a segment changes what reads see.

Pacing: Java sleeps ``deleteCommitLogFilesInterval`` between two deletions inside one run. Here
:meth:`CleanCommitLogService.deletions` is a generator that deletes one file per step, so the
caller decides how to pause between steps (the broker awaits ``asyncio.sleep``; tests and
:meth:`CleanCommitLogService.run_once` do not pause).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..clock import SYSTEM_CLOCK, Clock
from ..ratelog import RateLimitedLog
from .disk import disk_partition_used_ratio

if TYPE_CHECKING:
    from .message_store import MessageStore

__all__ = ["DELETE_FILE_BATCH_MAX", "CleanCommitLogService", "CleanPlan", "disk_partition_used_ratio"]

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.deleteFileBatchMax``: most commit-log files deleted by one run.
DELETE_FILE_BATCH_MAX: Final = 10
_HOUR_MS: Final = 3_600_000


def _clamp(value: int, lo: int, hi: int) -> float:
    """A percent clamped to ``[lo, hi]``, as a fraction."""
    return min(max(value, lo), hi) / 100.0


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """What one clean run may delete (the decisions of ``deleteExpiredFiles``).

    Attributes:
        time_up: the local hour is one of ``delete_when`` (``isTimeToDelete``).
        usage_exceeds: disk usage is over ``disk_max_used_space_ratio`` (or the clean-forcibly
            or warning ratio) — ``isSpaceToDelete``.
        clean_at_once: unexpired files may go too (usage over the clean-forcibly or warning ratio
            and ``clean_file_forcibly_enable``).
        used_ratio: the disk usage the plan was made from, a fraction (-1.0 = unknown).
    """

    time_up: bool
    usage_exceeds: bool
    clean_at_once: bool
    used_ratio: float

    @property
    def should_delete(self) -> bool:
        """True when this run deletes expired files (and unexpired ones if ``clean_at_once``)."""
        return self.time_up or self.usage_exceeds

    @property
    def reason(self) -> str:
        """``forced``, ``space`` or ``time`` (for log lines)."""
        if self.clean_at_once:
            return "forced"
        return "space" if self.usage_exceeds else "time"


class CleanCommitLogService:
    """Deletes expired commit-log files and marks the disk full or OK (``CleanCommitLogService``).

    Args:
        store: the message store; uses ``config``, ``commit_log_files()``,
            ``delete_oldest_commit_log_file()`` and ``set_disk_full()``.
        clock: wall clock (ms); its local hour is matched against ``delete_when`` and file ages
            are measured against it.
        disk_used_ratio: ``path -> fraction`` of its filesystem in use, -1.0 when unknown;
            None = this module's :func:`disk_partition_used_ratio` as bound at construction
            (tests replace it with ``monkeypatch`` before a broker builds its service).
        delete_file_batch_max: most files deleted by one run (``deleteFileBatchMax``, 10).

    Ratios come from the store config as percents and are clamped as in Java:
    ``disk_max_used_space_ratio`` to 10..95, ``disk_space_warning_level_ratio`` to 35..90,
    ``disk_space_clean_forcibly_ratio`` to 30..85.
    """

    def __init__(
        self,
        store: MessageStore,
        clock: Clock = SYSTEM_CLOCK,
        disk_used_ratio: Callable[[Path], float] | None = None,
        delete_file_batch_max: int = DELETE_FILE_BATCH_MAX,
    ) -> None:
        self.store = store
        self.clock = clock
        self.disk_used_ratio = disk_used_ratio or disk_partition_used_ratio
        self.delete_file_batch_max = delete_file_batch_max
        cfg = store.config
        self._paths = (cfg.root_dir / "commitlog", cfg.root_dir / "consumequeue")
        self._max_used = _clamp(cfg.disk_max_used_space_ratio, 10, 95)
        self._warning = _clamp(cfg.disk_space_warning_level_ratio, 35, 90)
        self._forcibly = _clamp(cfg.disk_space_clean_forcibly_ratio, 30, 85)
        self._hours = frozenset(int(h) for h in cfg.delete_when.split(";"))
        self._ratelog = RateLimitedLog(log, 60.0)
        #: files deleted since construction
        self.deleted_total = 0

    # ------------------------------------------------------------------ measuring

    def measure(self) -> float:
        """Highest used fraction of the commit-log and consume-queue filesystems (-1.0 = unknown).

        Blocking (``statvfs``); safe in a worker thread. Java measures both paths
        (``isSpaceToDelete``'s physic and logics ratios); the worse one decides.
        """
        known = [r for r in map(self.disk_used_ratio, self._paths) if r >= 0]
        return max(known) if known else -1.0

    def is_time_to_delete(self) -> bool:
        """The clock's local hour is in ``delete_when`` (``isTimeToDelete`` / ``UtilAll.isItTimeToDo``)."""
        return time.localtime(self.clock.now_ms() / 1000).tm_hour in self._hours

    # ------------------------------------------------------------------ disk full

    def check_disk_space(self, used: float | None = None) -> bool:
        """Mark the store disk-full past the warning ratio, OK again below it (``isSpaceFull``).

        Logs one ERROR line when puts start being refused and one INFO line when they are
        accepted again. An unknown usage (-1.0) changes nothing (Java would mark the disk OK).

        Args:
            used: a fraction from :meth:`measure`; None measures now (blocking).

        Returns:
            The store's disk-full flag after the check.
        """
        if used is None:
            used = self.measure()
        if used < 0:
            self._ratelog.warning(
                "unknown", "disk usage of %s unknown (statvfs failed); disk-full flag left as is", self._paths[0]
            )
            return self.store.disk_full
        if used > self._warning:
            if not self.store.set_disk_full(True):
                log.error(
                    "disk full: %s used %.0f%% (over disk_space_warning_level_ratio %.0f%%), puts refused",
                    self._paths[0],
                    used * 100,
                    self._warning * 100,
                )
            return True
        if self.store.set_disk_full(False):
            log.info(
                "disk space OK: %s used %.0f%% (at most %.0f%%), puts accepted again",
                self._paths[0],
                used * 100,
                self._warning * 100,
            )
        return False

    # ------------------------------------------------------------------ cleaning

    def plan(self, used: float | None = None) -> CleanPlan:
        """Decide what this run may delete, updating the disk-full flag (``isSpaceToDelete``).

        Args:
            used: a fraction from :meth:`measure`; None measures now (blocking).
        """
        if used is None:
            used = self.measure()
        self.check_disk_space(used)
        forced = used > self._forcibly or used > self._warning
        exceeds = forced or used > self._max_used
        return CleanPlan(
            time_up=self.is_time_to_delete(),
            usage_exceeds=exceeds,
            clean_at_once=forced and self.store.config.clean_file_forcibly_enable,
            used_ratio=used,
        )

    def deletions(self, plan: CleanPlan) -> Iterator[int]:
        """Delete commit-log files oldest first, one per step (``deleteExpiredFileByTime``).

        Each step deletes the oldest segment when it is expired (its last write is at least
        ``file_reserved_time`` hours before the clock) or ``plan.clean_at_once``; it stops at
        the first unexpired file, at the segment being written, after ``delete_file_batch_max``
        files, or when the store refuses. Consume queues and the key index follow inside the
        store. One INFO line per run says how many files went (also when the caller stops
        iterating early); a run that was needed for space but deleted nothing logs a
        rate-limited WARNING.

        Yields:
            The start offset (bytes) of each deleted file, after it is deleted; the caller may
            pause before asking for the next.
        """
        if not plan.should_delete:
            return
        reserved_ms = self.store.config.file_reserved_time * _HOUR_MS
        deleted = 0
        try:
            while deleted < self.delete_file_batch_max:
                files = self.store.commit_log_files()
                if not files or files[0].is_writing:
                    break
                oldest = files[0]
                if not plan.clean_at_once and self.clock.now_ms() < oldest.last_modified_ms + reserved_ms:
                    break
                try:
                    if not self.store.delete_oldest_commit_log_file():
                        break
                except OSError as exc:
                    log.error("cannot delete commit-log file %s: %s", oldest.path, exc)
                    break
                deleted += 1
                self.deleted_total += 1
                yield oldest.start
        finally:
            if deleted:
                log.info(
                    "commit-log clean deleted %d file(s) reason=%s used=%.0f%% min_offset=%d",
                    deleted,
                    plan.reason,
                    plan.used_ratio * 100,
                    self.store.get_min_phy_offset(),
                )
            elif plan.usage_exceeds:
                self._ratelog.warning(
                    "nothing",
                    "disk used %.0f%% but no commit-log file could be deleted (all unexpired or being written)",
                    plan.used_ratio * 100,
                )

    def run_once(self) -> int:
        """One clean run without pauses between deletions (``CleanCommitLogService.run``).

        Measures (blocking), updates the disk-full flag, then deletes what :meth:`deletions`
        allows.

        Returns:
            Files deleted.
        """
        return sum(1 for _ in self.deletions(self.plan()))
