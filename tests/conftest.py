"""Root conftest: puts tests/ on sys.path so test modules can `from waiting import wait_until`.

Under CI (``CI`` set) Hypothesis runs derandomized, so a submission's result does not depend on
the examples one run happened to draw; locally it explores fresh examples every run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """The CLI's ``serve`` replaces the root logger's handlers (logging.basicConfig(force=True));
    put pytest's back after each test and close the ones a test left, so no handler outlives the
    tmp_path file it writes to; warnings go back to ``warnings`` (it also sets captureWarnings)."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        if handler not in saved_handlers:
            handler.close()
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)
    logging.captureWarnings(False)
