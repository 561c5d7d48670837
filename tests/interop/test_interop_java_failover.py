"""The official Java producer with ``sendLatencyFaultEnable`` against two rocketpipe broker groups,
one of which is killed (SIGKILL) while the producer runs.

``FailoverScenario`` (tests/interop/java) sends a first round over both brokers, then waits; the
test kills broker-b (the producer's cached route still lists it: Java refreshes routes every
30 s) and lets it go on. Every send of the second round must land on the live broker (an attempt
on the dead one fails over inside the client), and the client's own fault table must hold the
dead broker as isolated — learnt from the connection failures, as against Apache brokers.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from interop_support import JavaClient, unique

from rocketpipe.testing.cluster import create_topic_on_brokers, local_cluster
from rocketpipe.testing.serve_process import serve_process
from waiting import wait_until

QUEUES = 4


async def test_java_send_latency_fault_tolerance_fails_over_to_the_live_broker(
    java_client: JavaClient, tmp_path: Path
) -> None:
    topic, sends = unique("JavaFailover"), 24
    async with local_cluster(tmp_path / "a") as c:
        with serve_process(tmp_path / "b", namesrv_addr=c.namesrv_addr, broker_name="broker-b") as b:
            await create_topic_on_brokers(c.namesrv_addr, topic, QUEUES, (c.broker_addr, b.broker_addr))
            sync = tmp_path / "sync"
            sync.mkdir()
            java = asyncio.create_task(
                java_client.run(
                    "FailoverScenario", c.namesrv_addr, topic, unique("pg"), str(sends), "broker-b", str(sync)
                )
            )
            await wait_until(lambda: (sync / "sent").exists() or java.done(), timeout=60, what="first round sent")
            os.kill(b.pid, signal.SIGKILL)
            (sync / "go").touch()
            res = await java
    assert set(res["before"]) == {"broker-a", "broker-b"}
    assert [s.get("error") for s in res["sends"] if "error" in s] == []
    assert {(s["broker"], s["status"]) for s in res["sends"]} == {("broker-a", "SEND_OK")}
    assert res["dead_available"] is False  # the Java client isolated broker-b
