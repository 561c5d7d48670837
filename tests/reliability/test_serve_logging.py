"""``rocketpipe serve`` logging and flags: a real subprocess writing a ``--log-file``.

* every line of the log file carries a timestamp, a level and a logger name;
* one start line gives the addresses, the store, the flush mode and the retention settings given
  on the command line; the connection flags reach both servers (an idle raw connection to
  each is closed after ``--max-idle-seconds``, with a warning line);
* SIGTERM stops it cleanly, logged;
* bad flag values are usage errors; the log file rotates at ``--log-max-bytes``.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rocketpipe.cli.errors import EXIT_USAGE
from rocketpipe.cli.logging_setup import configure_logging
from rocketpipe.cli.main import app
from waiting import wait_until_sync

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [A-Za-z_][\w.]*: \S")
START = re.compile(
    r"INFO rocketpipe\.cli\.serve: rocketpipe serve started namesrv=(\S+) broker=(\S+) (.*)$", re.MULTILINE
)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


@pytest.fixture
def serve_log(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """``rocketpipe serve`` on free ports with retention and connection flags, logging to a file."""
    log_file = tmp_path / "logs" / "serve.log"
    out_file = tmp_path / "stdout.txt"
    argv = [
        sys.executable, "-m", "rocketpipe", "serve", "--port", "0", "--namesrv-port", "0",
        "--data-dir", str(tmp_path / "store"), "--log-file", str(log_file),
        "--file-reserved-time", "48", "--delete-when", "02;05", "--disk-max-used-space-ratio", "80",
        "--no-clean-file-forcibly", "--max-idle-seconds", "1", "--max-connections", "50", "--flush", "sync", "--recover-metadata",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    with out_file.open("wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield proc, log_file, out_file
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_serve_logs_a_start_line_with_retention_and_applies_connection_flags(
    serve_log: tuple[subprocess.Popen[bytes], Path, Path], tmp_path: Path
) -> None:
    proc, log_file, out_file = serve_log
    wait_until_sync(
        lambda: START.search(_read(log_file)) is not None or proc.poll() is not None,
        timeout=60,
        what="the start line in the log file",
    )
    assert proc.poll() is None, f"serve exited early ({proc.returncode}):\n{_read(out_file)}\n{_read(log_file)}"
    start = START.search(_read(log_file))
    assert start is not None
    namesrv_addr, broker_addr, rest = start.groups()
    fields = dict(kv.split("=", 1) for kv in rest.split())
    assert fields["store"] == str(tmp_path / "store")
    assert fields["flushDiskType"] == "SYNC_FLUSH"
    assert fields["fileReservedTime"] == "48h"
    assert fields["deleteWhen"] == "02;05"
    assert fields["diskMaxUsedSpaceRatio"] == "80%"
    assert fields["cleanFileForciblyEnable"] == "false" and fields["recoverMetadata"] == "true"
    assert fields["serverChannelMaxIdleTimeSeconds"] == "1" and fields["maxConnections"] == "50"
    # --max-idle-seconds reaches both servers: a silent raw connection to each is closed
    for addr in (namesrv_addr, broker_addr):
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.settimeout(30)
            try:
                assert sock.recv(1) == b""  # EOF from the server, not a timeout
            except ConnectionResetError:
                pass
    # (rate-limited: each server writes one idle line per interval; the name server's first may be
    # the broker's own registration connection, quiet between two registrations)
    assert "WARNING rocketpipe.transport.server: idle connection closed" in _read(log_file)
    assert "--max-idle-seconds 1 is not above" in _read(log_file)  # the warning about quiet peers
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, _read(log_file)
    text = _read(log_file)
    assert "INFO rocketpipe.cli.serve: rocketpipe serve stopped" in text
    lines = text.splitlines()
    assert lines and all(LINE.match(line) for line in lines if not line.startswith((" ", "\t", "Traceback"))), text
    assert not [line for line in lines if " ERROR " in line or "Traceback" in line], text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delete-when", "25"], "--delete-when"),
        (["--delete-when", "4;x"], "--delete-when"),
        (["--file-reserved-time", "0"], "--file-reserved-time must be >= 1"),
        (["--disk-max-used-space-ratio", "101"], "--disk-max-used-space-ratio must be 1..100"),
        (["--max-idle-seconds", "-1"], "--max-idle-seconds must be >= 0"),
        (["--max-connections", "0"], "--max-connections must be >= 1"),
        (["--log-backups", "0"], "--log-backups must be >= 1"),
    ],
)
def test_serve_rejects_out_of_range_flags(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["serve", *args], env={"NAMESRV_ADDR": ""})
    assert result.exit_code == EXIT_USAGE, result.output
    assert message in " ".join(result.output.split())


def test_log_file_rotates_at_max_bytes(tmp_path: Path) -> None:
    # the root conftest's fixture puts the root logger back afterwards
    log_file = tmp_path / "r" / "serve.log"
    handler = configure_logging("debug", log_file, max_bytes=2000, backups=2)
    logger = logging.getLogger("rocketpipe.test.rotation")
    for i in range(200):  # about 20 kB: several rotations
        logger.info("line %03d %s", i, "y" * 40)
    handler.close()
    files = sorted(p.name for p in log_file.parent.iterdir())
    assert files == ["serve.log", "serve.log.1", "serve.log.2"]  # only --log-backups old files kept
    assert all(p.stat().st_size <= 2000 for p in log_file.parent.iterdir())
    last = _read(log_file).splitlines()
    assert last and all(LINE.match(line) for line in last) and "line 199" in last[-1]
