"""The gRPC endpoint's pure consumer parts: the PushConsumer's assignments, the merged
subscription settings (the group's retry policy), and the receive filter (tag, TO_DLQ)."""

from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as pb

from rocketpipe.protocol.bodies.admin import SubscriptionGroupConfig
from rocketpipe.protocol.bodies.heartbeat import SubscriptionData
from rocketpipe.protocol.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketpipe.protocol.message import MessageExt
from rocketpipe.proxy.consumer import FilterResult, filter_message, subscription_settings
from rocketpipe.proxy.route import assignments, permission_of

TOPIC = pb.Resource(name="T")
ENDS = pb.Endpoints(addresses=[pb.Address(host="127.0.0.1", port=8081)])


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData("broker-a", read_queue_nums=3, write_queue_nums=2, perm=6),
            QueueData("broker-b", 2, 2, 2),  # write-only: not assigned
            QueueData("broker-c", 0, 2, 6),  # no read queue: not assigned
            QueueData("broker-d", 2, 2, 4),
            QueueData("broker-e", 2, 2, 6),  # slave only: no master, not assigned
        ],
        broker_datas=[
            BrokerData("c", "broker-a", {0: "h:1", 1: "h:11"}),
            BrokerData("c", "broker-b", {0: "h:2"}),
            BrokerData("c", "broker-c", {0: "h:3"}),
            BrokerData("c", "broker-d", {0: "h:4"}),
            BrokerData("c", "broker-e", {1: "h:5"}),
        ],
    )


def test_assignments_give_one_pop_queue_per_readable_master_at_the_endpoint() -> None:
    got = [a.message_queue for a in assignments(_route(), TOPIC, ENDS, fifo=False)]
    assert [(q.broker.name, q.id, q.permission) for q in got] == [
        ("broker-a", -1, pb.Permission.READ_WRITE),
        ("broker-d", -1, pb.Permission.READ),
    ]
    assert all(q.broker.id == 0 and q.broker.endpoints == ENDS and q.topic == TOPIC for q in got)


def test_assignments_of_an_orderly_group_list_every_read_queue() -> None:
    got = [a.message_queue for a in assignments(_route(), TOPIC, ENDS, fifo=True)]
    assert [(q.broker.name, q.id) for q in got] == [("broker-a", 0), ("broker-a", 1), ("broker-a", 2),
                                                    ("broker-d", 0), ("broker-d", 1)]  # fmt: skip


def test_permission_conversion() -> None:
    assert [permission_of(p) for p in (6, 4, 2, 0)] == [
        pb.Permission.READ_WRITE,
        pb.Permission.READ,
        pb.Permission.WRITE,
        pb.Permission.NONE,
    ]


def _client() -> pb.Settings:
    return pb.Settings(client_type=pb.ClientType.PUSH_CONSUMER, subscription=pb.Subscription(group=TOPIC))


def test_settings_without_a_group_config_use_java_defaults() -> None:
    s = subscription_settings(_client())
    assert s.backoff_policy.max_attempts == 17
    assert [d.seconds for d in s.backoff_policy.customized_backoff.next][:4] == [1, 5, 10, 30]
    assert len(s.backoff_policy.customized_backoff.next) == 18
    assert s.subscription.receive_batch_size == 32 and s.subscription.long_polling_timeout.seconds == 20
    assert not s.subscription.fifo and not s.metric.on


def test_settings_take_the_groups_retry_times_order_and_customized_delays() -> None:
    group = SubscriptionGroupConfig(
        "g",
        retry_max_times=3,
        consume_message_orderly=True,
        group_retry_policy={"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [2000, 4000]}},
    )
    s = subscription_settings(_client(), group)
    assert s.backoff_policy.max_attempts == 4 and s.subscription.fifo
    assert [d.seconds for d in s.backoff_policy.customized_backoff.next] == [2, 4]


def test_settings_take_the_groups_exponential_policy() -> None:
    policy = {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 1500, "max": 60000, "multiplier": 3}}
    s = subscription_settings(_client(), SubscriptionGroupConfig("g", group_retry_policy=policy))
    eb = s.backoff_policy.exponential_backoff
    assert s.backoff_policy.WhichOneof("strategy") == "exponential_backoff"
    assert (eb.initial.ToMilliseconds(), eb.max.ToMilliseconds(), eb.multiplier) == (1500, 60000, 3.0)
    defaults = subscription_settings(
        _client(), SubscriptionGroupConfig("g", group_retry_policy={"type": "EXPONENTIAL"})
    )
    eb = defaults.backoff_policy.exponential_backoff  # ExponentialRetryPolicy's defaults
    assert (eb.initial.ToMilliseconds(), eb.max.ToMilliseconds(), eb.multiplier) == (5000, 7_200_000, 2.0)


def _msg(tag: str, reconsume: int) -> MessageExt:
    m = MessageExt(topic="T", body=b"", properties={"TAGS": tag})
    m.reconsume_times = reconsume
    return m


def test_filter_drops_other_tags_and_dead_letters_past_max_attempts() -> None:
    sub = SubscriptionData.build("T", "A || B")
    assert filter_message(sub, _msg("C", 0), 3) is FilterResult.NO_MATCH
    assert filter_message(sub, _msg("C", 5), 3) is FilterResult.NO_MATCH  # the tag is checked first
    assert filter_message(sub, _msg("A", 2), 3) is FilterResult.MATCH
    assert filter_message(sub, _msg("B", 3), 3) is FilterResult.TO_DLQ
    assert filter_message(SubscriptionData.build("T", "*"), _msg("Z", 0), 1) is FilterResult.MATCH
