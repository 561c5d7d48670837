"""JSON bodies: round trips, fastjson forms, MessageQueue-keyed maps, SubscriptionData.build."""

from __future__ import annotations

import zlib

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpipe.errors import InvalidArgumentError, ProtocolError
from rocketpipe.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    Connection,
    ConsumerConnection,
    ConsumerData,
    ConsumerListBody,
    ConsumerRunningInfo,
    ConsumeStats,
    DataVersion,
    GetConsumerStatusBody,
    GroupList,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    OffsetWrapper,
    ProducerData,
    QueueData,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketpipe.protocol.bodies import javajson as jj
from rocketpipe.protocol.message import MessageQueue, java_string_hash

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.text(min_size=1, max_size=12)
mqs = st.builds(MessageQueue, names, names, st.integers(0, 1000))


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData("broker-a", 4, 4, 6, 0), QueueData("broker-b", 8, 2, 2, 1)],
        broker_datas=[
            BrokerData("C", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
            BrokerData("C", "broker-b", {2: "[::1]:10911"}, zone_name="z1", enable_acting_master=True),
        ],
        filter_server_table={"10.0.0.1:10911": ["f1"]},
        order_topic_conf="broker-a:4",
    )


@pytest.mark.parametrize("standard", [True, False])
def test_route_round_trip_both_forms(standard: bool) -> None:
    r = _route()
    raw = r.encode(standard_json=standard)
    assert TopicRouteData.decode(raw) == r
    if standard:
        assert orjson.loads(raw)["brokerDatas"][1]["brokerAddrs"] == {"2": "[::1]:10911"}
    else:
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(raw)
    assert r.broker_datas[1].select_broker_addr() == "[::1]:10911"


def test_route_tolerates_go_spelling_and_unknown_keys() -> None:
    raw = b'{"queueDatas":[{"brokerName":"b","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicSynFlag":3,"x":1}],"brokerDatas":null,"extra":{"a":[1,2]}}'
    r = TopicRouteData.decode(raw)
    assert r.queue_datas == [QueueData("b", 2, 2, 6, 3)]
    assert r.broker_datas == [] and r.filter_server_table == {}


def test_cluster_info_topic_list_kvtable() -> None:
    ci = ClusterInfo({"broker-a": BrokerData("C", "broker-a", {0: "1.1.1.1:1"})}, {"C": {"broker-a"}})
    for std in (True, False):
        assert ClusterInfo.decode(ci.encode(standard_json=std)) == ci
    assert b'"brokerAddrs":{0:"1.1.1.1:1"}' in ci.encode(standard_json=False)
    tl = TopicList({"b", "a"})
    assert tl.encode() == b'{"topicList":["a","b"]}'
    assert TopicList.decode(tl.encode()) == tl
    kv = KVTable({"k": "v"})
    assert KVTable.decode(kv.encode()) == kv


def _wrapper() -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {
            "T": TopicConfig("T", 4, 4, 6),
            "TBW102": TopicConfig("TBW102", 8, 8, 7, attributes={"+message.type": "NORMAL"}),
        },
        DataVersion(0, 1700000000000, 3),
    )


def test_register_broker_body_json_and_compressed() -> None:
    body = RegisterBrokerBody(_wrapper(), [])
    assert RegisterBrokerBody.decode(body.encode()) == body
    comp = body.encode(compressed=True)
    raw = zlib.decompress(comp)
    assert raw[4:].startswith(b'{"counter":3,"stateVersion":0,"timestamp":1700000000000}')
    assert RegisterBrokerBody.decode(comp, compressed=True) == body
    assert RegisterBrokerBody.decode(body.encode(compressed=True, version=409), compressed=True, version=409) == body
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(b"not zlib", compressed=True)
    with pytest.raises(ProtocolError):
        RegisterBrokerBody.decode(zlib.compress(raw[:10]), compressed=True)


def test_topic_config_text_form() -> None:
    tc = TopicConfig("T", 4, 2, 6, attributes={"a": "b"})
    assert tc.encode_text() == 'T 4 2 6 SINGLE_TAG {"a":"b"}'
    assert TopicConfig.decode_text(tc.encode_text()) == tc
    assert TopicConfig.decode_text("T 1 1 6 MULTI_TAG ") == TopicConfig("T", 1, 1, 6, "MULTI_TAG")
    with pytest.raises(ProtocolError):
        TopicConfig.decode_text("T 1 x 6 SINGLE_TAG")
    assert TopicConfigSerializeWrapper.decode(_wrapper().encode()) == _wrapper()


def test_data_version_bump() -> None:
    dv = DataVersion(0, 5, 1)
    nv = dv.next_version(now_ms=9)
    assert (nv.counter, nv.timestamp) == (2, 9) and nv != dv
    assert DataVersion.decode(dv.encode()) == dv


def test_subscription_build_like_filter_api() -> None:
    s = SubscriptionData.build("T", " TagA || TagB ||  ||TagA", sub_version=42)
    assert s.sub_string == " TagA || TagB ||  ||TagA"
    assert s.tags_set == {"TagA", "TagB"}
    assert s.code_set == {java_string_hash("TagA"), java_string_hash("TagB")}
    assert (s.sub_version, s.expression_type) == (42, "TAG")
    for expr in (None, "", "*"):
        star = SubscriptionData.build("T", expr)
        assert (star.sub_string, star.tags_set, star.code_set) == ("*", set(), set())
        assert star.is_sub_all
    assert SubscriptionData.build("T", "a > 1", "SQL92").expression_type == "SQL92"
    assert SubscriptionData.build("T", "a", " ").expression_type == "TAG"
    with pytest.raises(InvalidArgumentError):
        SubscriptionData.build("T", "||||")
    assert SubscriptionData.build("T", "|||").tags_set == {"|"}


def test_subscription_version_defaults_to_now() -> None:
    import time

    before = int(time.time() * 1000)
    s = SubscriptionData.build("T", "a")
    assert before <= s.sub_version <= int(time.time() * 1000)


@FAST
@given(
    st.lists(st.tuples(names, st.sets(names, max_size=3)), max_size=3),
    st.lists(names, max_size=3),
    st.integers(-(2**31), 2**31 - 1),
)
def test_heartbeat_round_trip(subs: list[tuple[str, set[str]]], producers: list[str], fp: int) -> None:
    hb = HeartbeatData(
        client_id="c@1",
        producer_data_set=[ProducerData(p) for p in producers],
        consumer_data_set=[
            ConsumerData(
                "g",
                "CONSUME_ACTIVELY",
                "BROADCASTING",
                "CONSUME_FROM_FIRST_OFFSET",
                [
                    SubscriptionData("T", "||".join(sorted(t)) or "*", t, {java_string_hash(x) for x in t}, 7)
                    for _, t in subs
                ],
                unit_mode=True,
            )
        ],
        heartbeat_fingerprint=fp,
        without_sub=True,
    )
    assert HeartbeatData.decode(hb.encode()) == hb


def test_lock_and_list_bodies() -> None:
    mq = {MessageQueue("T", "b", 1), MessageQueue("T", "a", 0)}
    req = LockBatchRequestBody("g", "c", mq, only_this_broker=True)
    assert orjson.loads(req.encode())["mqSet"][0] == {"brokerName": "a", "queueId": 0, "topic": "T"}
    assert LockBatchRequestBody.decode(req.encode()) == req
    un = UnlockBatchRequestBody("g", "c", mq)
    assert UnlockBatchRequestBody.decode(un.encode()) == un
    assert isinstance(UnlockBatchRequestBody.decode(un.encode()), UnlockBatchRequestBody)
    resp = LockBatchResponseBody(mq)
    assert LockBatchResponseBody.decode(resp.encode()) == resp
    lst = ConsumerListBody(["c1", "c2"])
    assert lst.encode() == b'{"consumerIdList":["c1","c2"]}'
    assert ConsumerListBody.decode(lst.encode()) == lst


@FAST
@given(st.dictionaries(mqs, st.tuples(*[st.integers(-(2**40), 2**40)] * 4), max_size=5), st.floats(0, 1e6))
def test_consume_stats_round_trip(table: dict[MessageQueue, tuple[int, int, int, int]], tps: float) -> None:
    cs = ConsumeStats({k: OffsetWrapper(*v) for k, v in table.items()}, tps)
    assert ConsumeStats.decode(cs.encode()) == cs


@FAST
@given(st.dictionaries(mqs, st.integers(-(2**40), 2**40), max_size=5))
def test_mq_keyed_maps_round_trip(table: dict[MessageQueue, int]) -> None:
    ts = TopicStatsTable({k: TopicOffset(v, v + 1, v + 2) for k, v in table.items()})
    assert TopicStatsTable.decode(ts.encode()) == ts
    ro = ResetOffsetBody(table)
    assert ResetOffsetBody.decode(ro.encode()) == ro
    assert ResetOffsetBody.decode(ro.encode_for_c()) == ro
    gs = GetConsumerStatusBody(table, {"c1": table})
    assert GetConsumerStatusBody.decode(gs.encode()) == gs


def test_mq_map_alternative_shapes() -> None:
    mq = MessageQueue("T", "b", 3)
    key = orjson.dumps(mq.to_json()).decode()
    string_keys = orjson.dumps({"offsetTable": {key: 5}})
    assert ResetOffsetBody.decode(string_keys).offset_table == {mq: 5}
    gson_pairs = orjson.dumps({"offsetTable": [[mq.to_json(), 6]]})
    assert ResetOffsetBody.decode(gson_pairs).offset_table == {mq: 6}
    to_string = orjson.dumps({"offsetTable": {str(mq): 7}})
    assert ResetOffsetBody.decode(to_string).offset_table == {mq: 7}
    spaced = b'{ "offsetTable" : { { "topic" : "T" , "brokerName" : "b" , "queueId" : 3 } : 8 } }'
    assert ResetOffsetBody.decode(spaced).offset_table == {mq: 8}


def test_subscription_group_config_defaults_and_round_trip() -> None:
    d = SubscriptionGroupConfig.decode(b'{"groupName":"g"}')
    assert (d.consume_enable, d.retry_queue_nums, d.retry_max_times, d.which_broker_when_consume_slowly) == (
        True,
        1,
        16,
        1,
    )
    full = SubscriptionGroupConfig(
        "g",
        consume_enable=False,
        retry_queue_nums=2,
        group_retry_policy={"type": "CUSTOMIZED"},
        subscription_data_set=[{"topic": "T"}],
        attributes={"a": "b"},
    )
    assert SubscriptionGroupConfig.decode(full.encode()) == full


def test_connection_running_info_group_list() -> None:
    cc = ConsumerConnection(
        [Connection("c1", "1.2.3.4:5", "JAVA", 409)],
        {"T": SubscriptionData("T", sub_version=1)},
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_LAST_OFFSET",
    )
    assert ConsumerConnection.decode(cc.encode()) == cc
    mq = MessageQueue("T", "b", 0)
    ri = ConsumerRunningInfo(
        {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
        [SubscriptionData("T", sub_version=1)],
        {mq: {"commitOffset": 3, "droped": False}},
        {"T": {"pullRT": 1.5}},
        None,
    )
    assert ConsumerRunningInfo.decode(ri.encode()) == ri
    assert GroupList.decode(GroupList({"a"}).encode()) == GroupList({"a"})


def test_javajson_reader_edge_cases() -> None:
    assert jj.loads(b'{0:"a",-1:"b",1.5:"c",true:1,name:2,[1,2]:3}') == {
        0: "a",
        -1: "b",
        1.5: "c",
        True: 1,
        "name": 2,
        (1, 2): 3,
    }
    k = next(iter(jj.loads('{{"a":{"b":[1]}}:1}')))
    assert isinstance(k, jj.ObjectKey) and k.to_dict() == {"a": jj.ObjectKey.of({"b": [1]})}
    assert jj.loads('{"s":"\\u00e9\\n",1:null}') == {"s": "é\n", 1: None}
    for bad in (
        b"{0:}",
        b"{",
        b'{"a" 1}',
        b"[1,]",
        b"{0:1}x",
        b"\xff{0:1}",
        b"{0:nope}",
        b"[" * 500 + b"{0:1}" + b"]" * 500,
    ):
        with pytest.raises(ProtocolError):
            jj.loads(bad)


def test_javajson_writer() -> None:
    mq = MessageQueue("T", "b", 1)
    assert (
        jj.dumps({1: "x", mq: [1, 2.5, None, True]})
        == b'{1:"x",{"brokerName":"b","queueId":1,"topic":"T"}:[1,2.5,null,true]}'
    )
    assert jj.dumps({1: "x"}, quote_non_string_keys=True) == b'{"1":"x"}'
    assert jj.loads(jj.dumps({mq: 1}, quote_non_string_keys=True)) == {'{"brokerName":"b","queueId":1,"topic":"T"}': 1}
    assert jj.dumps({"s": {3, 1, 2}}) == b'{"s":[1,2,3]}'
    assert jj.dumps("é") == '"é"'.encode()
    with pytest.raises(TypeError):
        jj.dumps(object())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=100) | st.text(alphabet='{}[]:,"0123456789-.eE tfnrua\\', max_size=60).map(str.encode))
def test_javajson_fuzz_raises_only_protocol_error(data: bytes) -> None:
    try:
        jj.loads(data)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=100))
def test_body_decoders_fuzz(data: bytes) -> None:
    for cls in (
        TopicRouteData,
        ClusterInfo,
        HeartbeatData,
        ConsumeStats,
        ResetOffsetBody,
        LockBatchRequestBody,
        RegisterBrokerBody,
    ):
        try:
            cls.decode(data)
        except ProtocolError:
            pass
    try:
        RegisterBrokerBody.decode(data, compressed=True)
    except ProtocolError:
        pass
