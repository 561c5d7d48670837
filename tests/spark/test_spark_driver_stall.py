"""The Spark source's driver look-ups across a stalled broker and name server (SIGSTOP of a
real ``rocketpipe serve`` process): fetchOffset.numRetries carries them over the stall."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message
from rocketpipe.spark.options import parse_source_options
from rocketpipe.spark.reader import SourceError, _DriverClient
from rocketpipe.testing.serve_process import ServeProcess, serve_process

pytestmark = pytest.mark.spark

TOPIC = "SparkStall"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serve_process(tmp_path_factory.mktemp("stall") / "store") as sp:
        admin = SyncAdmin(namesrv_addr=sp.namesrv_addr)
        producer = SyncProducer("stall-producer", namesrv_addr=sp.namesrv_addr)
        producer.start()
        try:
            admin.create_topic(TOPIC, 2)
            for i in range(10):
                producer.send(Message.build(TOPIC, b"m%d" % i))
        finally:
            producer.close()
            admin.close()
        yield sp


def _driver(ns: str, retries: int) -> _DriverClient:
    opts = {
        "nameServer": ns,
        "topic": TOPIC,
        "fetchOffset.numRetries": str(retries),
        "fetchOffset.retryIntervalMs": "100",
    }
    return _DriverClient(parse_source_options(opts, streaming=False))


def test_driver_look_ups_survive_a_stall_with_retries(served: ServeProcess, caplog: pytest.LogCaptureFixture) -> None:
    """Stalled for 4 s (SIGSTOP, then SIGCONT), longer than a look-up's 3 s timeout: the first
    look-up times out, a retry gets the answer; the offsets are the produced ones."""
    client = _driver(served.namesrv_addr, retries=3)
    os.kill(served.pid, signal.SIGSTOP)
    resume = threading.Timer(4.0, os.kill, (served.pid, signal.SIGCONT))
    resume.start()
    try:
        with caplog.at_level(logging.WARNING, logger="rocketpipe.spark.reader"):
            maxs = client.max_offsets(client.queues())
    finally:
        resume.cancel()
        os.kill(served.pid, signal.SIGCONT)
        client.close()
    assert sum(maxs.values()) == 10 and len(maxs) == 2
    assert any("driver look-up failed" in r.getMessage() for r in caplog.records)


def test_driver_without_retries_says_the_name_server_is_unreachable(served: ServeProcess) -> None:
    client = _driver(served.namesrv_addr, retries=0)
    os.kill(served.pid, signal.SIGSTOP)
    try:
        with pytest.raises(SourceError, match=r"name server .* is unreachable .*1 tries, see fetchOffset\.numRetries"):
            client.queues()
    finally:
        os.kill(served.pid, signal.SIGCONT)
        client.close()
    # and the source works again once the process runs
    client = _driver(served.namesrv_addr, retries=0)
    try:
        assert sum(client.max_offsets(client.queues()).values()) == 10
    finally:
        client.close()
