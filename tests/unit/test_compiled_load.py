"""rocketpipe.compiled.load: the extension's function, None when it is missing or stale, and
the Python code forced by ROCKETPIPE_PURE_PYTHON=1."""

from __future__ import annotations

import pytest

from rocketpipe.compiled import ENV_VAR, load


def test_a_built_function_is_used_unless_pure_python_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    built, active = load("rocketpipe.protocol._records", "decode")
    assert built is not None and active is built
    monkeypatch.setenv(ENV_VAR, "1")
    assert load("rocketpipe.protocol._records", "decode") == (built, None)


def test_a_missing_function_of_a_stale_build_falls_back_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="no_such_loop: built from older sources"):
        assert load("rocketpipe.protocol._records", "no_such_loop") == (None, None)
