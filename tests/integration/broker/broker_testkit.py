"""Raw-request helpers for the broker integration tests (RemotingCommand over a Connection)."""

from __future__ import annotations

from rocketpipe.protocol import message as pm
from rocketpipe.protocol import sysflag as sf
from rocketpipe.protocol.bodies.heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from rocketpipe.protocol.codes import RequestCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.pull import PullMessageRequestHeader
from rocketpipe.protocol.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketpipe.transport import Connection

TIMEOUT = 10.0


def send_cmd(
    topic: str,
    body: bytes,
    *,
    code: int = RequestCode.SEND_MESSAGE_V2,
    queue_id: int = 0,
    tags: str | None = None,
    properties: dict[str, str] | None = None,
    reconsume_times: int | None = None,
    max_reconsume_times: int | None = None,
    batch: bool = False,
    default_topic: str = "TBW102",
) -> RemotingCommand:
    """Build a send request (V1 header for codes 10 and 324, V2 otherwise)."""
    props = dict(properties or {})
    if tags:
        props[pm.PROPERTY_TAGS] = tags
    props.setdefault(pm.PROPERTY_WAIT_STORE_MSG_OK, "true")
    h = SendMessageRequestHeader(
        producer_group="pg",
        topic=topic,
        default_topic=default_topic,
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties=pm.properties_to_string(props),
        reconsume_times=reconsume_times,
        max_reconsume_times=max_reconsume_times,
        batch=batch,
        unit_mode=False,
    )
    ext = (
        h.to_ext_fields()
        if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE)
        else SendMessageRequestHeaderV2.from_v1(h).to_ext_fields()
    )
    return RemotingCommand.request(code, ext, body)


async def send(conn: Connection, topic: str, body: bytes, **kw: object) -> RemotingCommand:
    """Send one message; return the response."""
    return await conn.request(send_cmd(topic, body, **kw), TIMEOUT)  # type: ignore[arg-type]


def pull_cmd(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    max_nums: int = 32,
    suspend_ms: int = 0,
    commit_offset: int | None = None,
    subscription: str | None = "*",
    sub_version: int = 0,
    code: int = RequestCode.PULL_MESSAGE,
) -> RemotingCommand:
    """Build a pull request; flags follow the arguments (subscription in header when given)."""
    flag = sf.build_pull_sys_flag(
        commit_offset=commit_offset is not None, suspend=suspend_ms > 0, subscription=subscription is not None
    )
    h = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=flag,
        commit_offset=commit_offset or 0,
        suspend_timeout_millis=suspend_ms,
        subscription=subscription,
        sub_version=sub_version,
        expression_type="TAG",
    )
    return RemotingCommand.request(code, h.to_ext_fields())


async def pull(conn: Connection, group: str, topic: str, queue_id: int, offset: int, **kw: object) -> RemotingCommand:
    """Pull; return the response (waits up to 30 s for held pulls)."""
    return await conn.request(pull_cmd(group, topic, queue_id, offset, **kw), 30.0)  # type: ignore[arg-type]


def heartbeat_cmd(
    client_id: str, group: str, subs: dict[str, str], *, sub_version: int = 1, producer: str | None = None
) -> RemotingCommand:
    """HEART_BEAT with one consumer group subscribed to ``subs`` (topic -> expression)."""
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                subscription_data_set=[SubscriptionData.build(t, e, sub_version=sub_version) for t, e in subs.items()],
            )
        ],
        producer_data_set=[ProducerData(producer)] if producer else [],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode())


def records(resp: RemotingCommand) -> list[pm.MessageExt]:
    """Decode a pull response body."""
    return pm.decode_records(bytes(resp.body))
