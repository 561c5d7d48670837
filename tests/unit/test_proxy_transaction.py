"""The gRPC endpoint's transactional side without a network: the kept data of half messages
(Java ``TransactionDataManager``), the Telemetry channels and producer groups
(``GrpcChannelManager`` / ``ProducerManager.getAvailableChannel``), EndTransaction's refusals
and header, and a broker's check-back turned into a ``RecoverOrphanedTransactionCommand``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from rocketpipe.client import ClientConfig, ClientRuntime, Producer
from rocketpipe.client.rpc import SendResult, SendStatus
from rocketpipe.protocol.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketpipe.protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketpipe.protocol.message import MessageExt, MessageQueue, create_offset_msg_id
from rocketpipe.proxy import transaction as tx
from rocketpipe.proxy.channel import ChannelManager, TelemetryChannel
from rocketpipe.proxy.convert import GrpcError
from rocketpipe.proxy.service import MessagingService, producer_settings
from rocketpipe.proxy.transaction import TransactionData, TransactionDataManager, TransactionService
from rocketpipe.testing import FakeClock

NOW = 1_700_000_000_000


def _data(expire_at: int, offset: int = 0, broker: str = "broker-a") -> TransactionData:
    return TransactionData(broker, "T", offset, 100 + offset, "TX", expire_at - 30_000, 30_000)


def test_resolutions_map_to_end_transaction_values() -> None:
    assert tx.commit_or_rollback(pb.TransactionResolution.COMMIT) == 8
    assert tx.commit_or_rollback(pb.TransactionResolution.ROLLBACK) == 12
    assert tx.commit_or_rollback(pb.TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED) == 0


def test_poll_takes_the_latest_expiring_unexpired_entry_once() -> None:
    m = TransactionDataManager()
    a, b, old = _data(NOW + 10, 1), _data(NOW + 20, 2), _data(NOW - 1, 3)
    for d in (b, old, a, a):  # an equal entry is kept once
        m.add("T", "TX", d, NOW - 5)
    assert len(m) == 3
    assert m.poll_no_expire("T", "TX", NOW) == b
    assert m.poll_no_expire("T", "TX", NOW) == a
    assert m.poll_no_expire("T", "TX", NOW) is None  # the expired one is dropped, not returned
    assert len(m) == 0
    assert m.poll_no_expire("other", "TX", NOW) is None


def test_keys_are_group_and_transaction_id() -> None:
    m = TransactionDataManager()
    m.add("T1", "TX", _data(NOW + 10), NOW)
    assert m.poll_no_expire("T2", "TX", NOW) is None
    assert m.poll_no_expire("T1", "TX2", NOW) is None
    assert TransactionDataManager.key("T1", "TX") == "T1@TX"
    assert m.poll_no_expire("T1", "TX", NOW) is not None


def test_at_most_max_num_entries_per_key_dropping_the_first_to_expire() -> None:
    m = TransactionDataManager(max_num=2)
    for i in range(3):
        m.add("T", "TX", _data(NOW + 10 + i, i), NOW)
    assert len(m) == 2
    assert [m.poll_no_expire("T", "TX", NOW), m.poll_no_expire("T", "TX", NOW)] == [
        _data(NOW + 12, 2),
        _data(NOW + 11, 1),
    ]


def test_adding_sweeps_expired_entries_once_per_scan_period() -> None:
    m = TransactionDataManager(scan_period_ms=10_000)
    m.add("A", "1", _data(NOW + 5), NOW)
    m.add("B", "2", _data(NOW + 5), NOW + 6)  # within the scan period: A's expired entry stays
    assert len(m) == 2
    m.add("C", "3", _data(NOW + 60_000), NOW + 10_001)
    assert len(m) == 1 and m.poll_no_expire("C", "3", NOW + 10_001) is not None


def test_remove_forgets_one_entry() -> None:
    m = TransactionDataManager()
    a, b = _data(NOW + 10, 1), _data(NOW + 20, 2)
    m.add("T", "TX", a, NOW)
    m.add("T", "TX", b, NOW)
    m.remove("T", "TX", b)
    m.remove("T", "TX", b)  # twice is harmless
    assert m.poll_no_expire("T", "TX", NOW) == a
    m.remove("T", "nothing", a)
    assert len(m) == 0


async def test_telemetry_channel_hands_out_written_commands_until_closed() -> None:
    ch = TelemetryChannel("c1")
    first, second = spb.TelemetryCommand(), spb.TelemetryCommand(status=pb.Status(code=pb.Code.OK))
    assert ch.write(first) and ch.write(second)
    ch.close()
    assert not ch.is_active and not ch.write(first)
    assert [c async for c in ch.commands()] == [first, second]


async def test_available_channel_is_a_live_one_of_the_group_round_robin() -> None:
    cm = ChannelManager()
    assert cm.register_producer("T", "c1") and cm.register_producer("T", "c2")
    assert not cm.register_producer("T", "c1")
    assert cm.available_channel("T") is None  # no Telemetry stream yet
    c1, c2 = cm.open("c1"), cm.open("c2")
    picks = {cm.available_channel("T") for _ in range(4)}
    assert picks == {c1, c2}
    cm.close(c2)
    assert {cm.available_channel("T") for _ in range(4)} == {c1}
    assert cm.available_channel("Other") is None


async def test_a_new_stream_replaces_the_old_one_of_the_same_client() -> None:
    cm = ChannelManager()
    old = cm.open("c1")
    new = cm.open("c1")
    assert not old.is_active and cm.channel("c1") is new
    assert cm.close(old) is False  # replaced: the client is still connected
    assert cm.channel("c1") is new
    assert cm.close(new) is True and cm.channel("c1") is None


def test_unregistering_a_client_reports_the_groups_left_empty() -> None:
    cm = ChannelManager()
    cm.register_producer("A", "c1")
    cm.register_producer("B", "c1")
    cm.register_producer("B", "c2")
    assert cm.unregister_client("c1") == ["A"]
    assert not cm.group_online("A") and cm.group_online("B")
    assert cm.unregister_client("c1") == []
    assert cm.unregister_client("c2") == ["B"]


@dataclass
class _Conn:
    remote_address: str


@pytest.fixture
async def service() -> Any:
    runtime = ClientRuntime(ClientConfig(namesrv_addr="127.0.0.1:9"))
    yield TransactionService(runtime, ChannelManager(), clock=FakeClock(NOW))
    await runtime.close()


def _end(topic: str = "T", transaction_id: str = "TX", **kw: Any) -> spb.EndTransactionRequest:
    return spb.EndTransactionRequest(
        topic=pb.Resource(name=topic), message_id="MID", transaction_id=transaction_id, **kw
    )


@pytest.mark.parametrize(
    ("request_", "code", "text"),
    [
        (_end(transaction_id=" "), pb.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty"),
        (_end(topic="bad topic"), pb.Code.ILLEGAL_TOPIC, ""),
        (_end(), pb.Code.INTERNAL_SERVER_ERROR, "cannot found transaction data"),
    ],
)
async def test_end_transaction_refusals(
    service: TransactionService, request_: spb.EndTransactionRequest, code: int, text: str
) -> None:
    with pytest.raises(GrpcError) as e:
        await service.end_transaction(request_)
    assert e.value.code == code and text in e.value.message


def test_a_half_sent_with_send_ok_keeps_its_offsets(service: TransactionService) -> None:
    result = SendResult(
        send_status=SendStatus.SEND_OK,
        msg_id="UNIQ",
        offset_msg_id=create_offset_msg_id("127.0.0.1:10911", 4242),
        message_queue=MessageQueue("T", "broker-a", 2),
        queue_offset=7,
        transaction_id="UNIQ",
    )
    service.on_half_sent("T", "T", result)
    service.on_half_sent("T", "T", SendResult(SendStatus.SEND_OK, "X", "", result.message_queue, 1))  # no tx id
    assert len(service.data) == 1
    data = service.data.poll_no_expire("T", "UNIQ", NOW)
    assert data == TransactionData("broker-a", "T", 7, 4242, "UNIQ", NOW, tx.TRANSACTION_DATA_EXPIRE_MS)


def _half() -> tuple[MessageExt, CheckTransactionStateRequestHeader]:
    msg = MessageExt(
        topic="T",
        body=b"order",
        properties={"UNIQ_KEY": "UNIQ", "TRAN_MSG": "true", "PGROUP": "T"},
        queue_offset=3,
        commit_log_offset=900,
    )
    header = CheckTransactionStateRequestHeader(
        bname="broker-a",
        topic="T",
        tran_state_table_offset=3,
        commit_log_offset=900,
        msg_id="UNIQ",
        transaction_id="UNIQ",
    )
    return msg, header


async def test_check_back_goes_to_a_producer_stream_and_its_answer_ends_the_half(
    service: TransactionService, monkeypatch: pytest.MonkeyPatch
) -> None:
    msg, header = _half()
    conn: Any = _Conn("127.0.0.1:10911")
    await service.check_transaction_state("T", conn, msg, header)  # nobody online: dropped
    assert len(service.data) == 0

    service.channels.register_producer("T", "c1")
    channel = service.channels.open("c1")
    await service.check_transaction_state("T", conn, msg, header)
    channel.close()
    [command] = [c async for c in channel.commands()]
    recover = command.recover_orphaned_transaction_command
    assert recover.transaction_id == "UNIQ"
    assert recover.message.topic.name == "T" and recover.message.body == b"order"
    assert recover.message.system_properties.message_id == "UNIQ"
    assert recover.message.system_properties.message_type == pb.MessageType.TRANSACTION

    sent: list[tuple[str, EndTransactionRequestHeader]] = []

    async def oneway(pool: object, addr: str, h: EndTransactionRequestHeader, remark: str | None = None) -> None:
        sent.append((addr, h))

    monkeypatch.setattr(tx.rpc, "end_transaction_oneway", oneway)
    await service.end_transaction(
        _end(
            transaction_id="UNIQ",
            resolution=pb.TransactionResolution.ROLLBACK,
            source=pb.TransactionSource.SOURCE_SERVER_CHECK,
        )
    )
    [(addr, h)] = sent
    assert addr == "127.0.0.1:10911"  # back to the broker that asked
    assert (h.topic, h.producer_group, h.msg_id, h.transaction_id) == ("T", "T", "MID", "UNIQ")
    assert (h.tran_state_table_offset, h.commit_log_offset) == (3, 900)
    assert h.commit_or_rollback == 12 and h.from_transaction_check is True
    with pytest.raises(GrpcError):  # the data is used once
        await service.end_transaction(_end(transaction_id="UNIQ"))


async def test_check_back_to_a_closed_stream_keeps_nothing(service: TransactionService) -> None:
    msg, header = _half()
    service.channels.register_producer("T", "c1")
    channel = service.channels.open("c1")
    channel.close()  # closed but not yet forgotten: not available
    await service.check_transaction_state("T", _Conn("h:1"), msg, header)  # type: ignore[arg-type]
    assert len(service.data) == 0


def test_transaction_groups_ride_in_the_runtime_heartbeats(service: TransactionService) -> None:
    rt = service.runtime
    service.add_transaction_subscription("T", "T")
    service.add_transaction_subscription("T", "T")  # idempotent
    assert service.transaction_groups() == ["T"]
    member = rt.find_producer("T")
    assert member is not None and member.producer_group == "T"
    body = rt.heartbeat_body()
    assert body is not None and b'"groupName":"T"' in body
    service.remove_group("T")
    assert service.transaction_groups() == [] and rt.find_producer("T") is None
    assert rt.heartbeat_body() is None


def test_producer_settings_carry_the_message_type_check_switch() -> None:
    client = pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(name="T")]))
    assert producer_settings(client, 1024).publishing.validate_message_type is True
    assert producer_settings(client, 1024, validate_message_type=False).publishing.validate_message_type is False


class _Admin:
    """Routes and topic configs: ``TxT`` is a TRANSACTION topic (Apache's ``message.type``)."""

    async def topic_route(self, topic: str) -> TopicRouteData:
        return TopicRouteData(
            queue_datas=[QueueData("broker-a", 4, 4, 6)], broker_datas=[BrokerData("c", "broker-a", {0: "h:1"})]
        )

    async def examine_topic_config(self, addr: str, topic: str) -> dict[str, Any]:
        return {"attributes": {"message.type": "TRANSACTION"} if topic == "TxT" else {}}


class _Context:
    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("x-mq-client-id", "c1")]


async def test_producers_of_transaction_topics_are_heartbeated_until_they_leave() -> None:
    producer = Producer("pg", namesrv_addr="127.0.0.1:9")
    service = MessagingService(producer, _Admin())  # type: ignore[arg-type]
    try:
        publishing = pb.Publishing(topics=[pb.Resource(name="TxT"), pb.Resource(name="Plain")])
        service.client_settings["c1"] = pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=publishing)
        resp = await service.Heartbeat(spb.HeartbeatRequest(client_type=pb.ClientType.PRODUCER), _Context())
        assert resp.status.code == pb.Code.OK
        assert service.channels.group_online("TxT") and service.channels.group_online("Plain")
        assert service.transactions.transaction_groups() == ["TxT"]  # ClientActivity.registerProducer
        assert producer.runtime.find_producer("TxT") is not None
        await service.NotifyClientTermination(spb.NotifyClientTerminationRequest(), _Context())
        assert not service.channels.group_online("TxT")
        assert service.transactions.transaction_groups() == [] and producer.runtime.find_producer("TxT") is None
    finally:
        await producer.close()
