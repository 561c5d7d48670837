"""The broker's metadata files at start (L3): the bad-file policy and the topic rebuild.

The JSON files under ``<store_dir>/config`` (topics, subscription groups, consumer offsets,
delay progress, request modes, POP checkpoints) are written by
:func:`rocketpipe.store.json_file.save_json` (temp file, fsync, previous version kept as
``.bak``, rename) and read here with :func:`~rocketpipe.store.json_file.read_with_backup`:

* a bad main file with a good ``.bak``: the ``.bak`` is used (one WARNING line naming both);
* no good copy: :class:`MetadataError` — the broker refuses to start, the message names the
  files and ``--recover-metadata``; with ``BrokerConfig.recover_metadata`` the bad files are
  kept as ``<name>.corrupt-<ms>``, that state starts empty and one ERROR line says so;
* topics need no flag (better than Java): when ``topics.json`` was not loaded from the main file
  (``.bak`` used, both missing, or both bad and set aside), every topic with a consume-queue
  directory ``<store_dir>/consumequeue/<topic>/<queueId>`` and no config gets one (read/write
  queues = highest queue id + 1, perm RW), with one WARNING line.

A file that parses but lacks its top-level keys (each table's ``JSON_SHAPE``) counts as bad.
File I/O runs in worker threads; the tables are filled on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from ..backup_file import Loaded, MetadataError, read_with_backup
from ..protocol import sysflag as sf
from ..store.json_file import json_shape
from .topics import TopicConfig, TopicTable

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = [
    "DELAY_OFFSET_SHAPE",
    "RECOVER_HINT",
    "TIMER_CHECKPOINT_SHAPE",
    "MetadataError",
    "TopicsRead",
    "apply_topics",
    "attempt",
    "load_file",
    "queues_on_disk",
    "raise_collected",
    "read_topics",
]

#: What the refusal to start tells the operator.
RECOVER_HINT: Final = (
    "fix or restore the file, or start with --recover-metadata (BrokerConfig.recover_metadata=True) "
    "to start with this state empty and keep the bad files as <name>.corrupt-<ms>"
)
#: ``delayOffset.json`` (``ScheduleMessageService.encode``): ``{"offsetTable": {level: offset}}``.
DELAY_OFFSET_SHAPE: Final[Mapping[str, type]] = {"offsetTable": dict}
#: ``config/timerCheckpoint.json`` (:meth:`rocketpipe.broker.timer.TimerDelivery.to_json`)
TIMER_CHECKPOINT_SHAPE: Final[Mapping[str, type]] = {
    "firstWaitingOffset": int,
    "scannedOffset": int,
    "watermarkMs": int,
}
#: Directory of the consume queues under the store root (``StorePathConfigHelper``).
CONSUME_QUEUE_DIR: Final = "consumequeue"
#: Topic names listed in one log line at most.
_NAMES_LOGGED: Final = 10


def load_file(path: Path, shape: Mapping[str, type], *, recover: bool, what: str) -> Any | None:
    """Read one metadata file with the policy above (blocking; run in a worker thread).

    Args:
        path: ``<store_dir>/config/<name>.json``.
        shape: required top-level keys and their types (the table's ``JSON_SHAPE``).
        recover: ``BrokerConfig.recover_metadata``.
        what: the state the file holds, for the log line (``"consumer offsets"``).

    Returns:
        The decoded object, or None (no file yet, or recovered empty).

    Raises:
        MetadataError: neither the file nor its ``.bak`` is usable and ``recover`` is False.
        OSError: a file cannot be read or renamed.
    """
    try:
        loaded = read_with_backup(path, json_shape(shape), recover=recover)
    except MetadataError as exc:
        raise MetadataError(f"{exc}; {RECOVER_HINT}", exc.paths) from None
    if loaded.source == "recovered":
        log.error(
            "file=%s and its .bak are unreadable (%s); --recover-metadata: starting with no %s; bad files kept as %s",
            path, loaded.faults, what, ", ".join(p.name for p in loaded.set_aside),
        )  # fmt: skip
    return loaded.value


@dataclass(frozen=True, slots=True)
class TopicsRead:
    """``topics.json`` as read, plus the queues on disk when the file itself was not usable.

    Attributes:
        path: the main file.
        loaded: the read outcome (``source`` ``"recovered"`` when both files were bad).
        queues: topic → queue count found under ``consumequeue/`` (empty when
            ``loaded.source == "file"``: nothing is rebuilt then).
    """

    path: Path
    loaded: Loaded[dict[str, Any]]
    queues: dict[str, int]


def read_topics(path: Path, store_root: Path) -> TopicsRead:
    """Read ``topics.json`` (or ``.bak``); scan the consume queues unless the main file was good.

    Bad files are set aside (no flag needed: the consume queues are the recovery). Blocking.

    Raises:
        OSError: a file cannot be read or renamed.
    """
    loaded = read_with_backup(path, json_shape(TopicTable.JSON_SHAPE), recover=True)
    queues = {} if loaded.source == "file" else queues_on_disk(store_root / CONSUME_QUEUE_DIR)
    return TopicsRead(path, loaded, queues)


def queues_on_disk(cq_root: Path) -> dict[str, int]:
    """``{topic: highest queue id + 1}`` from ``<cq_root>/<topic>/<queueId>`` directories.

    Entries that are not directories or whose name is not a queue id are ignored.
    """
    out: dict[str, int] = {}
    try:
        topic_dirs = list(cq_root.iterdir())
    except FileNotFoundError:
        return out
    for tdir in topic_dirs:
        if not tdir.is_dir():
            continue
        ids = [int(q.name) for q in tdir.iterdir() if q.is_dir() and q.name.isdigit()]
        if ids:
            out[tdir.name] = max(ids) + 1
    return out


def apply_topics(table: TopicTable, read: TopicsRead, now_ms: int) -> list[str]:
    """Load ``read`` into ``table`` and add a config for every queue directory without one.

    Topics already configured (the system topics, those of the ``.bak``) are kept as they are;
    added ones have ``n`` read and write queues and perm RW and mark the table dirty (the
    persist loop writes a new ``topics.json``). Logs one WARNING line when the file was bad or
    anything was rebuilt.

    Returns:
        The names of the topics added, sorted.
    """
    table.load_json(read.loaded.value)
    added = []
    for topic, n in sorted(read.queues.items()):
        if table.get(topic) is None:
            table.put(TopicConfig(topic, n, n, sf.PERM_READ | sf.PERM_WRITE), now_ms)
            added.append(topic)
    names = ", ".join(added[:_NAMES_LOGGED]) + (
        f", ... ({len(added) - _NAMES_LOGGED} more)" if len(added) > _NAMES_LOGGED else ""
    )
    if read.loaded.source == "recovered":
        log.warning(
            "file=%s and its .bak are unreadable (%s), kept as %s; rebuilt %d topics from consume queues [%s] "
            "(topics need no --recover-metadata)",
            read.path, read.loaded.faults, ", ".join(p.name for p in read.loaded.set_aside), len(added), names,
        )  # fmt: skip
    elif added:
        why = "missing from the backup file" if read.loaded.source == "backup" else "no topics file or backup"
        log.warning("rebuilt %d topics from consume queues (%s): %s", len(added), why, names)
    return added


async def attempt(errors: list[MetadataError], load: Awaitable[T]) -> T | None:
    """Await ``load``; on :class:`MetadataError` record it in ``errors`` and return None.

    Lets the broker check every file before refusing to start, so one run names all bad files.
    """
    try:
        return await load
    except MetadataError as exc:
        errors.append(exc)
        return None


def raise_collected(errors: list[MetadataError]) -> None:
    """Raise ``errors[0]`` alone, or one :class:`MetadataError` naming every file (hint once).

    Nothing happens when ``errors`` is empty.
    """
    if not errors:
        return
    if len(errors) == 1:
        raise errors[0]
    paths = tuple(p for e in errors for p in e.paths)
    texts = " | ".join(str(e).removesuffix(f"; {RECOVER_HINT}") for e in errors)
    raise MetadataError(f"{len(errors)} metadata files are unreadable: {texts}; {RECOVER_HINT}", paths)
