"""Shared test helper: run a module's tests with its compiled loops and with the Python code."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


def both_loops(module: ModuleType, *pairs: tuple[str, str]) -> Callable[..., Any]:
    """An autouse fixture, params ``compiled`` / ``python``, that sets each ``module.<active>`` of
    ``pairs`` (``(active, built)`` attribute names) to the built extension function
    ``module.<built>``, or to None (the Python code), for each test.

    The compiled run fails, rather than skips, when an extension function was not built: this
    project's installs (``pip install -e .``) always build it.
    """

    @pytest.fixture(params=["compiled", "python"], autouse=True)
    def loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
        for active, built in pairs:
            if request.param == "python":
                monkeypatch.setattr(module, active, None)
            else:
                function = getattr(module, built)
                assert function is not None, f"{module.__name__}.{built}: not built (pip install -e .)"
                monkeypatch.setattr(module, active, function)
        return str(request.param)

    return loop


def outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or the error it raised as ``(type, text)``: compare two paths, errors included."""
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc), str(exc)


def python_outcome(module: ModuleType, active: str, fn: Callable[..., Any], *args: Any) -> Any:
    """:func:`outcome` of ``fn(*args)`` with ``module.<active>`` set to None (the Python code)."""
    compiled = getattr(module, active)
    setattr(module, active, None)
    try:
        return outcome(fn, *args)
    finally:
        setattr(module, active, compiled)
