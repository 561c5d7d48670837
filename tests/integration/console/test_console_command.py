"""``rocketpipe console`` as a process: serves the pages for the cluster of ``-n``, is read-only by
default, needs both ACL keys, and stops cleanly on SIGINT."""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from rocketpipe.cli.commands.console import is_loopback
from rocketpipe.cli.loop_thread import LoopThread
from rocketpipe.testing.cluster import LocalCluster, local_cluster

# the command function as `rocketpipe console` runs it (cli/main.py registers it)
RUN = "import typer; from rocketpipe.cli.commands.console import console; typer.run(console)"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LoopThread("console-cmd-loop") as loop:
        stack = AsyncExitStack()
        c = loop.run(stack.enter_async_context(local_cluster(tmp_path_factory.mktemp("cmd-broker"))), 60)
        try:
            yield c
        finally:
            loop.run(stack.aclose(), 60)


def _read_url(proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """The console's URL from its first line (waits on the pipe with a deadline, no sleeps)."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        if sel.select(deadline - time.monotonic()):
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
            if m := re.search(r"on (http://127\.0\.0\.1:\d+)", line):
                return m.group(1)
    raise AssertionError(f"no URL from the console within {timeout}s; output: {seen!r}")


def test_console_command_serves_read_only_and_stops_on_sigint(cluster: LocalCluster, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "-n", cluster.namesrv_addr, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _read_url(proc)
        with urllib.request.urlopen(url + "/cluster", timeout=10) as resp:
            page = resp.read().decode()
        assert cluster.broker_addr in page and "read-only" in page
        req = urllib.request.Request(url + "/topics", data=b"topic=CmdTopic&queues=2", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=10)
        assert refused.value.code == 403
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_console_command_needs_both_acl_keys(cluster: LocalCluster) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN, "-n", cluster.namesrv_addr, "--port", "0", "--access-key", "ak"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert done.returncode == 2
    assert "--secret-key" in done.stdout + done.stderr


def test_is_loopback() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "10.1.2.3", "console.example")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
