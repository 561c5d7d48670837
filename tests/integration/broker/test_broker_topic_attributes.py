"""5.x topic attributes over the wire: UPDATE_AND_CREATE_TOPIC's ``attributes`` header field
(``+key=value`` / ``-key``), GET_TOPIC_CONFIG and GET_ALL_TOPIC_CONFIG answering them, the
refusals with Java 5.3.3's codes and remarks, and ``topics.json`` keeping them across a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_testkit import TIMEOUT

from rocketpipe import Admin
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.errors import BrokerError
from rocketpipe.protocol.bodies import javajson as jj
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.admin import CreateTopicRequestHeader, GetTopicConfigRequestHeader
from rocketpipe.store import load_json
from rocketpipe.testing import local_cluster
from rocketpipe.transport import Connection


async def create(c: Connection, topic: str, attributes: str | None, queues: int = 4) -> RemotingCommand:
    h = CreateTopicRequestHeader(topic=topic, read_queue_nums=queues, write_queue_nums=queues, attributes=attributes)
    return await c.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), TIMEOUT)


async def topic_config(c: Connection, topic: str) -> RemotingCommand:
    h = GetTopicConfigRequestHeader(topic=topic)
    return await c.request(RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, h.to_ext_fields()), TIMEOUT)


async def attributes_of(c: Connection, topic: str) -> dict[str, Any]:
    r = await topic_config(c, topic)
    assert r.code == ResponseCode.SUCCESS, r.remark
    return jj.as_dict(jj.loads(bytes(r.body or b"")))["attributes"]  # type: ignore[no-any-return]


async def test_admin_creates_changes_and_removes_attributes(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, auto_create_topic_enable=False) as cl, Admin(cl.namesrv_addr) as admin:
        addr = cl.broker_addr
        await admin.create_topic("AttrFifo", 4, attributes="+message.type=FIFO,+queue.type=SimpleCQ")
        cfg = await admin.examine_topic_config(addr, "AttrFifo")
        assert cfg["attributes"] == {"message.type": "FIFO", "queue.type": "SimpleCQ"}
        assert cfg["readQueueNums"] == 4
        # an update without attributes keeps them (Java: alterCurrentAttributes with nothing new)
        await admin.create_and_update_topic_config(addr, "AttrFifo", read_queue_nums=6, write_queue_nums=6)
        cfg = await admin.examine_topic_config(addr, "AttrFifo")
        assert (cfg["readQueueNums"], cfg["attributes"]["message.type"]) == (6, "FIFO")
        await admin.create_and_update_topic_config(addr, "AttrFifo", attributes="+message.type=DELAY")
        assert (await admin.examine_topic_config(addr, "AttrFifo"))["attributes"] == {
            "message.type": "DELAY",
            "queue.type": "SimpleCQ",
        }
        await admin.create_and_update_topic_config(addr, "AttrFifo", attributes="-message.type")
        assert (await admin.examine_topic_config(addr, "AttrFifo"))["attributes"] == {"queue.type": "SimpleCQ"}
        assert cl.broker.topics.get("AttrFifo").attributes == {"queue.type": "SimpleCQ"}  # type: ignore[union-attr]
        # GET_ALL_TOPIC_CONFIG carries them too; a topic created without any has {}
        await admin.create_topic("AttrPlain", 2)
        c = await Connection.connect(addr)
        try:
            r = await c.request(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), TIMEOUT)
            table = jj.as_dict(jj.loads(bytes(r.body or b"")))["topicConfigTable"]
            assert table["AttrFifo"]["attributes"] == {"queue.type": "SimpleCQ"}
            assert table["AttrPlain"]["attributes"] == {}
        finally:
            await c.close()


async def test_refused_attribute_changes_answer_java_codes_and_change_nothing(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, auto_create_topic_enable=False)) as b:
        c = await Connection.connect(b.address)
        try:
            refused = [
                ("New1", "+foo=bar", ResponseCode.SYSTEM_ERROR, "unsupported key: foo"),
                (
                    "New2",
                    "+message.type=BAD",
                    ResponseCode.SYSTEM_ERROR,
                    "value is not in set: [UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]",
                ),
                (
                    "New3",
                    "message.type=FIFO",
                    ResponseCode.SYSTEM_ERROR,
                    "add/alter attribute format is wrong: message.type",
                ),
                (
                    "New4",
                    "-message.type",
                    ResponseCode.SYSTEM_ERROR,
                    "only add attribute is supported while creating topic. key: message.type",
                ),
                ("New5", "+message.type=MIXED", ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported."),
            ]
            for topic, attributes, code, remark in refused:
                r = await create(c, topic, attributes)
                assert (r.code, r.remark) == (code, remark), attributes
                assert (await topic_config(c, topic)).code == ResponseCode.TOPIC_NOT_EXIST  # not created
            assert (await create(c, "Kept", "+message.type=FIFO,+queue.type=SimpleCQ")).code == ResponseCode.SUCCESS
            refused_updates = [
                ("+queue.type=BatchCQ", "attempt to update an unchangeable attribute. key: queue.type"),
                ("-reserve.time", "attempt to delete a nonexistent key: reserve.time"),
                ("+message.type=NORMAL,-message.type", "alter duplication key. key: message.type"),
            ]
            for attributes, remark in refused_updates:
                r = await create(c, "Kept", attributes, queues=8)
                assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, remark)
            assert await attributes_of(c, "Kept") == {"message.type": "FIFO", "queue.type": "SimpleCQ"}
            assert b.topics.get("Kept").read_queue_nums == 4  # type: ignore[union-attr]  # nothing applied
        finally:
            await c.close()


async def test_admin_create_topic_raises_the_brokers_refusal(tmp_path: Path) -> None:
    async with local_cluster(tmp_path, auto_create_topic_enable=False) as cl, Admin(cl.namesrv_addr) as admin:
        try:
            await admin.create_topic("AttrBad", 2, attributes="+nope=1")
        except BrokerError as exc:
            assert (exc.response_code, exc.remark) == (ResponseCode.SYSTEM_ERROR, "unsupported key: nope")
        else:
            raise AssertionError("create_topic accepted an unsupported attribute")
        assert cl.broker.topics.get("AttrBad") is None


async def test_attributes_survive_a_restart_in_topics_json(tmp_path: Path) -> None:
    cfg = BrokerConfig(store_dir=tmp_path, auto_create_topic_enable=False)
    async with Broker(cfg) as b:
        c = await Connection.connect(b.address)
        try:
            assert (await create(c, "TxTopic", "+message.type=TRANSACTION")).code == ResponseCode.SUCCESS
            assert (await create(c, "Plain", None)).code == ResponseCode.SUCCESS
        finally:
            await c.close()
        topics_json = b.config_dir / "topics.json"
    saved = load_json(topics_json)
    assert saved["topicConfigTable"]["TxTopic"]["attributes"] == {"message.type": "TRANSACTION"}
    assert saved["topicConfigTable"]["Plain"]["attributes"] == {}
    async with Broker(cfg) as b2:
        c = await Connection.connect(b2.address)
        try:
            assert await attributes_of(c, "TxTopic") == {"message.type": "TRANSACTION"}
            assert await attributes_of(c, "Plain") == {}
            # the restored attributes are the current ones for the update rules
            r = await create(c, "TxTopic", "-message.type")
            assert r.code == ResponseCode.SUCCESS
            assert await attributes_of(c, "TxTopic") == {}
        finally:
            await c.close()
