"""The broker's pull caps (``maxTransferCountOnMessageInMemory`` / ``...BytesOnMessageInMemory``).

Java answers at most 32 messages / 256 KiB per pull whatever the client asks; a broker option
raises them (``rocketpipe serve --max-transfer-count``), which batch readers such as the Spark
source use to make fewer, larger pulls.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketpipe import Admin, Message, Producer
from rocketpipe.protocol.message import decode_records
from rocketpipe.testing.cluster import local_cluster

TOPIC = "Caps"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, 32),  # Java's defaults: 32 messages bind before 256 KiB
        ({"max_transfer_count_on_message_in_memory": 500}, 256 * 1024),  # now 256 KiB binds first
        ({"max_transfer_count_on_message_in_memory": 500, "max_transfer_bytes_on_message_in_memory": 4 << 20}, 500),
    ],
)
async def test_one_pull_returns_at_most_the_configured_caps(
    tmp_path: Path, overrides: dict[str, int], expected: int
) -> None:
    async with local_cluster(tmp_path, **overrides) as c:
        assert c.broker.store.config.max_transfer_count_on_message_in_memory == overrides.get(
            "max_transfer_count_on_message_in_memory", 32
        )
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, queue_nums=1)
            async with Producer("pg", namesrv_addr=c.namesrv_addr) as producer:
                for i in range(0, 600, 100):
                    await producer.send_batch(
                        [Message.build(TOPIC, b"%06d" % j + b"x" * 1000) for j in range(i, i + 100)]
                    )
            (mq,) = await admin.topic_queues(TOPIC)
            raw = await admin.pull_raw(mq, 0, 1024)
            msgs = decode_records(raw.body)
            if expected > 1000:  # a byte cap: as many whole records as fit (all are the same size)
                expected = expected // msgs[0].store_size
            assert len(msgs) == expected
            assert raw.next_begin_offset == expected
            assert [m.body[:6] for m in msgs] == [b"%06d" % j for j in range(expected)]
