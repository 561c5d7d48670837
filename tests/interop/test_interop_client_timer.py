"""5.x timer messages: rocketpipe's client sets TIMER_DELAY_MS / TIMER_DELIVER_MS (Message.build)
and the broker holds the message until its time — rocketpipe's broker and Apache 5.3.3 alike,
with the same properties on the delivered copy and the same refusal beyond timerMaxDelaySec.
Apache 4.9.7 has no timer: it stores such a message at once (documented here)."""

from __future__ import annotations

import time

import pytest
from interop_support import Target, create_topic, read_topic, unique

from rocketpipe import Admin, Message, MessageExt, Producer, SendStatus
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.recall import build_recall_handle, decode_recall_handle
from waiting import wait_until

TIMER_PROPS = {"TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "REAL_TOPIC", "REAL_QID"}


async def test_timer_messages_wait_for_their_time(target: Target) -> None:
    topic = unique("Timer")
    async with Admin(target.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
            t0 = int(time.time() * 1000)
            now = await p.send(Message.build(topic, b"now"))
            later = await p.send(Message.build(topic, b"in 3 s", delay_time_ms=3000, keys="k-later"))
            at = await p.send(Message.build(topic, b"at t0+4 s", deliver_time_ms=t0 + 4000))
            assert {r.send_status for r in (now, later, at)} == {SendStatus.SEND_OK}
            if target.kind == "apache-4":  # no timer in 4.x: stored at once, properties kept
                got: list[MessageExt] = []

                async def all_readable() -> bool:  # 4.x dispatches to the consume queues behind the put
                    got[:] = await read_topic(admin, topic)
                    return len(got) >= 3

                await wait_until(all_readable, timeout=20, what="the three messages readable")
                assert sorted(m.body for m in got) == [b"at t0+4 s", b"in 3 s", b"now"]
                assert not any("TIMER_OUT_MS" in m.properties for m in got)
                return
            assert [m.body for m in await read_topic(admin, topic)] == [b"now"]  # the others wait
            with pytest.raises(BrokerError) as refused:
                await p.send(Message.build(topic, b"too far", delay_time_sec=3 * 24 * 3600 + 60))
            assert refused.value.response_code == 13 and "max delay 259200000ms" in str(refused.value)

        async def arrived() -> bool:
            return len(await read_topic(admin, topic)) == 3

        await wait_until(arrived, timeout=20, what="timer messages delivered")
        got = {m.body: m for m in await read_topic(admin, topic)}
    for body, due in ((b"in 3 s", t0 + 3000), (b"at t0+4 s", t0 + 4000)):
        m = got[body]
        assert set(m.properties) >= TIMER_PROPS, sorted(m.properties)
        assert m.store_timestamp >= due - 1000  # 1 s precision: Java rounds the due time down
        assert m.topic == topic and m.properties["REAL_TOPIC"] == topic
        assert int(m.properties["TIMER_OUT_MS"]) in range(due - 1000, due + 1000)
    assert got[b"in 3 s"].properties["TIMER_DELAY_MS"] == "3000" and got[b"in 3 s"].keys == "k-later"
    assert str(t0 + 4000) == got[b"at t0+4 s"].properties["TIMER_DELIVER_MS"]
    assert "TIMER_OUT_MS" not in got[b"now"].properties


async def test_recall_message(target: Target) -> None:
    """A recalled timer message is never delivered; the one beside it is, with the handle's time
    = its TIMER_OUT_MS + 1. Refusals carry Java's code and remark. Apache 4.9.7 has neither timer
    nor recall: no handle in the send result, and RECALL_MESSAGE is an unsupported request code."""
    topic = unique("Recall")
    async with Admin(target.namesrv_addr) as admin:
        await create_topic(admin, topic, 2)
        async with Producer(unique("pg"), namesrv_addr=target.namesrv_addr) as p:
            kept = await p.send(Message.build(topic, b"kept", delay_time_ms=3000))
            gone = await p.send(Message.build(topic, b"gone", delay_time_ms=3000))
            if target.kind == "apache-4":
                assert kept.recall_handle is None
                handle = build_recall_handle(
                    topic, target.broker_name, str(int(time.time() * 1000) + 60_000), gone.msg_id
                )
                with pytest.raises(BrokerError) as refused:
                    await p.recall_message(topic, handle)
                assert refused.value.response_code == 3  # REQUEST_CODE_NOT_SUPPORTED
                return
            assert kept.recall_handle and gone.recall_handle
            h = decode_recall_handle(gone.recall_handle)
            assert (h.topic, h.broker_name, h.message_id) == (topic, target.broker_name, gone.msg_id)
            assert await p.recall_message(topic, gone.recall_handle) == gone.msg_id
            other_broker = build_recall_handle(topic, "broker-zz", h.timestamp_str, gone.msg_id)
            past = build_recall_handle(topic, target.broker_name, "1", gone.msg_id)
            for bad, remark in (
                (other_broker, "recall failed, broker service not available"),
                (past, "recall failed, timestamp invalid"),
            ):
                with pytest.raises(BrokerError) as refused:
                    await p.recall_message(topic, bad)
                assert refused.value.response_code == 604 and remark in str(refused.value)  # ILLEGAL_OPERATION

            async def kept_arrived() -> bool:
                return any(m.body == b"kept" for m in await read_topic(admin, topic))

            await wait_until(kept_arrived, timeout=20, what="the kept timer message delivered")
            # a later timer message delivered too: the recalled one's step is long over
            after = await p.send(Message.build(topic, b"after", delay_time_ms=1000))

        async def after_arrived() -> bool:
            return any(m.body == b"after" for m in await read_topic(admin, topic))

        await wait_until(after_arrived, timeout=20, what="the later timer message delivered")
        got = {m.body: m for m in await read_topic(admin, topic)}
    assert sorted(got) == [b"after", b"kept"], "the recalled message was delivered"
    assert decode_recall_handle(kept.recall_handle).timestamp_str == str(
        int(got[b"kept"].properties["TIMER_OUT_MS"]) + 1
    )
    assert after.recall_handle
