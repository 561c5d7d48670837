"""Shared test helper: run a module's tests with its compiled loop and with the Python loop."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


def both_loops(module: ModuleType, active: str, built: str) -> Callable[..., Any]:
    """An autouse fixture, params ``compiled`` / ``python``, that sets ``module.<active>`` to the
    built extension function ``module.<built>`` or to None (the Python loop) for each test.

    The compiled run fails, rather than skips, when the extension was not built: this project's
    installs (``pip install -e .``) always build it.
    """

    @pytest.fixture(params=["compiled", "python"], autouse=True)
    def loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
        if request.param == "python":
            monkeypatch.setattr(module, active, None)
        else:
            function = getattr(module, built)
            assert function is not None, (
                f"{module.__name__}.{built}: the compiled loop was not built (pip install -e .)"
            )
            monkeypatch.setattr(module, active, function)
        return str(request.param)

    return loop
