"""The broker's POP service (L3): state, handlers, revive loop and persistence in one object.

:class:`PopService` owns the :class:`~.checkpoint.CheckpointTable` (checkpoints + pop offsets),
the :class:`~.processor.PopProcessor` (request handlers) and the :class:`~.revive.Reviver`, and
runs two background tasks while started:

* revive: every ``revive_interval`` s, move messages whose invisible time passed (wall time of
  the broker's injected clock, so a :class:`~rocketpipe.testing.FakeClock` drives it);
* persist: write ``<store_dir>/config/popCheckpoint.json`` (atomic, with ``.bak``) every
  ``persist_interval`` s when something changed, and on :meth:`close`.

The file is read by :meth:`load` (the broker calls it with its other metadata files, before the
store opens) with the policy of :mod:`..metadata`: ``.bak`` when the file is bad, a
``MetadataError`` when neither is usable unless ``BrokerConfig.recover_metadata``.

Long polling: a held POP waits on a per-topic event that :meth:`notify_message_arriving` sets
(revives call it; the broker may call it on arrival) and re-checks the store every
``poll_check_interval`` s, since the broker's arrival hook only knows about held pulls.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

from ...store.json_file import save_json
from ..context import BrokerContext
from ..metadata import load_file
from .checkpoint import CheckpointTable
from .config import PopConfig
from .processor import PopProcessor
from .revive import Reviver

log = logging.getLogger(__name__)

#: File (under ``<store_dir>/config``) holding checkpoints and pop offsets.
CHECKPOINT_FILE: Final = "popCheckpoint.json"


class PopService:
    """POP consumption on one broker. Build with :func:`rocketpipe.broker.pop.install`."""

    def __init__(self, broker: BrokerContext, config: PopConfig | None = None) -> None:
        self.broker = broker
        self.config = config or PopConfig()
        self.table = CheckpointTable()
        self.processor = PopProcessor(self)
        self.reviver = Reviver(self)
        self._arrival: dict[str, asyncio.Event] = {}
        self._polling: dict[tuple[str, str, int], int] = {}
        self._polling_total = 0
        self._persist_wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.started = False
        self.loaded = False
        self._closed = False

    @property
    def path(self) -> Path:
        """The checkpoint file."""
        return Path(self.broker.config.store_dir) / "config" / CHECKPOINT_FILE

    # ------------------------------------------------------------------ lifecycle
    async def load(self) -> None:
        """Read the checkpoint file into the table, once (missing file → empty table).

        Raises:
            MetadataError: the file and its ``.bak`` are both unusable and the broker's
                ``recover_metadata`` is False (the table is left empty, nothing renamed).
            OSError: a file cannot be read or renamed.
        """
        if self.loaded:
            return
        recover = self.broker.config.recover_metadata
        obj = await asyncio.to_thread(
            load_file, self.path, CheckpointTable.JSON_SHAPE, recover=recover, what="POP checkpoints"
        )
        self.table.load_json(obj)
        self.loaded = True

    async def start(self) -> None:
        """Load the checkpoint file (unless :meth:`load` did) and start the revive and persist loops.

        Idempotent.

        Raises:
            MetadataError, OSError: see :meth:`load`.
        """
        if self.started:
            return
        await self.load()
        self.started = True
        self._persist_wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._revive_loop(), name="broker-pop-revive"),
            loop.create_task(self._persist_loop(), name="broker-pop-persist"),
        ]
        log.info("pop service started checkpoints=%d file=%s", len(self.table), self.path)

    async def close(self) -> None:
        """Stop the loops and write the checkpoint file (idempotent). Call before the store closes."""
        if self._closed or not self.started:
            self._closed = True
            return
        self._closed = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("pop loop ended with an error")
        self._tasks = []
        try:
            await self.persist(force=True)
        except Exception:
            log.exception("pop checkpoint persist at close failed")

    # ------------------------------------------------------------------ persistence
    def changed(self) -> None:
        """Note a change of the table (persisted within ``persist_interval``)."""
        self.table.dirty = True

    async def persist(self, *, force: bool = False) -> bool:
        """Write the checkpoint file when changed (or ``force``); return True when written."""
        if not force and not self.table.dirty:
            return False
        self.table.dirty = False
        try:
            await asyncio.to_thread(save_json, self.path, self.table.to_json())
        except BaseException:
            self.table.dirty = True  # retried next round
            raise
        return True

    async def _persist_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.persist_interval)
            try:
                await self.persist()
            except OSError as exc:  # e.g. disk full: keep the loop, retry next round
                log.warning("persisting %s failed: %s", CHECKPOINT_FILE, exc)
            except Exception:
                self.table.dirty = True
                log.exception("pop checkpoint persist failed")

    # ------------------------------------------------------------------ revive
    def revive_due(self, now_ms: int | None = None) -> int:
        """Revive every checkpoint due at ``now_ms`` (default: the broker clock); return messages moved."""
        return self.reviver.revive_due(self.broker.clock.now_ms() if now_ms is None else now_ms)

    async def _revive_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.revive_interval)
            try:
                self.revive_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pop revive scan failed")

    # ------------------------------------------------------------------ long polling
    def notify_message_arriving(self, topic: str) -> None:
        """Wake the POPs held on ``topic`` (call on arrival into the topic or its retry topic)."""
        ev = self._arrival.get(topic)
        if ev is not None:
            ev.set()

    async def wait_for_arrival(self, topic: str, timeout: float) -> None:
        """Wait up to ``timeout`` s for :meth:`notify_message_arriving` on ``topic``."""
        ev = self._arrival.get(topic)
        if ev is None or ev.is_set():
            ev = self._arrival[topic] = asyncio.Event()
        try:
            async with asyncio.timeout(timeout):
                await ev.wait()
        except TimeoutError:
            pass

    def polling_admit(self, key: tuple[str, str, int]) -> bool:
        """Count a held POP in; False (POLLING_FULL) when a limit is reached."""
        n = self._polling.get(key, 0)
        if n >= self.config.pop_polling_size or self._polling_total >= self.config.max_pop_polling_size:
            return False
        self._polling[key] = n + 1
        self._polling_total += 1
        return True

    def polling_release(self, key: tuple[str, str, int]) -> None:
        """Count a held POP out."""
        n = self._polling.get(key, 0) - 1
        if n <= 0:
            self._polling.pop(key, None)
        else:
            self._polling[key] = n
        self._polling_total = max(0, self._polling_total - 1)

    @property
    def polling_count(self) -> int:
        """POP requests currently held."""
        return self._polling_total
