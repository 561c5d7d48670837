"""Request-reply on the embedded broker: SEND_REPLY_MESSAGE(_V2) pushed to the requester's
connection (PUSH_REPLY_MESSAGE_TO_CLIENT) and stored in <cluster>_REPLY_TOPIC; Java's remarks
when the requester is unknown or REPLY_TO_CLIENT is missing."""

from __future__ import annotations

from pathlib import Path

from broker_testkit import TIMEOUT, heartbeat_cmd, send

from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.protocol import message as pm
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.send import ReplyMessageRequestHeader
from rocketpipe.transport import Connection, Router
from waiting import wait_until

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


def _reply_props(to: str | None) -> dict[str, str]:
    props = {pm.PROPERTY_CORRELATION_ID: "corr-1", pm.PROPERTY_MESSAGE_TYPE: pm.REPLY_MESSAGE_FLAG, "answer": "42"}
    if to is not None:
        props[pm.PROPERTY_MESSAGE_REPLY_TO_CLIENT] = to
    return props


async def test_reply_is_pushed_to_the_requester_and_stored(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        pushed: list[tuple[ReplyMessageRequestHeader, bytes]] = []
        router: Router = Router()

        async def on_push(cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
            pushed.append((ReplyMessageRequestHeader.from_ext_fields(cmd.ext_fields), bytes(cmd.body)))
            return cmd.response(ResponseCode.SUCCESS)

        router.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, on_push)
        requester = await Connection.connect(b.address, router=router)
        replier = await Connection.connect(b.address)
        try:
            hb = heartbeat_cmd("10.0.0.1@req", "cg-none", {}, producer="req-group")
            assert (await requester.request(hb, TIMEOUT)).code == ResponseCode.SUCCESS
            r = await send(
                replier,
                REPLY_TOPIC,
                b"the answer",
                properties=_reply_props("10.0.0.1@req"),
                code=RequestCode.SEND_REPLY_MESSAGE_V2,
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
            await wait_until(lambda: len(pushed) == 1, timeout=5, what="reply pushed")
            h, body = pushed[0]
            props = pm.string_to_properties(h.properties or "")
            assert body == b"the answer" and h.topic == REPLY_TOPIC and h.store_host == b.address
            assert props[pm.PROPERTY_CORRELATION_ID] == "corr-1" and props["answer"] == "42"
            assert int(props[pm.PROPERTY_PUSH_REPLY_TIME]) == h.store_timestamp
            [stored] = [m for buf in b.store.get_message(REPLY_TOPIC, 0, 0, 10).buffers for m in pm.decode_records(buf)]
            assert stored.body == b"the answer" and r.ext_fields["msgId"] == stored.offset_msg_id
            assert pm.PROPERTY_PUSH_REPLY_TIME not in stored.properties  # Java stores the string as sent
        finally:
            await requester.close()
            await replier.close()


async def test_reply_to_an_unknown_or_missing_requester(tmp_path: Path) -> None:
    async with Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=1 << 20)) as b:
        conn = await Connection.connect(b.address)
        try:
            gone = await send(
                conn, REPLY_TOPIC, b"x", properties=_reply_props("1.2.3.4@gone"), code=RequestCode.SEND_REPLY_MESSAGE
            )
            assert (gone.code, gone.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "push reply message fail, channel of <1.2.3.4@gone> not found.",
            )
            none = await send(
                conn, REPLY_TOPIC, b"y", properties=_reply_props(None), code=RequestCode.SEND_REPLY_MESSAGE_V2
            )
            assert (none.code, none.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "reply message properties[REPLY_TO_CLIENT] is null",
            )
            assert b.store.get_max_offset(REPLY_TOPIC, 0) == 2  # stored all the same (storeReplyMessageEnable)
        finally:
            await conn.close()
