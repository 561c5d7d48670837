"""Which asyncio event loop rocketpipe's own entry points run on (L0; stdlib, uvloop when present).

``pip install 'rocketpipe[speed]'`` adds uvloop, a libuv-based loop that runs the same code
faster (about +17 % send ×64 and +24 % single sends in our measurements); ``rocketpipe serve``,
the other CLI commands, the blocking facades (:mod:`rocketpipe.client.sync`) and the Spark
sink's writer thread then use it. Code that runs on a loop it did not create (an application's
``asyncio.run``, pytest-asyncio) is untouched: that choice is the application's.

``ROCKETPIPE_EVENT_LOOP=asyncio`` forces the standard loop even when uvloop is installed
(``uvloop`` asks for it and fails when it is missing).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

__all__ = ["ENV_VAR", "event_loop_name", "loop_factory", "new_event_loop", "run"]

T = TypeVar("T")

#: Environment variable choosing the loop: ``uvloop``, ``asyncio``, or unset (uvloop when installed).
ENV_VAR: Final = "ROCKETPIPE_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """The factory of new loops: ``uvloop.new_event_loop`` when chosen or installed, else asyncio's.

    Raises:
        ValueError: ``ROCKETPIPE_EVENT_LOOP`` is neither ``uvloop`` nor ``asyncio``.
        ImportError: ``ROCKETPIPE_EVENT_LOOP=uvloop`` but uvloop is not installed.
    """
    choice = os.environ.get(ENV_VAR, "").strip().lower()
    if choice not in ("", "uvloop", "asyncio"):
        raise ValueError(f"{ENV_VAR} must be 'uvloop' or 'asyncio', not {choice!r}")
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ImportError(
                f"{ENV_VAR}=uvloop but uvloop is not installed: pip install 'rocketpipe[speed]'"
            ) from None
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop from :func:`loop_factory` (not set as the thread's current loop)."""
    return loop_factory()()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a loop from :func:`loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)


def event_loop_name(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """``"uvloop"`` or ``"asyncio"``: the kind of ``loop`` (default: the running loop)."""
    loop = loop if loop is not None else asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
