"""Pure broker rules: retry/DLQ decisions, delay maths, topic validation and auto-creation,
pull status mapping, tag filters, offset table JSON."""

from __future__ import annotations

import pytest

from rocketpipe.broker.offsets import ConsumerOffsets
from rocketpipe.broker.processors.pull import pull_response_code, tag_code_set
from rocketpipe.broker.processors.send import put_status_code
from rocketpipe.broker.retry import (
    decide_send_back,
    dlq_topic,
    group_of_retry_topic,
    max_reconsume_times,
    retry_send_goes_to_dlq,
    retry_topic,
)
from rocketpipe.broker.schedule import (
    clamp_level,
    delivered_properties,
    delivery_time,
    effective_deliver_at,
    parse_delay_levels,
    redirect_properties,
)
from rocketpipe.broker.topics import (
    SubscriptionGroupConfig,
    SubscriptionGroupTable,
    TopicConfig,
    TopicTable,
    validate_group,
    validate_topic,
)
from rocketpipe.errors import InvalidArgumentError
from rocketpipe.protocol.codes import ResponseCode
from rocketpipe.protocol.message import java_string_hash
from rocketpipe.store import PutStatus


def test_broker_default_delay_levels_match_java() -> None:
    levels = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
    assert len(levels) == 18
    assert levels[:4] == (1000, 5000, 10_000, 30_000)
    assert levels[-2:] == (3_600_000, 7_200_000)
    assert parse_delay_levels("1d") == (86_400_000,)
    with pytest.raises(InvalidArgumentError):
        parse_delay_levels("1x")
    with pytest.raises(InvalidArgumentError):
        parse_delay_levels("")


def test_broker_delay_due_time_and_clock_jump_guard() -> None:
    levels = parse_delay_levels("1s 5s 10s")
    assert clamp_level(7, 3) == 3
    assert delivery_time(1000, 2, levels) == 6000
    assert delivery_time(1000, 99, levels) == 11_000  # clamped to the last level
    assert effective_deliver_at(6000, now_ms=5000, level_delay_ms=5000) == 6000
    # a due time further away than one level delay means the clock jumped back: deliver now
    assert effective_deliver_at(60_000, now_ms=5000, level_delay_ms=5000) == 5000


def test_broker_schedule_properties_keep_real_topic_delay_and_wait() -> None:
    props = redirect_properties({"DELAY": "3", "TAGS": "a", "WAIT": "true"}, "T", 2)
    assert props["REAL_TOPIC"] == "T" and props["REAL_QID"] == "2" and props["TAGS"] == "a"
    # Java messageTimeup/messageTimeUp: propertiesString is built before setWaitStoreMsgOK(false)
    # and clearProperty(DELAY / TIMER_*), so the stored copy keeps every property as it was
    src = {**props, "TIMER_DELIVER_MS": "1"}
    out = delivered_properties(src)
    assert out == src and out is not src
    assert out["DELAY"] == "3" and out["WAIT"] == "true" and out["TIMER_DELIVER_MS"] == "1"
    assert out["REAL_TOPIC"] == "T" and out["REAL_QID"] == "2"


@pytest.mark.parametrize(
    ("reconsume", "level", "expected_level", "dlq"),
    [(0, 0, 3, False), (1, 0, 4, False), (15, 0, 18, False), (16, 0, 0, True), (0, 5, 5, False), (0, -1, 0, True)],
)
def test_broker_send_back_decision(reconsume: int, level: int, expected_level: int, dlq: bool) -> None:
    d = decide_send_back(
        group="g", reconsume_times=reconsume, delay_level=level, max_times=16, retry_queue_nums=1, random_int=7
    )
    assert d is not None
    assert (d.delay_level, d.is_dlq, d.reconsume_times) == (expected_level, dlq, reconsume + 1)
    assert d.topic == (dlq_topic("g") if dlq else retry_topic("g"))
    assert d.queue_id == 0


def test_broker_send_back_with_retries_disabled_drops() -> None:
    assert (
        decide_send_back(group="g", reconsume_times=0, delay_level=0, max_times=16, retry_queue_nums=0, random_int=1)
        is None
    )


def test_broker_retry_helpers() -> None:
    assert group_of_retry_topic("%RETRY%cg") == "cg"
    assert group_of_retry_topic("%RETRY%cg+T") == "cg"
    assert max_reconsume_times(3, 16, request_version=409) == 3
    assert max_reconsume_times(3, 16, request_version=100) == 16  # header honoured from V3_4_9 only
    assert max_reconsume_times(None, 16, request_version=409) == 16
    assert not retry_send_goes_to_dlq(16, 16) and retry_send_goes_to_dlq(17, 16)


def test_broker_topic_validation() -> None:
    assert validate_topic("Topic_A-1%|x") is None
    assert validate_topic("") is not None and validate_topic("   ") is not None and validate_topic(None) is not None
    assert "illegal" in (validate_topic("a b") or "")
    assert "illegal" in (validate_topic("a/b") or "")
    assert validate_topic("t" * 127) is None
    assert "longer" in (validate_topic("t" * 128) or "")
    assert validate_topic("%RETRY%" + "g" * 200) is None
    assert validate_group("g" * 120) is None and validate_group("g" * 121) is not None


def test_broker_auto_create_from_tbw102_follows_template_rules() -> None:
    t = TopicTable(broker_name="b", cluster_name="c", default_topic_queue_nums=8)
    t.create_system_topics(1)
    tbw = t.get("TBW102")
    assert tbw is not None and tbw.perm == 7 and tbw.write_queue_nums == 8
    v0 = t.data_version.counter
    tc = t.create_in_send("New", "TBW102", 4, 0, 2)
    assert tc == TopicConfig("New", 4, 4, 6)
    assert t.data_version.counter == v0 + 1 and t.dirty
    assert t.create_in_send("Big", "TBW102", 100, 0, 3).read_queue_nums == 8  # type: ignore[union-attr]
    assert t.create_in_send("X", "NoTemplate", 4, 0, 3) is None
    t.put(TopicConfig("NoInherit", 4, 4, 6), 4)
    assert t.create_in_send("Y", "NoInherit", 4, 0, 5) is None
    off = TopicTable(broker_name="b", cluster_name="c", auto_create_topic_enable=False)
    off.create_system_topics(1)
    assert off.get("TBW102") is None
    assert off.create_in_send("Z", "TBW102", 4, 0, 2) is None


def test_broker_topic_table_json_round_trip_and_identical_put_is_noop() -> None:
    t = TopicTable(broker_name="b", cluster_name="c")
    t.create_system_topics(1)
    assert t.put(TopicConfig("A", 2, 3, 4, "MULTI_TAG", 1, True), 5)
    assert not t.put(TopicConfig("A", 2, 3, 4, "MULTI_TAG", 1, True), 6)
    t2 = TopicTable(broker_name="b", cluster_name="c")
    t2.load_json(t.to_json())
    assert t2.get("A") == TopicConfig("A", 2, 3, 4, "MULTI_TAG", 1, True)
    assert t2.data_version.counter > t.data_version.counter - 1
    t2.load_json({"topicConfigTable": {"bad": {"readQueueNums": "x"}}})  # malformed: skipped
    assert t2.get("bad") is None


def test_broker_subscription_groups_auto_create_and_round_trip() -> None:
    g = SubscriptionGroupTable()
    cfg = g.find("cg")
    assert cfg == SubscriptionGroupConfig("cg") and cfg.retry_max_times == 16 and cfg.retry_queue_nums == 1
    assert g.find("bad group") is None
    assert SubscriptionGroupTable(auto_create=False).find("cg") is None
    g.put(SubscriptionGroupConfig("x", consume_enable=False, retry_max_times=3))
    j = g.to_json()
    assert j["subscriptionGroupTable"]["x"]["consumeEnable"] is False
    g2 = SubscriptionGroupTable()
    g2.load_json(j)
    assert g2.groups["x"].retry_max_times == 3 and not g2.groups["x"].consume_enable


@pytest.mark.parametrize(
    ("status", "offset", "code"),
    [
        ("FOUND", 5, ResponseCode.SUCCESS),
        ("NO_MATCHED_MESSAGE", 5, ResponseCode.PULL_RETRY_IMMEDIATELY),
        ("MESSAGE_WAS_REMOVING", 5, ResponseCode.PULL_RETRY_IMMEDIATELY),
        ("NO_MATCHED_LOGIC_QUEUE", 0, ResponseCode.PULL_NOT_FOUND),
        ("NO_MATCHED_LOGIC_QUEUE", 3, ResponseCode.PULL_OFFSET_MOVED),
        ("NO_MESSAGE_IN_QUEUE", 0, ResponseCode.PULL_NOT_FOUND),
        ("NO_MESSAGE_IN_QUEUE", 3, ResponseCode.PULL_OFFSET_MOVED),
        ("OFFSET_FOUND_NULL", 3, ResponseCode.PULL_NOT_FOUND),
        ("OFFSET_OVERFLOW_ONE", 3, ResponseCode.PULL_NOT_FOUND),
        ("OFFSET_OVERFLOW_BADLY", 3, ResponseCode.PULL_OFFSET_MOVED),
        ("OFFSET_TOO_SMALL", 3, ResponseCode.PULL_OFFSET_MOVED),
    ],
)
def test_broker_pull_status_table(status: str, offset: int, code: ResponseCode) -> None:
    assert pull_response_code(status, offset) == code


def test_broker_put_status_mapping() -> None:
    assert put_status_code(PutStatus.PUT_OK) == ResponseCode.SUCCESS
    assert put_status_code(PutStatus.FLUSH_DISK_TIMEOUT) == ResponseCode.FLUSH_DISK_TIMEOUT
    assert put_status_code(PutStatus.PROPERTIES_SIZE_EXCEEDED) == ResponseCode.MESSAGE_ILLEGAL
    assert put_status_code(PutStatus.OS_PAGE_CACHE_BUSY) == ResponseCode.SYSTEM_BUSY
    assert put_status_code(PutStatus.CREATE_MAPPED_FILE_FAILED) == ResponseCode.SYSTEM_ERROR


def test_broker_tag_code_sets_follow_filter_api() -> None:
    assert tag_code_set(None) is None and tag_code_set("*") is None and tag_code_set("  ") is None
    assert tag_code_set("TagA || TagB") == frozenset({2598919, 2598920})
    assert tag_code_set("TagA||TagB") == tag_code_set(" TagB ||TagA||")
    assert tag_code_set("Hello World") == frozenset({java_string_hash("Hello World")})


def test_broker_consumer_offsets_table() -> None:
    o = ConsumerOffsets()
    assert o.query("g", "T", 0) == -1
    o.commit("g", "T", 0, 5)
    o.commit("g", "T", 0, 3)  # overwrite unconditionally, even backwards
    o.commit("g", "U", 1, 9)
    o.commit("h", "T", 2, 1)
    assert o.query("g", "T", 0) == 3 and o.dirty
    assert o.topics_of_group("g") == ["T", "U"] and o.groups_of_topic("T") == ["g", "h"]
    j = o.to_json()
    assert j == {"offsetTable": {"T@g": {"0": 3}, "T@h": {"2": 1}, "U@g": {"1": 9}}}
    o2 = ConsumerOffsets()
    o2.load_json(j)
    assert o2.query("g", "U", 1) == 9 and not o2.dirty
    o2.load_json({"offsetTable": {"nokey": {"0": 1}, "T@g": {"x": 1, "1": "2"}}})
    assert o2.query("g", "T", 1) == 2 and o2.queue_offsets("g", "T") == {1: 2}


def test_broker_stats_tps_windows_follow_store_stats_service() -> None:
    from rocketpipe.broker.stats import BrokerStats, format_runtime, is_system_topic

    st = BrokerStats(boot_ms=0)
    assert st.put_tps() == "  "  # no samples: every window empty, as StoreStatsService.getPutTps
    st.sample(0)
    for t in range(1, 11):
        st.on_put("T", 2, 100)
        st.on_get("T", 1)
        st.sample(t * 1000)
    assert st.put_tps() == "2.0  "  # 10 s window only: 20 puts in 10 s
    assert st.get_transferred_tps() == "1.0  "
    for t in range(11, 70):
        st.sample(t * 1000)
    assert st.put_tps().split(" ")[0] == "0.0" and st.put_tps().split(" ")[1] == repr(
        (20 - 18) / 60_000 * 1000
    )  # samples t=9 s .. t=69 s
    assert (st.put_times_total, st.put_size_total, st.put_nums, st.get_nums) == (20, 1000, 20, 10)
    st.on_put("SCHEDULE_TOPIC_XXXX", 1, 10)
    st.on_put("%RETRY%g", 1, 10)
    st.on_put("T", 1, 10, counted=False)  # a scheduled delivery
    st.on_get("rmq_sys_x", 1)
    assert (st.put_times_total, st.put_nums, st.get_transferred, st.get_nums) == (23, 20, 11, 10)
    assert is_system_topic("TBW102") and is_system_topic("%DLQ%g") and not is_system_topic("TopicA")
    assert format_runtime(((2 * 24 + 3) * 60 + 4) * 60_000 + 5_999) == "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"


def test_broker_runtime_info_helpers_follow_mixall_and_utilall(tmp_path) -> None:
    from rocketpipe.broker.processors.admin import human_readable_bytes
    from rocketpipe.store.disk import disk_partition_used_ratio as disk_used_ratio

    assert human_readable_bytes(0) == "0 B" and human_readable_bytes(1023) == "1023 B"
    assert human_readable_bytes(1536) == "1.5 KiB" and human_readable_bytes(3 * 1024**3) == "3.0 GiB"
    assert 0.0 <= disk_used_ratio(str(tmp_path)) <= 1.0
    assert disk_used_ratio(str(tmp_path / "missing")) == -1.0


def test_broker_system_topics_are_javas() -> None:
    t = TopicTable(broker_name="broker-a", cluster_name="DefaultCluster", trace_topic="RMQ_SYS_TRACE_TOPIC")
    t.create_system_topics(1)
    got = {name: (tc.read_queue_nums, tc.write_queue_nums, tc.perm) for name, tc in t.topics.items()}
    assert got == {  # TopicConfigManager.init of 5.3.3, default BrokerConfig (+ traceTopicEnable)
        "SELF_TEST_TOPIC": (1, 1, 6),
        "TBW102": (8, 8, 7),
        "BenchmarkTest": (1024, 1024, 6),
        "DefaultCluster": (16, 16, 7),
        "broker-a": (1, 1, 7),
        "OFFSET_MOVED_EVENT": (1, 1, 6),
        "SCHEDULE_TOPIC_XXXX": (18, 18, 6),
        "RMQ_SYS_TRACE_TOPIC": (1, 1, 6),
        "DefaultCluster_REPLY_TOPIC": (1, 1, 6),
        "rmq_sys_REVIVE_LOG_DefaultCluster": (8, 8, 6),
        "rmq_sys_SYNC_BROKER_MEMBER_broker-a": (1, 1, 1),
        "RMQ_SYS_TRANS_HALF_TOPIC": (1, 1, 6),
        "RMQ_SYS_TRANS_OP_HALF_TOPIC": (1, 1, 6),
        "rmq_sys_wheel_timer": (1, 1, 6),
    }
    plain = TopicTable(broker_name="b", cluster_name="c", auto_create_topic_enable=False, timer_wheel_enable=False)
    plain.create_system_topics(1)
    assert not {"TBW102", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_wheel_timer"} & set(plain.topics)
