"""Store configuration (L2; imports only :mod:`rocketpipe.errors`).

Mirrors ``org.apache.rocketmq.store.config.MessageStoreConfig``: names are the snake_case of
the Java fields, defaults are the Java defaults where they apply (see the reference's §2.10).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..errors import InvalidArgumentError

#: ``ConsumeQueue.CQ_STORE_UNIT_SIZE``: bytes of one consume-queue entry.
CQ_STORE_UNIT_SIZE: Final = 20
#: Java ``MessageStoreConfig.mappedFileSizeCommitLog`` default: 1 GiB.
DEFAULT_COMMIT_LOG_FILE_SIZE: Final = 1024 * 1024 * 1024
#: Java ``mappedFileSizeConsumeQueue`` default: 300 000 entries of 20 bytes.
DEFAULT_CONSUME_QUEUE_FILE_SIZE: Final = 300_000 * CQ_STORE_UNIT_SIZE
#: Java ``maxMessageSize`` default: 4 MiB.
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
#: Java ``messageDelayLevel`` default.
DEFAULT_MESSAGE_DELAY_LEVEL: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: Smallest segment accepted (bytes); a page, so msync ranges stay meaningful.
MIN_FILE_SIZE: Final = 4096

_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> tuple[int, ...]:
    """Parse a ``messageDelayLevel`` string into delays in ms (level 1 first).

    Mirrors ``ScheduleMessageService.parseDelayLevel``.

    Raises:
        InvalidArgumentError: a token is not ``<int><s|m|h|d>``.
    """
    out: list[int] = []
    for tok in spec.split():
        unit = _UNIT_MS.get(tok[-1:])
        try:
            if unit is None:
                raise ValueError(tok)
            out.append(int(tok[:-1]) * unit)
        except ValueError:
            raise InvalidArgumentError(
                f"message_delay_level token {tok!r} must look like '10s', '5m', '2h' or '1d'"
            ) from None
    return tuple(out)


@dataclass(frozen=True)
class StoreConfig:
    """Configuration of a :class:`~rocketpipe.store.MessageStore` (``MessageStoreConfig``).

    Attributes:
        root_dir: ``storePathRootDir``; holds ``commitlog/``, ``consumequeue/``, ``index/``,
            ``checkpoint`` and ``abort``.
        mapped_file_size_commit_log: commit-log segment size, bytes (1 GiB).
        mapped_file_size_consume_queue: consume-queue segment size, bytes; a multiple of 20
            (6 000 000).
        flush_disk_type: ``"ASYNC_FLUSH"`` (put returns after the in-memory append) or
            ``"SYNC_FLUSH"`` (the broker waits for :meth:`MessageStore.flush` — group commit).
        max_message_size: largest body accepted, bytes (4 MiB); larger puts get MESSAGE_ILLEGAL.
        flush_interval_commit_log_ms: period of the broker's ASYNC_FLUSH flush, ms (500).
        flush_commit_log_least_pages: pages that must be dirty before a periodic flush (4).
        flush_commit_log_thorough_interval_ms: flush everything at least this often, ms (10 000).
        flush_interval_consume_queue_ms: period of consume-queue flushes, ms (1 000).
        sync_flush_timeout_ms: SYNC_FLUSH wait before FLUSH_DISK_TIMEOUT, ms (5 000).
        max_transfer_bytes_on_message_in_memory: byte cap of one get_message, bytes (256 KiB).
        max_transfer_count_on_message_in_memory: message cap of one get_message (32).
        max_filter_message_size: consume-queue bytes one get_message may scan (16 000).
        access_message_in_memory_max_ratio: a message counts as "in memory" when it lies within
            this percentage of the machine's physical memory from the end of the commit log
            (``accessMessageInMemoryMaxRatio``, 40; :meth:`MessageStore.check_in_mem_by_consume_offset`).
        check_crc_on_recover: check body CRCs during recovery (true).
        message_delay_level: delay levels; used to rebuild SCHEDULE_TOPIC_XXXX tags codes
            (delivery times) on recovery.
        message_index_enable: keep the key index (``index/``) used by QUERY_MESSAGE (true).
        max_hash_slot_num: hash slots of one index file (``maxHashSlotNum``, 5 000 000; 4 bytes
            each, reserved on disk 64 KiB at a time as they are first used).
        max_index_num: entries of one index file (``maxIndexNum``, 20 000 000; 20 bytes each,
            reserved 1 MiB ahead).
        max_msgs_num_batch: most messages one key query returns (64, ``maxMsgsNumBatch``).
        default_query_max_num: ``maxNum`` the broker uses for unique-key queries (32,
            ``defaultQueryMaxNum``).
        disk_max_used_space_ratio: percent of the filesystem past which expired commit-log files
            are deleted outside ``delete_when`` (75, clamped 10..95 as Java).
        disk_space_warning_level_ratio: percent past which puts are refused as disk full (5.x
            ``diskSpaceWarningLevelRatio`` 90, clamped 35..90).
        disk_space_clean_forcibly_ratio: percent past which unexpired files are deleted too, when
            ``clean_file_forcibly_enable`` (5.x ``diskSpaceCleanForciblyRatio`` 85, clamped 30..85).
        file_reserved_time: hours a commit-log file is kept after its last write (72).
        delete_when: ``;``-separated hours of the day when expired files are deleted (``"04"``).
        clean_file_forcibly_enable: allow deleting unexpired files when the disk is nearly full.
        delete_commit_log_files_interval: pause between two deleted commit-log files, ms (100).
        clean_resource_interval: period of the clean service, ms (10 000).
        destroy_mapped_file_interval_forcibly: how long a deleted file may stay mapped for readers, ms
            (120 000).

    Raises:
        InvalidArgumentError: a size, period or flush type is out of range (the message names
            the fix).
    """

    root_dir: Path
    mapped_file_size_commit_log: int = DEFAULT_COMMIT_LOG_FILE_SIZE
    mapped_file_size_consume_queue: int = DEFAULT_CONSUME_QUEUE_FILE_SIZE
    flush_disk_type: Literal["ASYNC_FLUSH", "SYNC_FLUSH"] = "ASYNC_FLUSH"
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    flush_interval_commit_log_ms: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval_ms: int = 10_000
    flush_interval_consume_queue_ms: int = 1000
    sync_flush_timeout_ms: int = 5000
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_filter_message_size: int = 16_000
    access_message_in_memory_max_ratio: int = 40
    check_crc_on_recover: bool = True
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    default_query_max_num: int = 32
    disk_max_used_space_ratio: int = 75
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    file_reserved_time: int = 72
    delete_when: str = "04"
    clean_file_forcibly_enable: bool = True
    delete_commit_log_files_interval: int = 100
    clean_resource_interval: int = 10_000
    destroy_mapped_file_interval_forcibly: int = 120_000

    def __post_init__(self) -> None:
        if not isinstance(self.root_dir, Path):
            object.__setattr__(self, "root_dir", Path(self.root_dir))
        if self.flush_disk_type not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            raise InvalidArgumentError(
                f"flush_disk_type must be 'ASYNC_FLUSH' or 'SYNC_FLUSH', not {self.flush_disk_type!r}"
            )
        if self.mapped_file_size_commit_log < MIN_FILE_SIZE:
            raise InvalidArgumentError(
                f"mapped_file_size_commit_log must be at least {MIN_FILE_SIZE} bytes, "
                f"not {self.mapped_file_size_commit_log}"
            )
        cq = self.mapped_file_size_consume_queue
        if cq < CQ_STORE_UNIT_SIZE or cq % CQ_STORE_UNIT_SIZE:
            raise InvalidArgumentError(
                f"mapped_file_size_consume_queue must be a positive multiple of {CQ_STORE_UNIT_SIZE}, not {cq}"
            )
        if not 0 <= self.access_message_in_memory_max_ratio <= 100:
            raise InvalidArgumentError(
                f"access_message_in_memory_max_ratio is a percentage (0..100), not {self.access_message_in_memory_max_ratio}"
            )
        for name in (
            "max_message_size",
            "flush_interval_commit_log_ms",
            "flush_commit_log_thorough_interval_ms",
            "flush_interval_consume_queue_ms",
            "sync_flush_timeout_ms",
            "max_transfer_bytes_on_message_in_memory",
            "max_transfer_count_on_message_in_memory",
            "max_filter_message_size",
            "max_msgs_num_batch",
            "default_query_max_num",
            "clean_resource_interval",
            "file_reserved_time",
        ):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"{name} must be positive, not {getattr(self, name)}")
        if self.max_hash_slot_num <= 0 or self.max_index_num < 2:
            raise InvalidArgumentError(
                f"max_hash_slot_num must be positive and max_index_num at least 2 (entry 0 is unused), "
                f"not {self.max_hash_slot_num} and {self.max_index_num}"
            )
        if self.flush_commit_log_least_pages < 0:
            raise InvalidArgumentError("flush_commit_log_least_pages must be >= 0")
        if self.delete_commit_log_files_interval < 0 or self.destroy_mapped_file_interval_forcibly < 0:
            raise InvalidArgumentError(
                "delete_commit_log_files_interval and destroy_mapped_file_interval_forcibly must be >= 0"
            )
        for name in ("disk_max_used_space_ratio", "disk_space_warning_level_ratio", "disk_space_clean_forcibly_ratio"):
            if not 0 < getattr(self, name) <= 100:
                raise InvalidArgumentError(f"{name} is a percent in 1..100, not {getattr(self, name)}")
        for hour in self.delete_when.split(";"):
            if not hour.strip().isdigit() or not 0 <= int(hour) <= 23:
                raise InvalidArgumentError(
                    f"delete_when must be hours 0..23 separated by ';', like '04' or '01;04', not {self.delete_when!r}"
                )
        parse_delay_levels(self.message_delay_level)

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        """The delay of each level in ms (index 0 = level 1)."""
        return parse_delay_levels(self.message_delay_level)
