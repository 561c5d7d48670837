"""QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33) over real TCP with raw RemotingCommands."""

from __future__ import annotations

from pathlib import Path

from broker_testkit import TIMEOUT, send, send_cmd

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.admin import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketpipe.protocol.headers.send import SendMessageResponseHeader
from rocketpipe.transport import Connection

FOREVER = 1 << 62


def query_cmd(
    topic: str, key: str, *, max_num: int = 32, begin: int = 0, end: int = FOREVER, unique: bool | None = None
) -> RemotingCommand:
    ext = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=max_num, begin_timestamp=begin, end_timestamp=end
    ).to_ext_fields()
    ext.pop("_UNIQUE_KEY_QUERY", None)
    if unique is not None:
        ext["_UNIQUE_KEY_QUERY"] = "true" if unique else "false"
    return RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext)


async def query(c: Connection, topic: str, key: str, **kw: object) -> tuple[RemotingCommand, list[pm.MessageExt]]:
    r = await c.request(query_cmd(topic, key, **kw), TIMEOUT)  # type: ignore[arg-type]
    return r, (pm.decode_records(bytes(r.body)) if r.code == ResponseCode.SUCCESS else [])


async def send_keyed(
    c: Connection, topic: str, body: bytes, keys: str, uniq: str, queue_id: int = 0
) -> SendMessageResponseHeader:
    r = await send(c, topic, body, queue_id=queue_id, properties={"KEYS": keys, "UNIQ_KEY": uniq})
    assert r.code == ResponseCode.SUCCESS, r.remark
    return SendMessageResponseHeader.from_ext_fields(r.ext_fields)


async def test_query_by_key_and_unique_key_and_view_by_id(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 22)) as b:
        c = await Connection.connect(b.address)
        try:
            sent = [
                await send_keyed(c, "TopicQ", f"m{i}".encode(), f"order-{i} even{i % 2}", f"UNIQ{i:04d}", i % 2)
                for i in range(6)
            ]
            await send_keyed(c, "TopicOther", b"o", "order-1", "UNIQX")
            r, msgs = await query(c, "TopicQ", "order-1")
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert [(m.body, m.topic, m.queue_id, m.msg_id) for m in msgs] == [(b"m1", "TopicQ", 1, "UNIQ0001")]
            assert msgs[0].offset_msg_id == sent[1].msg_id
            rh = QueryMessageResponseHeader.from_ext_fields(r.ext_fields)
            assert (
                rh.index_last_update_phyoffset
                and rh.index_last_update_phyoffset > pm.decode_offset_msg_id(sent[-1].msg_id or "")[1]
            )
            assert rh.index_last_update_timestamp and rh.index_last_update_timestamp > 0
            # several messages per key, commit-log order; maxNum keeps the newest
            _, msgs = await query(c, "TopicQ", "even0")
            assert [m.body for m in msgs] == [b"m0", b"m2", b"m4"]
            _, msgs = await query(c, "TopicQ", "even0", max_num=2)
            assert [m.body for m in msgs] == [b"m2", b"m4"]
            # unique-key query: maxNum replaced by defaultQueryMaxNum; only the matching message
            r, msgs = await query(c, "TopicQ", "UNIQ0003", max_num=0, unique=True)
            assert r.code == ResponseCode.SUCCESS and [m.msg_id for m in msgs] == ["UNIQ0003"]
            _, msgs = await query(c, "TopicQ", "UNIQ0003", unique=False)
            assert [m.body for m in msgs] == [b"m3"]
            # time range: messages are stored "now"
            stored = msgs[0].store_timestamp
            assert (await query(c, "TopicQ", "UNIQ0003", begin=stored, end=stored))[1][0].body == b"m3"
            r, _ = await query(c, "TopicQ", "UNIQ0003", begin=stored + 1)
            assert r.code == ResponseCode.QUERY_NOT_FOUND
            assert r.remark == "can not find message, maybe time range not correct"
            assert (
                QueryMessageResponseHeader.from_ext_fields(r.ext_fields).index_last_update_phyoffset
                == rh.index_last_update_phyoffset
            )
            assert (await query(c, "TopicQ", "missing"))[0].code == ResponseCode.QUERY_NOT_FOUND
            assert (await query(c, "NoSuchTopic", "order-1"))[0].code == ResponseCode.QUERY_NOT_FOUND
            # a required header field missing: SYSTEM_ERROR from the header decoder
            bad = query_cmd("TopicQ", "order-1")
            del bad.ext_fields["maxNum"]  # type: ignore[union-attr]
            assert (await c.request(bad, TIMEOUT)).code == ResponseCode.SYSTEM_ERROR
            # VIEW_MESSAGE_BY_ID still answers from the commit-log offset of the offset msg id
            _, phys = pm.decode_offset_msg_id(sent[4].msg_id or "")
            v = await c.request(
                RemotingCommand.request(
                    RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=phys).to_ext_fields()
                ),
                TIMEOUT,
            )
            assert v.code == ResponseCode.SUCCESS
            assert [(m.body, m.msg_id) for m in pm.decode_records(bytes(v.body))] == [(b"m4", "UNIQ0004")]
        finally:
            await c.close()


async def test_batch_keys_and_broker_generated_unique_keys_are_indexed(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 22)) as b:
        c = await Connection.connect(b.address)
        try:
            inner = [
                pm.Message("TopicB", f"b{i}".encode(), properties={"KEYS": f"bk{i} batch", "UNIQ_KEY": f"BU{i}"})
                for i in range(4)
            ]
            r = await c.request(
                send_cmd("TopicB", pm.encode_batch(inner), code=RequestCode.SEND_BATCH_MESSAGE, batch=True), TIMEOUT
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
            _, msgs = await query(c, "TopicB", "batch")
            assert [(m.body, m.queue_offset) for m in msgs] == [(b"b0", 0), (b"b1", 1), (b"b2", 2), (b"b3", 3)]
            _, msgs = await query(c, "TopicB", "BU2", unique=True)
            assert [m.body for m in msgs] == [b"b2"]
            # no UNIQ_KEY from the producer: the broker's generated one is indexed
            assert (await send(c, "TopicB", b"plain", properties={"KEYS": "plain"})).code == ResponseCode.SUCCESS
            _, msgs = await query(c, "TopicB", "plain")
            uniq = msgs[0].properties.get(pm.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            if uniq:  # only when this broker generates missing unique keys (5.x behaviour)
                _, again = await query(c, "TopicB", uniq, unique=True)
                assert [m.body for m in again] == [b"plain"]
        finally:
            await c.close()


async def test_index_survives_broker_restart(tmp_path: Path) -> None:
    cfg = BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 22)
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        try:
            for i in range(5):
                await send_keyed(c, "TopicR", f"r{i}".encode(), f"rk{i} all", f"RU{i}")
        finally:
            await c.close()
    async with Broker(cfg) as b2:
        c = await Connection.connect(b2.address)
        try:
            assert b2.store.index is not None and b2.store.index.rebuilt_records == 0
            _, msgs = await query(c, "TopicR", "all")
            assert [m.body for m in msgs] == [f"r{i}".encode() for i in range(5)]
            _, msgs = await query(c, "TopicR", "RU3", unique=True)
            assert [m.body for m in msgs] == [b"r3"]
        finally:
            await c.close()
