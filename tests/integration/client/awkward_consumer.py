"""Subprocess push consumer of ``test_client_awkward.py`` (not a test module).

Usage: ``python awkward_consumer.py NAMESRV GROUP TOPIC ACK_CALLS``

Consumes ``TOPIC`` from the first offset, one batch at a time (``consume_thread_max=1``,
batches of 3). The first ``ACK_CALLS`` listener calls are acknowledged; the next one blocks
forever, holding its batch. Writes one line per event to stdout (flushed):

* ``ACK <body> ...``: the listener is about to return CONSUME_SUCCESS for these bodies;
* ``HOLD <body> ...``: the listener holds these bodies and never returns.

The test SIGKILLs the process while it holds a batch.
"""

from __future__ import annotations

import asyncio
import sys

from rocketpipe import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, MessageExt, PushConsumer


async def main(namesrv: str, group: str, topic: str, ack_calls: int) -> None:
    calls = 0
    never = asyncio.Event()
    consumer = PushConsumer(
        group,
        namesrv_addr=namesrv,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        consume_thread_max=1,
        consume_message_batch_max_size=3,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        nonlocal calls
        calls += 1
        bodies = " ".join(m.body.decode() for m in msgs)
        if calls > ack_calls:
            print(f"HOLD {bodies}", flush=True)
            await never.wait()
        print(f"ACK {bodies}", flush=True)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    async with consumer:
        await never.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
