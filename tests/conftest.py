"""Root conftest: puts tests/ on sys.path so test modules can `from waiting import wait_until`.

Under CI (``CI`` set) Hypothesis runs derandomized, so a submission's result does not depend on
the examples one run happened to draw; locally it explores fresh examples every run.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
