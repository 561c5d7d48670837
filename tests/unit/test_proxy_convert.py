"""The gRPC endpoint's pure conversions: Java hashing, routes, gRPC message → remoting message."""

from __future__ import annotations

import gzip

import pytest
from google.protobuf import timestamp_pb2
from rocketmq.grpc_protocol import definition_pb2 as pb

from rocketpipe.errors import TopicNotExistError
from rocketpipe.protocol.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketpipe.protocol.message import MessageExt, java_string_hash
from rocketpipe.proxy.convert import GrpcError, consistent_hash, error_status, to_grpc_message, to_remoting_message
from rocketpipe.proxy.route import message_queues

#: (string, String.hashCode(), {buckets: Hashing.consistentHash(hashCode, buckets)}), printed by
#: jshell with Guava 32.0.1-jre (the proxy's dependency).
GUAVA_VECTORS = [
    ("order-1", -1207111310, {1: 0, 4: 3, 8: 3, 16: 3}),
    ("order-2", -1207111309, {1: 0, 4: 2, 8: 2, 16: 11}),
    ("group-ä", 293427478, {1: 0, 4: 1, 8: 7, 16: 11}),
    ("x", 120, {1: 0, 4: 1, 8: 4, 16: 12}),
    ("", 0, {1: 0, 4: 0, 8: 0, 16: 0}),
]


@pytest.mark.parametrize(("s", "java_hash", "buckets"), GUAVA_VECTORS)
def test_message_group_hashing_matches_java(s: str, java_hash: int, buckets: dict[int, int]) -> None:
    assert java_string_hash(s) == java_hash
    assert {n: consistent_hash(java_hash, n) for n in buckets} == buckets


def test_route_renumbers_queues_by_permission_and_points_at_the_endpoint() -> None:
    route = TopicRouteData(
        queue_datas=[
            QueueData("broker-a", read_queue_nums=3, write_queue_nums=2, perm=6),
            QueueData("broker-b", 2, 2, 4),
        ],
        broker_datas=[BrokerData("c", "broker-a", {0: "h:1"}), BrokerData("c", "broker-b", {0: "h:2"})],
    )
    endpoints = pb.Endpoints(scheme=pb.AddressScheme.IPv4, addresses=[pb.Address(host="127.0.0.1", port=8081)])
    queues = message_queues(route, pb.Resource(name="T"), endpoints, "NORMAL")
    a = [(q.id, q.permission) for q in queues if q.broker.name == "broker-a"]
    b = [(q.id, q.permission) for q in queues if q.broker.name == "broker-b"]
    # Java: read-only first, then write-only, then read-write
    assert a == [(0, pb.Permission.READ), (1, pb.Permission.READ_WRITE), (2, pb.Permission.READ_WRITE)]
    assert b == [(0, pb.Permission.READ), (1, pb.Permission.READ)]
    assert {q.broker.endpoints.addresses[0].port for q in queues} == {8081}
    assert {tuple(q.accept_message_types) for q in queues} == {(pb.MessageType.NORMAL,)}
    mixed = message_queues(route, pb.Resource(name="T"), endpoints, "MIXED")
    assert len(mixed[0].accept_message_types) == 4


def _proto(**sp: object) -> pb.Message:
    props = pb.SystemProperties(message_id="01AB", **sp)  # type: ignore[arg-type]
    return pb.Message(topic=pb.Resource(name="T"), body=b"hello", system_properties=props)


def test_message_properties_as_the_proxy_builds_them() -> None:
    born = timestamp_pb2.Timestamp(seconds=1700000000, nanos=5_000_000)
    deliver = timestamp_pb2.Timestamp(seconds=1700000060)
    proto = _proto(tag="TagA", keys=["k1", "k2"], message_group="g1", born_timestamp=born, delivery_timestamp=deliver)
    proto.user_properties["color"] = "red"
    msg, half = to_remoting_message(proto, "T", "10.0.0.1:5555", 1024)
    assert not half and msg.topic == "T" and msg.body == b"hello"
    assert msg.properties == {
        "color": "red",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "UNIQ_KEY": "01AB",
        "TIMER_DELIVER_MS": "1700000060000",
        "RECONSUME_TIME": "0",
        "PGROUP": "T",
        "__SHARDINGKEY": "g1",
        "__BORNHOST": "10.0.0.1:5555",
        "BORN_TIMESTAMP": "1700000000005",
    }
    tx, half = to_remoting_message(_proto(message_type=pb.MessageType.TRANSACTION), "T", "", 1024)
    assert half and tx.properties["TRAN_MSG"] == "true"


def test_gzip_bodies_are_inflated() -> None:
    proto = _proto(body_encoding=pb.Encoding.GZIP)
    proto.body = gzip.compress(b"x" * 100)
    msg, _ = to_remoting_message(proto, "T", "", 1024)
    assert msg.body == b"x" * 100
    proto.body = b"not gzip"
    with pytest.raises(GrpcError) as e:
        to_remoting_message(proto, "T", "", 1024)
    assert e.value.code == pb.Code.BAD_REQUEST


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda m: m.user_properties.__setitem__("TAGS", "x"), pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
        (lambda m: m.user_properties.__setitem__("k", "a\x01b"), pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
        (lambda m: m.system_properties.keys.append("  "), pb.Code.ILLEGAL_MESSAGE_KEY),
        (lambda m: setattr(m.system_properties, "message_id", ""), pb.Code.ILLEGAL_MESSAGE_ID),
        (lambda m: setattr(m.system_properties, "message_group", " "), pb.Code.ILLEGAL_MESSAGE_GROUP),
        (lambda m: setattr(m, "body", b"y" * 2000), pb.Code.MESSAGE_BODY_TOO_LARGE),
    ],
)
def test_bad_messages_are_refused_with_javas_codes(change: object, code: int) -> None:
    proto = _proto()
    change(proto)  # type: ignore[operator]
    with pytest.raises(GrpcError) as e:
        to_remoting_message(proto, "T", "", 1024)
    assert e.value.code == code


def test_error_statuses() -> None:
    assert error_status(TopicNotExistError("no route")).code == pb.Code.TOPIC_NOT_FOUND
    assert error_status(RuntimeError("boom")).code == pb.Code.INTERNAL_SERVER_ERROR


def test_orphaned_transaction_recovery_duration_becomes_the_check_immunity_time() -> None:
    proto = _proto(message_type=pb.MessageType.TRANSACTION)
    proto.system_properties.orphaned_transaction_recovery_duration.FromSeconds(30)
    msg, half = to_remoting_message(proto, "T", "", 1024)
    assert half and msg.properties["CHECK_IMMUNITY_TIME_IN_SECONDS"] == "30"
    assert msg.properties["PGROUP"] == "T"
    # ProxyConfig maxTransactionRecoverySecond: one hour at most
    proto.system_properties.orphaned_transaction_recovery_duration.FromSeconds(3601)
    with pytest.raises(GrpcError) as e:
        to_remoting_message(proto, "T", "", 1024)
    assert e.value.code == pb.Code.BAD_REQUEST and "max is 3600" in e.value.message
    plain, _ = to_remoting_message(_proto(message_type=pb.MessageType.TRANSACTION), "T", "", 1024)
    assert "CHECK_IMMUNITY_TIME_IN_SECONDS" not in plain.properties


def test_received_messages_show_user_properties_as_apache_53_proxy() -> None:
    """``GrpcConverter.buildMessage``: user properties are those outside 5.3.3's
    ``STRING_HASH_SET`` — the born host/time and timer bookkeeping hidden, the message group
    (``__SHARDINGKEY``) and ``__transactionId__`` shown; system properties as their own fields."""
    props = {
        "color": "red",
        "__SHARDINGKEY": "g1",
        "__transactionId__": "tx-1",
        "__BORNHOST": "10.0.0.1",
        "BORN_TIMESTAMP": "1700000000000",
        "TIMER_OUT_MS": "1700000001000",
        "TIMER_ENQUEUE_MS": "1700000000500",
        "UNIQ_KEY": "AC11000100002A9F0000000000000001",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "POP_CK": "0 1 2 3 4 5 6 7",
    }
    msg = MessageExt(
        topic="T", body=b"hello", properties=props, queue_id=2, queue_offset=7, reconsume_times=1,
        born_timestamp=1_700_000_000_000, store_timestamp=1_700_000_000_100, store_host="127.0.0.1:10911",
    )  # fmt: skip
    out = to_grpc_message(msg, now_ms=1_700_000_002_000)
    assert dict(out.user_properties) == {"color": "red", "__SHARDINGKEY": "g1", "__transactionId__": "tx-1"}
    sp = out.system_properties
    assert (sp.tag, list(sp.keys), sp.message_id) == ("TagA", ["k1", "k2"], "AC11000100002A9F0000000000000001")
    assert (sp.message_group, sp.receipt_handle, sp.delivery_attempt) == ("g1", "0 1 2 3 4 5 6 7", 2)
    assert (sp.queue_id, sp.queue_offset, sp.born_host) == (2, 7, "10.0.0.1")
    assert sp.message_type == pb.MessageType.FIFO
    assert sp.body_digest.checksum == "5D41402ABC4B2A76B9719D911017C592"  # MD5("hello"), upper-case
