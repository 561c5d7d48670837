"""CLI round trip: `rocketpipe serve` in a subprocess, `produce`/`consume` through typer's CliRunner."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rocketpipe.cli.errors import EXIT_CONNECTION, EXIT_TIMEOUT, EXIT_USAGE, exit_code_for
from rocketpipe.cli.main import app
from rocketpipe.errors import (
    ConnectionClosedError,
    InvalidArgumentError,
    RequestTimeoutError,
    RouteNotFoundError,
    SystemBusyError,
)
from waiting import wait_until_sync

runner = CliRunner()


class ServeProcess:
    """A `python -m rocketpipe serve` subprocess whose stdout is collected by a reader thread."""

    def __init__(self, data_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rocketpipe",
                "serve",
                "--port",
                "0",
                "--namesrv-port",
                "0",
                "--data-dir",
                str(data_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._q: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def address(self, pattern: str) -> str:
        m = re.search(pattern, self.output())
        assert m, f"no match for {pattern!r} in serve output:\n{self.output()}"
        return m.group(1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._reader.join(timeout=5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path / "store")
    try:
        wait_until_sync(
            lambda: "ready" in proc.output() or proc.proc.poll() is not None,
            timeout=60,
            what="rocketpipe serve to be ready",
        )
        assert proc.proc.poll() is None, f"serve exited early:\n{proc.output()}"
        yield proc
    finally:
        proc.stop()


def test_cli_produce_then_consume_round_trip(served: ServeProcess) -> None:
    namesrv = served.address(r"name server listening on (\S+)")
    assert re.fullmatch(r"127\.0\.0\.1:\d+", served.address(r"broker broker-a listening on (\S+)"))

    produced = runner.invoke(
        app,
        [
            "produce",
            "cli-topic",
            "--namesrv",
            namesrv,
            "--body",
            "hello rocketpipe",
            "--tag",
            "TagA",
            "--key",
            "k1",
            "--count",
            "3",
        ],
    )
    assert produced.exit_code == 0, produced.output
    assert produced.output.count("SEND_OK") == 3
    assert "sent 3 message(s) to cli-topic" in produced.output

    from_stdin = runner.invoke(
        app, ["produce", "cli-topic", "--namesrv", namesrv, "--tag", "TagB"], input="line one\n\nline two\n"
    )
    assert from_stdin.exit_code == 0, from_stdin.output
    assert from_stdin.output.count("SEND_OK") == 2

    consumed = runner.invoke(
        app,
        [
            "consume",
            "cli-topic",
            "--namesrv",
            namesrv,
            "--group",
            "cli-group",
            "--count",
            "5",
            "--timeout",
            "60",
            "--from",
            "first",
        ],
    )
    assert consumed.exit_code == 0, consumed.output
    assert consumed.output.count("hello rocketpipe") == 3
    assert "line one" in consumed.output and "line two" in consumed.output
    assert consumed.output.count("tag=TagA") == 3
    assert "keys=k1" in consumed.output
    assert "received 5 message(s)" in consumed.output

    stats = runner.invoke(app, ["topic", "stats", "cli-topic", "--namesrv", namesrv])
    assert stats.exit_code == 0, stats.output
    assert "5 message(s)" in stats.output

    created = runner.invoke(app, ["topic", "create", "six-queues", "--queues", "6", "--namesrv", namesrv])
    assert created.exit_code == 0, created.output
    assert "topic six-queues: 6 queue(s)" in created.output

    # Only TagB matches: the group `tagb-group` sees exactly the two stdin lines.
    filtered = runner.invoke(
        app,
        [
            "consume",
            "cli-topic",
            "TagB",
            "--namesrv",
            namesrv,
            "--group",
            "tagb-group",
            "--count",
            "2",
            "--timeout",
            "60",
        ],
    )
    assert filtered.exit_code == 0, filtered.output
    assert "hello rocketpipe" not in filtered.output
    assert filtered.output.count("tag=TagB") == 2

    assert served.stop() == 0
    assert "stopped" in served.output()


def test_cli_consume_times_out_before_count(served: ServeProcess) -> None:
    namesrv = served.address(r"name server listening on (\S+)")
    produced = runner.invoke(app, ["produce", "few", "--namesrv", namesrv, "--body", "only one"])
    assert produced.exit_code == 0, produced.output
    result = runner.invoke(
        app, ["consume", "few", "--namesrv", namesrv, "--group", "g-timeout", "--count", "2", "--timeout", "5"]
    )
    assert result.exit_code == EXIT_TIMEOUT, result.output
    assert "only one" in result.output
    assert "received 1 of 2" in result.output

    missing = runner.invoke(app, ["consume", "no-such-topic", "--namesrv", namesrv, "--count", "1", "--timeout", "1"])
    assert missing.exit_code == EXIT_TIMEOUT, missing.output
    assert "no-such-topic has no route yet" in missing.output


@pytest.mark.parametrize(
    "command", [["produce", "t", "--body", "x"], ["consume", "t", "--count", "1", "--timeout", "30"]]
)
def test_cli_without_name_server_exits_with_connection_code(command: list[str]) -> None:
    # Port 1 on loopback refuses connections.
    result = runner.invoke(app, [*command, "--namesrv", "127.0.0.1:1"])
    assert result.exit_code == EXIT_CONNECTION, result.output
    assert "error:" in result.output


def test_cli_serve_rejects_conflicting_flags() -> None:
    both = runner.invoke(app, ["serve", "--namesrv-only", "--broker-only", "--namesrv", "127.0.0.1:9876"])
    assert both.exit_code == EXIT_USAGE
    assert "exclude each other" in both.output
    no_namesrv = runner.invoke(app, ["serve", "--broker-only"], env={"NAMESRV_ADDR": ""})
    assert no_namesrv.exit_code == EXIT_USAGE
    assert "--broker-only needs --namesrv" in no_namesrv.output


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ConnectionClosedError("refused"), 3),
        (RequestTimeoutError("slow"), 4),
        (RouteNotFoundError("no route"), 5),
        (SystemBusyError("busy"), 6),
        (InvalidArgumentError("bad"), 2),
        (KeyboardInterrupt(), 130),
    ],
)
def test_cli_exit_code_mapping(exc: BaseException, code: int) -> None:
    assert exit_code_for(exc) == code


def test_cli_python_dash_m_help() -> None:
    out = subprocess.run([sys.executable, "-m", "rocketpipe", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for command in ("serve", "produce", "consume", "topic", "demo"):
        assert command in out.stdout
