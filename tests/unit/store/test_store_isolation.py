"""The store is L2 and synchronous: importing it must not pull in asyncio or the transport."""

from __future__ import annotations

import subprocess
import sys


def test_store_imports_neither_asyncio_nor_transport() -> None:
    code = (
        "import sys, rocketpipe.store, rocketpipe.store.json_file; "
        "print(sorted(m for m in ('asyncio', 'socket', 'rocketpipe.transport', 'rocketpipe.broker') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
