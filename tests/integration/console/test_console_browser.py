"""The web console in a real browser (headless Debian chromium through selenium) against a real
embedded cluster: topic page (queues, offsets, rate chart), a group's lag and offset reset, key
search, DLQ resend, and write actions refused by a read-only console.

The cluster, the consoles (uvicorn, 127.0.0.1, free ports) and the test clients live on an event
loop in a background thread, because selenium blocks. Screenshots go to ``out/console/``.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from rocketpipe.cli.loop_thread import LoopThread
from rocketpipe.client import (
    Admin,
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpipe.console import ConsoleHandle, start_console
from rocketpipe.testing.cluster import LocalCluster, create_topic_on_brokers, local_cluster
from waiting import wait_until

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]
SHOTS = ROOT / "out" / "console"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 30.0
# every delay level 1 s: a RECONSUME_LATER comes back after 1 s, so a message reaches the DLQ fast
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)


@dataclass
class Env:
    """The running cluster, the two consoles and a producer, on ``loop``'s thread."""

    loop: LoopThread
    cluster: LocalCluster
    rw: ConsoleHandle  # --allow-writes
    ro: ConsoleHandle  # read-only
    producer: Producer
    admin: Admin
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.loop.run(coro, timeout)

    def client_config(self, **kw: Any) -> ClientConfig:
        return ClientConfig(namesrv_addr=self.cluster.namesrv_addr, **kw)

    async def send(self, topic: str, body: str, **kw: Any) -> Any:
        return await self.producer.send(Message.build(topic, body, **kw))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    store = tmp_path_factory.mktemp("console-broker")
    with LoopThread("console-test-loop") as loop:

        async def start() -> Env:
            stack = AsyncExitStack()
            cluster = await stack.enter_async_context(
                local_cluster(store, message_delay_level=FAST_DELAY_LEVELS, mapped_file_size_commit_log=8 << 20)
            )
            rw = await start_console("127.0.0.1", 0, cluster.namesrv_addr, allow_writes=True)
            stack.push_async_callback(rw.close)
            ro = await start_console("127.0.0.1", 0, cluster.namesrv_addr)
            stack.push_async_callback(ro.close)
            producer = await stack.enter_async_context(
                # frequent heartbeats: the producers page finds it soon after its first send
                Producer(
                    "console-test-pg",
                    config=ClientConfig(namesrv_addr=cluster.namesrv_addr, heartbeat_broker_interval=0.5),
                )
            )
            admin = await stack.enter_async_context(Admin(cluster.namesrv_addr))
            return Env(loop, cluster, rw, ro, producer, admin, stack)

        e = loop.run(start(), 60)
        try:
            yield e
        finally:
            loop.run(e.stack.aclose(), 60)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    assert shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER), "Debian's chromium and chromium-driver are needed"
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: WebDriver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"{name}.png"))


def until(driver: WebDriver, cond: Callable[[WebDriver], Any], what: str, timeout: float = WAIT) -> Any:
    return WebDriverWait(driver, timeout).until(cond, f"waiting for {what}")


def text_of(driver: WebDriver, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def create_topic(env: Env, topic: str, queues: int) -> None:
    env.run(create_topic_on_brokers(env.cluster.namesrv_addr, topic, queues, env.cluster.broker_addrs))


# ---------------------------------------------------------------------------------------------


def test_cluster_and_topic_pages_show_brokers_queues_and_offsets(env: Env, browser: WebDriver) -> None:
    d = browser
    d.get(env.rw.url + "/cluster")
    row = d.find_element(By.CSS_SELECTOR, "#brokers tr.broker")
    assert row.find_element(By.CSS_SELECTOR, "td.addr").text == env.cluster.broker_addr
    assert row.find_element(By.CSS_SELECTOR, "td.flush").text == "ASYNC_FLUSH"
    assert row.find_element(By.CSS_SELECTOR, "td.disk").text.endswith("%")
    assert row.find_element(By.CSS_SELECTOR, "td.version").text.startswith("V")
    # the TPS chart polls /api/cluster (the brokers' put / get TPS) and draws what it got
    until(d, lambda d: d.find_element(By.ID, "tps-chart").get_attribute("data-last"), "the TPS chart's first read")
    shot(d, "cluster")

    # create a topic through the console's form
    d.find_element(By.ID, "nav-topics").click()
    d.find_element(By.ID, "new-topic").send_keys("ConsoleTopic")
    q = d.find_element(By.ID, "new-queues")
    q.clear()
    q.send_keys("3")
    d.find_element(By.ID, "create-topic-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "topic-name"), "the topic page")
    assert text_of(d, "#topic-name") == "ConsoleTopic"
    assert len(d.find_elements(By.CSS_SELECTOR, "#queues tr.queue")) == 3
    assert {e.text for e in d.find_elements(By.CSS_SELECTOR, "#queues td.max")} == {"0"}

    env.run(wait_until(lambda: _routed(env, "ConsoleTopic", 3), timeout=WAIT, what="route of ConsoleTopic"))
    chart = d.find_element(By.ID, "topic-tps-chart")
    until(d, lambda d: chart.get_attribute("data-total") == "0", "the rate chart's first read")
    for i in range(7):
        env.run(env.send("ConsoleTopic", f"body {i}"))
    # the rate chart reads the offsets by itself: its next read sees 7 more messages, a rate > 0
    until(d, lambda d: chart.get_attribute("data-total") == "7", "the rate chart's total")
    assert float(chart.get_attribute("data-last") or "0") > 0
    shot(d, "topic-rate")
    d.refresh()
    shown = {
        int(r.find_element(By.CSS_SELECTOR, "td.qid").text): int(r.find_element(By.CSS_SELECTOR, "td.max").text)
        for r in d.find_elements(By.CSS_SELECTOR, "#queues tr.queue")
    }
    stats = env.run(env.admin.examine_topic_stats("ConsoleTopic"))
    assert shown == {mq.queue_id: off.max_offset for mq, off in stats.offset_table.items()}
    assert sum(shown.values()) == 7 and text_of(d, "#total-messages") == "7"
    shot(d, "topic")

    # the topics list links to it
    d.get(env.rw.url + "/topics")
    next(a for a in d.find_elements(By.CSS_SELECTOR, "a.topic-link") if a.text == "ConsoleTopic").click()
    until(d, lambda d: d.find_elements(By.ID, "topic-name"), "the topic page from the list")
    assert text_of(d, "#topic-name") == "ConsoleTopic" and text_of(d, "#total-messages") == "7"

    # send one from the page; the topic page then counts 8
    d.find_element(By.ID, "send-keys").send_keys("from-console")
    d.find_element(By.ID, "send-body").send_keys("sent by the console")
    d.find_element(By.ID, "send-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "done"), "the send result")
    assert text_of(d, "#done").startswith("msg id ")
    d.find_element(By.ID, "done-link").click()
    until(d, lambda d: d.find_elements(By.ID, "total-messages"), "the topic page")
    assert text_of(d, "#total-messages") == "8"


async def _routed(env: Env, topic: str, queues: int) -> bool:
    try:
        return len(await env.admin.topic_queues(topic)) == queues
    except Exception:
        return False


async def _lag(env: Env, group: str, topic: str) -> tuple[int, int]:
    """(sum of broker offsets, sum of consumer offsets) of ``group`` on ``topic``."""
    try:
        cs = await env.admin.examine_consume_stats(group, topic)
    except Exception:
        return -1, -1
    rows = [w for mq, w in cs.offset_table.items() if mq.topic == topic]
    return sum(w.broker_offset for w in rows), sum(w.consumer_offset for w in rows)


def test_group_page_shows_members_and_lag_then_resets_offset(env: Env, browser: WebDriver) -> None:
    d = browser
    topic, group = "LagTopic", "lag-group"
    create_topic(env, topic, 2)
    consumed: list[str] = []
    gate = {"blocking": False}
    release = asyncio.Event()  # used only on the loop thread

    async def start() -> PushConsumer:
        c = PushConsumer(
            group,
            config=env.client_config(persist_consumer_offset_interval=0.2),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        c.subscribe(topic, "*")

        async def on_messages(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            if gate["blocking"]:
                await release.wait()
            consumed.extend(m.body.decode() for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        c.register_message_listener(on_messages)
        await c.start()
        return c

    consumer = env.run(start())
    try:
        for i in range(10):
            env.run(env.send(topic, f"m{i}"))
        env.run(wait_until(lambda: len(consumed) == 10, timeout=WAIT, what="10 consumed"))
        env.run(wait_until(lambda: _lag_is(env, group, topic, (10, 10)), timeout=WAIT, what="offsets committed"))
        gate["blocking"] = True  # the next messages stay in the listener: consumed, not committed
        for i in range(10, 16):
            env.run(env.send(topic, f"m{i}"))
        env.run(wait_until(lambda: _lag_is(env, group, topic, (16, 10)), timeout=WAIT, what="16 produced"))
        produced = 16

        d.get(env.rw.url + "/groups")
        until(d, lambda d: group in [a.text for a in d.find_elements(By.CSS_SELECTOR, "a.group-link")], "group list")
        row = d.find_element(By.CSS_SELECTOR, f'#groups tr.group[data-group="{group}"]')
        assert row.find_element(By.CSS_SELECTOR, "td.lag").text == "6"
        assert row.find_element(By.CSS_SELECTOR, "td.members").text == "1"
        row.find_element(By.CSS_SELECTOR, "a.group-link").click()
        until(d, lambda d: d.find_elements(By.ID, "total-lag"), "the group page")
        lag_cells = [
            int(r.find_element(By.CSS_SELECTOR, "td.lag").text)
            for r in d.find_elements(By.CSS_SELECTOR, "#lag tr.lag-row")
            if r.find_element(By.CSS_SELECTOR, "td").text == topic
        ]
        assert len(lag_cells) == 2
        assert sum(lag_cells) == produced - len(consumed) == 6
        assert int(text_of(d, "#total-lag")) == 6  # the retry topic has no backlog
        members = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#members tr.member")]
        assert len(members) == 1 and consumer.client_id in members[0]
        assert text_of(d, "#message-model") == "CLUSTERING"
        assert text_of(d, "#consume-type") == "CONSUME_PASSIVELY"
        # the members' own TPS figures: 10 acknowledged within the last minute
        chart = d.find_element(By.ID, "group-tps-chart")
        until(d, lambda d: "consume_ok=" in (chart.get_attribute("data-last") or ""), "the consumer TPS chart")
        ok = dict(kv.split("=") for kv in (chart.get_attribute("data-last") or "").split())
        assert float(ok["consume_ok"]) > 0 and float(ok["pull"]) > 0
        shot(d, "group")
        d.find_element(By.CSS_SELECTOR, "a.client-link").click()
        until(d, lambda d: d.find_elements(By.ID, "client-id"), "the client page")
        assert text_of(d, "#client-id") == consumer.client_id
        status = {
            r.find_element(By.CSS_SELECTOR, "td").text: float(r.find_element(By.CSS_SELECTOR, "td.ok-tps").text)
            for r in d.find_elements(By.CSS_SELECTOR, "#client-status tr.status")
        }
        assert status[topic] > 0
        assert (
            len([r for r in d.find_elements(By.CSS_SELECTOR, "#client-queues tr.client-queue") if topic in r.text]) == 2
        )
        shot(d, "client")
        d.back()
    finally:
        env.loop.loop.call_soon_threadsafe(release.set)
        env.run(wait_until(lambda: _lag_is(env, group, topic, (16, 16)), timeout=WAIT, what="all committed"))
        env.run(consumer.close())

    # reset by time (epoch 0 = the first message) from the group page: the whole topic is lag again
    d.refresh()
    assert int(text_of(d, "#total-lag")) == 0
    t = d.find_element(By.ID, "reset-time")
    t.clear()
    t.send_keys("0")
    assert d.find_element(By.ID, "reset-topic").get_attribute("value") == topic
    d.find_element(By.ID, "reset-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "done"), "the reset page")
    d.get(env.rw.url + f"/groups/{group}")
    assert int(text_of(d, "#total-lag")) == 16

    # consume mode (5.x SET_MESSAGE_REQUEST_MODE), read back with GET_ALL_MESSAGE_REQUEST_MODE
    assert d.find_elements(By.CSS_SELECTOR, "#modes tr.mode-row") == []
    Select(d.find_element(By.ID, "mode-select")).select_by_value("POP")
    d.find_element(By.ID, "mode-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "done-link"), "the mode change")
    d.find_element(By.ID, "done-link").click()
    until(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#modes tr.mode-row"), "the mode table")
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#modes tr.mode-row")]
    assert rows == [f"{topic} POP 0 {env.cluster.broker_addr}"]


async def _lag_is(env: Env, group: str, topic: str, want: tuple[int, int]) -> bool:
    return await _lag(env, group, topic) == want


def test_key_search_finds_the_message(env: Env, browser: WebDriver) -> None:
    d = browser
    create_topic(env, "SearchTopic", 2)
    env.run(env.send("SearchTopic", "not this one", keys=["order-41"]))
    sent = env.run(env.send("SearchTopic", "the answer is 42", keys=["order-42"], tags="paid"))
    d.get(env.rw.url + "/messages")
    d.find_element(By.ID, "search-topic").send_keys("SearchTopic")
    Select(d.find_element(By.ID, "search-mode")).select_by_value("key")
    d.find_element(By.ID, "search-key").send_keys("order-42")

    d.find_element(By.ID, "search-btn").click()
    until(d, lambda d: "key=order-42" in d.current_url, "the form's GET to load")

    def found(d: WebDriver) -> list[Any]:
        # The key index is written behind the put: search again by reloading the submitted GET
        # (refresh waits for the page; clicking again could read the old page mid-navigation).
        rows = d.find_elements(By.CSS_SELECTOR, "#results tr.message")
        if not rows:
            d.refresh()
        return rows

    rows = until(d, found, "the key search to find the message")
    assert len(rows) == 1
    assert rows[0].find_element(By.CSS_SELECTOR, "td.body").text == "the answer is 42"
    assert rows[0].find_element(By.CSS_SELECTOR, "td.keys").text == "order-42"
    shot(d, "search")
    rows[0].find_element(By.CSS_SELECTOR, "a.msg-link").click()
    until(d, lambda d: d.find_elements(By.ID, "message-id"), "the message page")
    assert text_of(d, "#message-id") == sent.msg_id
    shot(d, "message")
    props = text_of(d, "#properties")
    assert "KEYS order-42" in props and "TAGS paid" in props

    assert [e.text for e in d.find_elements(By.CSS_SELECTOR, "#tracks tr.track")] == []  # no group reads it

    # by msg id too
    d.get(env.rw.url + f"/messages?topic=SearchTopic&mode=id&msg_id={sent.msg_id}")
    assert [e.text for e in d.find_elements(By.CSS_SELECTOR, "#results td.body")] == ["the answer is 42"]
    d.get(env.rw.url + "/messages?topic=SearchTopic&mode=id&msg_id=00000000000000000000000000000000")
    assert d.find_elements(By.ID, "no-message") and "no message" in text_of(d, "#search-note")


def _utc(ms: int) -> str:
    """``ms`` as the console's time fields show it: ``YYYY-MM-DD HH:MM:SS`` in UTC."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def test_time_range_search_lists_the_messages_stored_in_it(env: Env, browser: WebDriver) -> None:
    d = browser
    create_topic(env, "RangeTopic", 2)

    async def send_batch(prefix: str, n: int) -> list[int]:
        """Send ``n`` messages; their store times (epoch ms) as the broker recorded them."""
        results = [await env.send("RangeTopic", f"{prefix} {i}") for i in range(n)]
        return [(await env.admin.view_message(r.offset_msg_id)).store_timestamp for r in results]

    early = env.run(send_batch("early", 3))
    # the late batch must be stored after the last early message: wait for the clock to pass it
    env.run(
        wait_until(lambda: time.time() * 1000 > max(early) + 1, timeout=WAIT, what="the clock past the early batch")
    )
    late = env.run(send_batch("late", 2))
    assert min(late) > max(early)

    def search(begin: str, end: str) -> list[str]:
        """Fill the search form (time range mode) and submit it; the bodies found."""
        d.get(env.ro.url + "/messages")  # reading needs no --allow-writes
        d.find_element(By.ID, "search-topic").send_keys("RangeTopic")
        Select(d.find_element(By.ID, "search-mode")).select_by_value("time")
        for field_id, value in (("search-begin", begin), ("search-end", end)):
            box = d.find_element(By.ID, field_id)
            box.clear()
            box.send_keys(value)
        d.find_element(By.ID, "search-btn").click()
        until(d, lambda d: d.find_elements(By.ID, "results"), "the search results")
        return [e.text for e in d.find_elements(By.CSS_SELECTOR, "#results td.body")]

    # epoch milliseconds: from just after the early batch to now + a minute: only the late batch
    found = search(str(max(early) + 1), str(int(time.time() * 1000) + 60_000))
    assert sorted(found) == ["late 0", "late 1"]
    # the form shows the range it searched, in UTC
    assert d.find_element(By.ID, "search-begin").get_attribute("value") == _utc(max(early) + 1)
    shot(d, "search-time")

    # exactly the early batch's store times: only the early batch
    assert sorted(search(str(min(early)), str(max(early)))) == ["early 0", "early 1", "early 2"]

    # UTC text, whole seconds around both batches: all five, newest store time first
    found = search(_utc(min(early) - 1000), _utc(max(late) + 1000))
    assert sorted(found) == ["early 0", "early 1", "early 2", "late 0", "late 1"]
    assert found[0].startswith("late")

    # a range before the topic had messages: nothing
    assert search(str(min(early) - 120_000), str(min(early) - 60_000)) == []
    assert d.find_elements(By.ID, "no-message")


def test_dlq_message_is_resent_and_consumed(env: Env, browser: WebDriver) -> None:
    d = browser
    topic, group = "DlqTopic", "dlq-group"
    create_topic(env, topic, 1)
    seen: list[tuple[str, int, str]] = []  # (body, reconsume times, topic as the listener sees it)
    mode = {"fail": True}

    async def start() -> PushConsumer:
        c = PushConsumer(
            group,
            config=env.client_config(persist_consumer_offset_interval=0.2),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            max_reconsume_times=1,
        )
        c.subscribe(topic, "*")

        async def on_messages(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            seen.extend((m.body.decode(), m.reconsume_times, m.topic) for m in msgs)
            return (
                ConsumeConcurrentlyStatus.RECONSUME_LATER if mode["fail"] else ConsumeConcurrentlyStatus.CONSUME_SUCCESS
            )

        c.register_message_listener(on_messages)
        await c.start()
        return c

    consumer = env.run(start())
    try:
        env.run(env.send(topic, "poison pill", keys=["pill-1"]))

        async def in_dlq() -> bool:
            try:
                return (
                    sum(
                        o.max_offset
                        for o in (await env.admin.examine_topic_stats(f"%DLQ%{group}")).offset_table.values()
                    )
                    == 1
                )
            except Exception:
                return False

        env.run(wait_until(in_dlq, timeout=WAIT, what="the message in %DLQ%dlq-group"))
        assert [s[:2] for s in seen] == [("poison pill", 0), ("poison pill", 1)]
        mode["fail"] = False

        # a write-only DLQ (perm 2) cannot be browsed: the page offers to make it readable first
        dlq = f"%DLQ%{group}"
        env.run(
            env.admin.create_and_update_topic_config(
                env.cluster.broker_addr, dlq, read_queue_nums=1, write_queue_nums=1, perm=2
            )
        )
        env.run(wait_until(lambda: _perm_is(env, dlq, 2), timeout=WAIT, what="the DLQ write-only"))

        d.get(env.rw.url + "/dlq")
        until(d, lambda d: d.find_elements(By.CSS_SELECTOR, "a.dlq-link"), "the DLQ list")
        next(a for a in d.find_elements(By.CSS_SELECTOR, "a.dlq-link") if a.text == dlq).click()
        until(d, lambda d: d.find_elements(By.ID, "dlq-group"), "the DLQ page")
        assert "write-only on broker-a" in text_of(d, "#dlq-not-readable")
        assert not d.find_elements(By.CSS_SELECTOR, "#dlq-messages")
        d.find_element(By.ID, "make-readable-btn").click()
        until(d, lambda d: d.find_elements(By.ID, "done"), "the perm change")
        assert env.cluster.broker_addr in text_of(d, "#done")
        env.run(wait_until(lambda: _perm_is(env, dlq, 6), timeout=WAIT, what="the DLQ readable"))
        d.find_element(By.ID, "done-link").click()
        until(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#dlq-messages"), "the DLQ messages")
        rows = d.find_elements(By.CSS_SELECTOR, "#dlq-messages tr.message")
        assert len(rows) == 1 and rows[0].find_element(By.CSS_SELECTOR, "td.body").text == "poison pill"
        shot(d, "dlq")
        rows[0].find_element(By.CSS_SELECTOR, "button.resend-btn").click()
        until(d, lambda d: d.find_elements(By.ID, "done"), "the resend answer")
        assert f"%RETRY%{group}" in text_of(d, "#done")
        env.run(wait_until(lambda: len(seen) == 3, timeout=WAIT, what="the resent message consumed"))
        assert seen[2] == ("poison pill", 0, topic)  # back under its own topic, a fresh count
    finally:
        env.run(consumer.close())


async def _perm_is(env: Env, topic: str, perm: int) -> bool:
    route = await env.admin.topic_route(topic)
    return [qd.perm for qd in route.queue_datas] == [perm]


def test_read_only_console_refuses_writes(env: Env, browser: WebDriver) -> None:
    d = browser
    d.get(env.ro.url + "/topics")
    assert text_of(d, "#read-only") == "read-only"
    d.find_element(By.ID, "new-topic").send_keys("NeverCreated")
    d.find_element(By.ID, "create-topic-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "error"), "the refusal")
    assert "--allow-writes" in text_of(d, "#error")
    shot(d, "refused")
    assert "NeverCreated" not in env.run(env.admin.fetch_all_topic_list())

    create_topic(env, "KeptTopic", 1)
    d.get(env.ro.url + "/topics/KeptTopic")
    d.execute_script("document.getElementById('delete-topic').onsubmit = null")
    d.find_element(By.ID, "delete-topic-btn").click()
    until(d, lambda d: d.find_elements(By.ID, "error"), "the refusal")
    assert "KeptTopic" in env.run(env.admin.fetch_all_topic_list())

    # the console with --allow-writes deletes it (after the browser's confirm dialog)
    d.get(env.rw.url + "/topics/KeptTopic")
    d.find_element(By.ID, "delete-topic-btn").click()
    until(d, EC.alert_is_present(), "the confirm dialog")
    d.switch_to.alert.accept()
    until(d, lambda d: d.find_elements(By.ID, "done"), "the deletion")
    assert env.cluster.broker_addr in text_of(d, "#done")
    assert "KeptTopic" not in env.run(env.admin.fetch_all_topic_list())


def test_producers_page_lists_the_producer(env: Env, browser: WebDriver) -> None:
    d = browser
    create_topic(env, "ProducerTopic", 1)
    env.run(env.send("ProducerTopic", "hello"))
    d.get(env.rw.url + "/producers")
    d.find_element(By.ID, "producer-topic").send_keys("ProducerTopic")
    d.find_element(By.ID, "producer-group").send_keys("console-test-pg")

    def listed(d: WebDriver) -> bool:  # the producer's heartbeat registers it with the broker
        d.find_element(By.ID, "producers-btn").click()
        return bool(d.find_elements(By.CSS_SELECTOR, "#producers tr.producer"))

    until(d, listed, "the producer's connection")
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#producers tr.producer")]
    assert len(rows) == 1 and env.producer.runtime.client_id in rows[0]
