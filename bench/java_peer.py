"""The produce/consume scenarios driven by Apache RocketMQ's own Java client against its own broker.

Peer ``java`` of ``bench/produce_consume.py``: a real Apache RocketMQ 5.3.3 broker (as the
``apache`` peer starts it) and ``io.rocketpipe.interop.BenchScenario`` (tests/interop/java, built
with rocketmq-client 5.3.3 from Maven Central) in one JVM with G1 and the C2 compiler, warmed by an
untimed round first. Its rounds run after the interleaved rounds of the other targets (one JVM
cannot interleave with them), so its ratios are seconds to minutes apart rather than
interleaved. Scenario counterparts: the same sends; the Python ``pull_raw + decode`` against the
Java ``DefaultLitePullConsumer`` (32 per pull, like the broker's cap); the push consumer against
``DefaultMQPushConsumer``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from peers import Result, Unavailable, apache_broker, one_line
from rocketpipe import Admin

CLIENT_VERSION = "5.3.3"
#: Python scenario name -> the Java scenario it is compared with.
COUNTERPART = {
    "send ×1 in flight": "send x1 in flight",
    "send ×64 in flight": "send x64 in flight",
    "send_batch 32/req ×4": "send_batch 32/req x4",
    "pull_raw+decode": "lite pull",
    "push consumer": "push consumer",
}
_JVM = ("-Xms512m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true")


def _classpath(home: Path) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from interop_support import build_java_project
    except ImportError as exc:
        raise Unavailable(f"cannot load the Java scenario builder: {one_line(exc)}") from exc
    try:
        return build_java_project(CLIENT_VERSION, home)
    except Exception as exc:
        raise Unavailable(f"building the Java scenarios failed: {one_line(exc)}") from exc


async def _create_topics(namesrv: str, prefixes: list[str]) -> None:
    async with Admin(namesrv) as admin:
        deadline = time.monotonic() + 60
        for prefix in prefixes:
            for name in ("serial", "pipelined", "batch"):
                while True:
                    try:
                        await admin.create_topic(f"{prefix}-{name}", 8)
                        await admin.topic_queues(f"{prefix}-{name}")
                        break
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.5)


def run_java_peer(tmp: Path, flush: str, messages: int, size: int, rounds: int, warmup: int) -> dict[str, Any]:
    """Start the broker, run the Java scenarios; ``{"status", "rounds": [[Result, ...]], ...}``."""
    try:
        classpath = _classpath(tmp / "java-home")
        with apache_broker(tmp, flush) as served:
            namesrv = served.handle
            prefix = f"java{int(time.time())}"
            asyncio.run(
                _create_topics(namesrv, [f"{prefix}-warmup", *(f"{prefix}-r{i}" for i in range(1, rounds + 1))])
            )
            cmd = [
                "java",
                *_JVM,
                f"-Duser.home={tmp / 'java-home'}",
                "-cp",
                ":".join(classpath),
                "io.rocketpipe.interop.BenchScenario",
                namesrv,
                prefix,
                str(messages),
                str(size),
                str(rounds),
                str(warmup),
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    except Unavailable as exc:
        return {"status": "not measured", "reason": str(exc)}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stdout + done.stderr)[-400:].replace("\n", " ")
        return {"status": "not measured", "reason": f"BenchScenario exited {done.returncode}: {tail}"}
    out: list[list[Result]] = []
    for rnd in json.loads(lines[-1])["rounds"]:
        out.append([Result(name, r["messages"], r["seconds"]) for name, r in rnd.items()])
    return {"status": "measured", "rounds": out}
