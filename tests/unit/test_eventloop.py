"""The event loop of rocketpipe's own entry points: uvloop when installed, asyncio when asked."""

from __future__ import annotations

import asyncio

import pytest

from rocketpipe import eventloop


async def _kind() -> str:
    return eventloop.event_loop_name()


def test_default_is_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop", reason="the dev extra installs uvloop; without it the default is asyncio")
    monkeypatch.delenv(eventloop.ENV_VAR, raising=False)
    assert eventloop.run(_kind()) == "uvloop"


def test_env_forces_the_standard_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.ENV_VAR, "asyncio")
    assert eventloop.run(_kind()) == "asyncio"
    loop = eventloop.new_event_loop()
    try:
        assert isinstance(loop, asyncio.BaseEventLoop) and eventloop.event_loop_name(loop) == "asyncio"
    finally:
        loop.close()


def test_env_rejects_an_unknown_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.ENV_VAR, "trio")
    with pytest.raises(ValueError, match="ROCKETPIPE_EVENT_LOOP must be 'uvloop' or 'asyncio', not 'trio'"):
        eventloop.loop_factory()


def test_asking_for_uvloop_without_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv(eventloop.ENV_VAR, "uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'rocketpipe\[speed\]'"):
        eventloop.loop_factory()
    monkeypatch.delenv(eventloop.ENV_VAR)
    assert eventloop.run(_kind()) == "asyncio"  # not asked for: fall back quietly


def test_sync_facade_runs_its_client_on_the_chosen_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketpipe.client.sync import _Portal

    pytest.importorskip("uvloop")
    monkeypatch.delenv(eventloop.ENV_VAR, raising=False)
    portal: _Portal[object] = _Portal(object, "t")

    async def kind(_client: object) -> str:
        return eventloop.event_loop_name()

    async def close(_client: object) -> None:
        return None

    try:
        assert portal.call(kind, timeout=10) == "uvloop"
    finally:
        portal.close(close)
