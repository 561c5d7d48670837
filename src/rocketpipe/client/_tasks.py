"""Structured background tasks for client components (L3, asyncio only).

:class:`TaskOwner` runs an :class:`asyncio.TaskGroup` inside one supervisor task, so that a
component can be started by one coroutine and closed by another (the sync facade calls each
method from a separate task). :func:`periodic` (re-exported from
:mod:`rocketpipe.transport.periodic`) is the ``scheduleAtFixedRate`` replacement.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..transport.periodic import periodic as periodic

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskOwner:
    """Owner of a component's background tasks.

    Args:
        name: used in task names and logs.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._tg: asyncio.TaskGroup | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._children: set[asyncio.Task[Any]] = set()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`close`."""
        return self._tg is not None and not self._stop.is_set()

    async def start(self) -> None:
        """Start the supervisor; return once tasks can be spawned."""
        if self._supervisor is not None:
            return
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name=f"{self._name}-supervisor")
        await self._ready.wait()

    async def _supervise(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg = tg
                self._ready.set()
                await self._stop.wait()
                for t in list(self._children):
                    t.cancel()
        finally:
            self._tg = None
            self._ready.set()

    def spawn(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``coro`` as a child task.

        Raises:
            RuntimeError: the owner is not running (the coroutine is closed).
        """
        if self._tg is None or self._stop.is_set():
            coro.close()
            raise RuntimeError(f"{self._name} is not running")
        task = self._tg.create_task(coro, name=f"{self._name}-{name}")
        self._children.add(task)
        task.add_done_callback(self._children.discard)
        return task

    async def close(self) -> None:
        """Cancel every child task and wait for them; idempotent."""
        self._stop.set()
        sup = self._supervisor
        if sup is None:
            return
        try:
            await asyncio.shield(sup)
        except asyncio.CancelledError:
            if not sup.done():
                raise
        except BaseException as exc:  # a child failed: already logged by periodic()
            log.warning("%s: background task failed: %r", self._name, exc)
