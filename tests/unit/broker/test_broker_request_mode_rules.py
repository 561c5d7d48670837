"""Pure rules of server-side assignment (rocketpipe.broker.request_mode).

Expected values follow ``QueryAssignmentProcessor.doLoadBalance`` / ``allocate4Pop`` and
``QueryAssignmentProcessorTest`` of apache/rocketmq; the two strategies are checked against the
client's own implementations (``rocketpipe.client.consumer.allocate``).
"""

from __future__ import annotations

import doctest
import itertools

import pytest

from rocketpipe.broker import request_mode as rm
from rocketpipe.client.consumer.allocate import allocate_averagely, allocate_averagely_by_circle
from rocketpipe.protocol.bodies.assignment import MessageModel, MessageRequestMode, SetMessageRequestModeRequestBody
from rocketpipe.protocol.message import MessageQueue

POP = MessageRequestMode.POP
PULL = MessageRequestMode.PULL


def qs(n: int, topic: str = "T", broker: str = "b") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def mode(m: MessageRequestMode, share: int = 0) -> SetMessageRequestModeRequestBody:
    return SetMessageRequestModeRequestBody("T", "g", m, share)


def lb(
    client: str,
    cids: list[str] | None,
    mqs: set[MessageQueue] | None,
    m: SetMessageRequestModeRequestBody,
    **kw: object,
) -> set[MessageQueue] | None:
    args: dict[str, object] = {
        "topic": "T",
        "group": "g",
        "client_id": client,
        "message_model": MessageModel.CLUSTERING,
        "strategy_name": "AVG",
        "mode": m,
        "mq_set": mqs,
        "cid_all": cids,
        "broker_name": "b",
    }
    args.update(kw)
    return rm.do_load_balance(**args)  # type: ignore[arg-type]


def test_doctests() -> None:
    assert doctest.testmod(rm).failed == 0


@pytest.mark.parametrize(("n_q", "n_c"), list(itertools.product(range(1, 10), range(1, 6))))
def test_strategies_match_the_client_ones(n_q: int, n_c: int) -> None:
    mqs, cids = qs(n_q), [f"c{i}" for i in range(n_c)]
    for cid in cids:
        assert rm.allocate_averagely("g", cid, mqs, cids) == allocate_averagely("g", cid, mqs, cids)
        assert rm.allocate_averagely_by_circle("g", cid, mqs, cids) == allocate_averagely_by_circle("g", cid, mqs, cids)
    # every queue to exactly one client
    for strategy in rm.STRATEGIES.values():
        got = [q for cid in cids for q in strategy("g", cid, mqs, cids)]
        assert sorted(got) == mqs


def test_strategy_argument_checks() -> None:
    assert rm.allocate_averagely("g", "x", qs(2), ["a"]) == []  # not a member: nothing
    for args in (("", qs(2), ["a"]), ("a", [], ["a"]), ("a", qs(2), [])):
        with pytest.raises(ValueError):
            rm.allocate_averagely("g", *args)  # type: ignore[arg-type]


def test_pull_mode_uses_the_named_strategy() -> None:
    mqs, cids = set(qs(8)), ["c2", "c0", "c1"]  # sorted by the processor
    assert lb("c0", cids, mqs, mode(PULL)) == set(qs(8)[0:3])
    assert lb("c2", cids, mqs, mode(PULL)) == set(qs(8)[6:8])
    assert lb("c1", cids, mqs, mode(PULL), strategy_name="AVG_BY_CIRCLE") == {qs(8)[i] for i in (1, 4, 7)}


def test_no_valid_result_is_none() -> None:
    mqs = set(qs(4))
    assert lb("c0", ["c0"], None, mode(PULL)) is None  # unknown topic
    assert lb("c0", None, mqs, mode(PULL)) is None  # no consumer in the group
    assert lb("c0", ["c0"], mqs, mode(PULL), strategy_name="CONSISTENT_HASH") is None  # not registered by the broker
    assert lb("c0", ["c0"], set(), mode(PULL)) is None  # the strategy throws on no queues
    assert lb("", ["c0"], mqs, mode(PULL)) is None  # ... and on a blank client id
    assert lb("stranger", ["c0"], mqs, mode(PULL)) == set()  # not in the group: release everything


def test_broadcasting_lmq_and_disabled_balancer() -> None:
    mqs = set(qs(4))
    assert lb("x", None, mqs, mode(PULL), message_model=MessageModel.BROADCASTING) == mqs
    assert lb("x", None, None, mode(PULL), message_model=MessageModel.BROADCASTING) is None
    assert lb("c0", ["c0", "c1"], mqs, mode(PULL), server_load_balancer_enable=False) == mqs
    assert lb("c0", ["c0"], None, mode(PULL), topic="%LMQ%x") == {MessageQueue("%LMQ%x", "b", 0)}


def test_pop_share_all_queues_as_minus_one() -> None:
    two_brokers = set(qs(4)) | set(qs(2, broker="b2"))
    expected = {MessageQueue("T", "b", -1), MessageQueue("T", "b2", -1)}
    assert lb("c0", ["c0"], two_brokers, mode(POP, 0)) == expected
    assert lb("c0", ["c0", "c1", "c2"], two_brokers, mode(POP, -1)) == expected
    assert lb("c0", ["c0", "c1", "c2"], two_brokers, mode(POP, 2)) == expected  # 2 >= 3 - 1
    assert lb("stranger", ["c0"], two_brokers, mode(POP, 0)) == expected  # no membership check there


def test_pop_share_following_clients() -> None:
    mqs, cids = qs(8), ["c0", "c1", "c2", "c3"]
    # popShareQueueNum 1 of 4 clients: own share + the next client's (wrapping)
    assert lb("c0", cids, set(mqs), mode(POP, 1)) == set(mqs[0:4])
    assert lb("c3", cids, set(mqs), mode(POP, 1)) == set(mqs[6:8] + mqs[0:2])
    assert lb("c1", cids, set(mqs), mode(POP, 2)) == set(mqs[2:8])
    # more clients than queues: one queue each, by index
    many = [f"c{i}" for i in range(6)]
    assert [lb(c, many, set(qs(4)), mode(POP, 1)) for c in many] == [{qs(4)[i % 4]} for i in range(6)]
    assert lb("stranger", many, set(qs(4)), mode(POP, 1)) == set()


def test_effective_mode_and_table_persistence_form() -> None:
    cfg = rm.AssignmentConfig()
    table = rm.RequestModeTable()
    assert rm.effective_mode(table, "T", "g", cfg) == SetMessageRequestModeRequestBody("T", "g", PULL, 0)
    pop_default = rm.AssignmentConfig(default_message_request_mode=POP)
    assert rm.effective_mode(table, "T", "g", pop_default) == SetMessageRequestModeRequestBody("T", "g", POP, -1)
    assert rm.effective_mode(table, "%RETRY%g", "g", pop_default).mode is PULL
    body = SetMessageRequestModeRequestBody("T", "g", POP, 3)
    table.set("T", "g", body)
    assert table.dirty and rm.effective_mode(table, "T", "g", cfg) is body
    assert table.to_json() == {
        "messageRequestModeMap": {
            "T": {"g": {"consumerGroup": "g", "mode": "POP", "popShareQueueNum": 3, "topic": "T"}}
        }
    }
    again = rm.RequestModeTable()
    again.load_json(table.to_json())
    assert again.as_map() == table.as_map()
    # malformed entries are skipped, the rest kept
    again.load_json(
        {"messageRequestModeMap": {"T": {"g": {"mode": "PUSH"}, "h": {"topic": "T", "mode": "POP"}}, "U": 5}}
    )
    assert again.as_map() == {"T": {"h": SetMessageRequestModeRequestBody("T", None, POP, 0)}}
    again.load_json(None)
    assert again.as_map() == {}
