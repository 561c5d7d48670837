"""Metadata files (issue 8, part 4): the broker's JSON state and the client's local offsets.

Every save leaves a valid ``.bak``; a bad main file makes the broker use the ``.bak`` (one
WARNING line naming both, the bad file kept as ``<name>.corrupt-<ms>``); no usable copy stops the
start with a :class:`MetadataError` naming the files and ``--recover-metadata`` — unless
``recover_metadata``, which starts empty and keeps the bad files aside; topics are rebuilt from the
consume-queue directories without any flag. State is written and read back with the real clients
through a real name server and broker on 127.0.0.1 (in-process tables only for what no client
API reaches: subscription-group configs, POP offsets, request modes).
"""

from __future__ import annotations

import doctest
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import orjson
import pytest

from rocketpipe import Admin, ConsumeFromWhere, LitePullConsumer, Message, MessageQueue, Producer, backup_file
from rocketpipe.broker import Broker, BrokerConfig
from rocketpipe.broker.metadata import MetadataError, apply_topics, read_topics
from rocketpipe.broker.topics import SubscriptionGroupConfig, TopicTable
from rocketpipe.client.consumer.local_offsets import LocalOffsetStore, OffsetFileError, decode_offsets, encode_offsets
from rocketpipe.client.consumer.offsets import ReadOffsetType
from rocketpipe.protocol.bodies.assignment import MessageRequestMode
from rocketpipe.protocol.codes import RequestCode, ResponseCode
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketpipe.protocol.message import decode_records
from rocketpipe.store import json_file
from rocketpipe.testing.cluster import LocalCluster, local_cluster
from rocketpipe.transport import Connection
from waiting import wait_until

SEG = 1 << 20
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)
TOPIC, GROUP, SG = "MetaT", "meta-g", "meta-sg"
FILES = (
    "topics.json",
    "subscriptionGroup.json",
    "consumerOffset.json",
    "delayOffset.json",
    "messageRequestMode.json",
    "popCheckpoint.json",
)
#: what each file's state is called in the refusal / recovery lines
NOT_TOPICS = FILES[1:]


def _cluster(store: Path, **kw: object) -> AbstractAsyncContextManager[LocalCluster]:
    return local_cluster(store, mapped_file_size_commit_log=SEG, message_delay_level=FAST_DELAY_LEVELS, **kw)


def _config(store: Path) -> Path:
    return store / "config"


async def _fill(c: LocalCluster) -> dict[MessageQueue, int]:
    """Put state into every metadata file; return the committed offsets."""
    async with Admin(c.namesrv_addr) as admin:
        await admin.create_topic(TOPIC, 4)
        queues = await admin.topic_queues(TOPIC)
        async with Producer("meta-pg", namesrv_addr=c.namesrv_addr) as p:
            for i in range(20):
                await p.send(Message.build(TOPIC, f"m{i}".encode()), queue=queues[i % 4])
            await p.send(Message.build(TOPIC, b"delayed", delay_time_level=1), queue=queues[0])
        await admin.set_message_request_mode(TOPIC, GROUP, MessageRequestMode.POP, 1)
    committed = {queues[0]: 3, queues[1]: 5}
    async with LitePullConsumer(GROUP, namesrv_addr=c.namesrv_addr, auto_commit=False) as lp:
        lp.assign(queues)
        await lp.commit(committed, persist=True)
    await wait_until(lambda: c.broker.schedule.offsets.get(1, 0) >= 1, timeout=15, what="delayed message delivered")
    c.broker.groups_config.put(SubscriptionGroupConfig(SG, retry_max_times=3))
    c.broker.pop.table.set_pop_offset(GROUP, TOPIC, 2, 7)
    c.broker.pop.changed()
    return committed


async def _committed(c: LocalCluster, mqs: list[MessageQueue]) -> dict[MessageQueue, int]:
    """The group's offsets as a fresh consumer sees them (from the broker)."""
    async with LitePullConsumer(GROUP, namesrv_addr=c.namesrv_addr, auto_commit=False) as lp:
        return {mq: await lp.committed(mq) for mq in mqs}


async def _prepared_store(store: Path) -> dict[MessageQueue, int]:
    """Fill a store, then one more clean start/stop so that every ``.bak`` holds the final state."""
    async with _cluster(store) as c:
        committed = await _fill(c)
    async with _cluster(store):
        pass
    for name in FILES:  # (the topics' data version counts restarts)
        main, bak = (orjson.loads((_config(store) / n).read_bytes()) for n in (name, f"{name}.bak"))
        assert {k: v for k, v in bak.items() if k != "dataVersion"} == {
            k: v for k, v in main.items() if k != "dataVersion"
        }, name
    return committed


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


# ------------------------------------------------------------------------------ writing


def test_doctests() -> None:
    assert doctest.testmod(json_file).failed == 0


def test_every_save_leaves_a_valid_bak_and_syncs_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Path] = []
    real = backup_file._fsync_dir
    monkeypatch.setattr(backup_file, "_fsync_dir", lambda d: (synced.append(d), real(d)))
    p = tmp_path / "config" / "consumerOffset.json"
    bak = tmp_path / "config" / "consumerOffset.json.bak"
    json_file.save_json(p, {"offsetTable": {"T@g": {"0": 1}}})  # first save: no previous file
    assert orjson.loads(bak.read_bytes()) == orjson.loads(p.read_bytes()) == {"offsetTable": {"T@g": {"0": 1}}}
    json_file.save_json(p, {"offsetTable": {"T@g": {"0": 2}}})
    json_file.save_json(p, {"offsetTable": {"T@g": {"0": 3}}})  # two saves in a row: .bak = the one before
    assert orjson.loads(bak.read_bytes()) == {"offsetTable": {"T@g": {"0": 2}}}
    assert orjson.loads(p.read_bytes()) == {"offsetTable": {"T@g": {"0": 3}}}
    assert synced == [p.parent] * 3
    assert sorted(q.name for q in p.parent.iterdir()) == [
        "consumerOffset.json",
        "consumerOffset.json.bak",
    ]  # no temp left


def test_a_failed_save_keeps_both_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "topics.json"
    json_file.save_json(p, {"v": 1})
    json_file.save_json(p, {"v": 2})

    def no_space(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(backup_file.os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        json_file.save_json(p, {"v": 3})
    assert orjson.loads(p.read_bytes()) == {"v": 2}
    assert orjson.loads((tmp_path / "topics.json.bak").read_bytes()) == {"v": 1}
    assert sorted(q.name for q in tmp_path.iterdir()) == ["topics.json", "topics.json.bak"]


async def test_a_clean_stop_leaves_a_bak_of_every_file(tmp_path: Path) -> None:
    """The probe's case: one run that saved each file once used to leave no backup at all."""
    async with _cluster(tmp_path) as c:
        await _fill(c)
    for name in FILES:
        bak = orjson.loads((_config(tmp_path) / f"{name}.bak").read_bytes())
        assert isinstance(bak, dict) and bak, name


# ------------------------------------------------------------------------------ a bad main file


async def test_garbage_in_every_main_file_uses_the_bak_and_keeps_all_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    committed = await _prepared_store(tmp_path)
    cfg = _config(tmp_path)
    damage = {
        "topics.json": b"\x00\x01\x02garbage",
        "subscriptionGroup.json": b"",
        "consumerOffset.json": (cfg / "consumerOffset.json").read_bytes()[:25],  # torn
        "delayOffset.json": b"[1, 2, 3]",  # parses, wrong shape
        "messageRequestMode.json": b'{"somethingElse": {}}',
        "popCheckpoint.json": b'{"popOffsetTable": [], "checkpoints": []}',
    }
    for name, data in damage.items():
        (cfg / name).write_bytes(data)
    caplog.set_level(logging.WARNING)
    async with _cluster(tmp_path) as c:
        # one WARNING line per file, naming the file and its backup
        warnings = _records(caplog, logging.WARNING)
        for name in FILES:
            assert [w for w in warnings if str(cfg / name) + " " in w and f"{cfg / name}.bak" in w], name
        assert not _records(caplog, logging.ERROR)
        # what clients see: the topic with its messages, the group's committed offsets
        async with Admin(c.namesrv_addr) as admin:
            queues = await admin.topic_queues(TOPIC)
            assert len(queues) == 4
            assert [await admin.max_offset(q) for q in queues] == [6, 5, 5, 5]
        assert await _committed(c, list(committed)) == committed
        # what no client API shows
        assert c.broker.groups_config.groups[SG].retry_max_times == 3
        assert c.broker.schedule.offsets.get(1, 0) >= 1
        mode = c.broker.assignment.table.get(TOPIC, GROUP)
        assert mode is not None and mode.mode is MessageRequestMode.POP and mode.pop_share_queue_num == 1
        assert c.broker.pop.table.pop_offset(GROUP, TOPIC, 2) == 7
    # the bad files were kept for the operator, byte for byte; good copies were written again
    for name, data in damage.items():
        kept = list(cfg.glob(f"{name}.corrupt-*"))
        assert len(kept) == 1 and kept[0].read_bytes() == data, name
        assert json_file.load_json(cfg / name) == orjson.loads((cfg / f"{name}.bak").read_bytes()), name


# ------------------------------------------------------------------------------ no usable copy


@pytest.mark.parametrize("name", NOT_TOPICS)
async def test_both_copies_bad_refuses_to_start_and_touches_nothing(tmp_path: Path, name: str) -> None:
    cfg = _config(tmp_path)
    cfg.mkdir(parents=True)
    (cfg / name).write_bytes(b"{not json")
    (cfg / f"{name}.bak").write_bytes(b"[]")
    broker = Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=SEG))
    with pytest.raises(MetadataError) as err:
        await broker.start()
    text = str(err.value)
    assert str(cfg / name) in text and f"{name}.bak" in text and "--recover-metadata" in text
    assert set(err.value.paths) == {cfg / name, cfg / f"{name}.bak"}
    await broker.close()  # must not write an empty table over the files
    assert (cfg / name).read_bytes() == b"{not json" and (cfg / f"{name}.bak").read_bytes() == b"[]"
    assert not list(cfg.glob("*.corrupt-*"))
    assert not (tmp_path / "commitlog").exists()  # the store was never opened


async def test_a_bad_file_without_any_bak_refuses_too_and_one_error_names_every_file(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    cfg.mkdir(parents=True)
    (cfg / "consumerOffset.json").write_bytes(b"garbage")  # no .bak: Java would start with no offsets
    (cfg / "subscriptionGroup.json.bak").write_bytes(b"\xff\xfe")  # main missing, .bak bad
    broker = Broker(BrokerConfig(store_dir=tmp_path, mapped_file_size_commit_log=SEG))
    with pytest.raises(MetadataError) as err:
        await broker.start()
    assert set(err.value.paths) == {cfg / "consumerOffset.json", cfg / "subscriptionGroup.json.bak"}
    assert (
        str(err.value).startswith("2 metadata files are unreadable") and str(err.value).count("--recover-metadata") == 1
    )


async def test_recover_metadata_starts_empty_and_keeps_the_bad_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    committed = await _prepared_store(tmp_path)
    cfg = _config(tmp_path)
    for name in NOT_TOPICS:
        (cfg / name).write_bytes(b"garbage")
        (cfg / f"{name}.bak").write_bytes(b"more garbage")
    with pytest.raises(MetadataError):
        async with _cluster(tmp_path):
            pass
    caplog.set_level(logging.WARNING)
    async with _cluster(tmp_path, recover_metadata=True) as c:
        errors = _records(caplog, logging.ERROR)
        assert len(errors) == len(NOT_TOPICS)
        for name in NOT_TOPICS:
            assert [e for e in errors if str(cfg / name) in e and "--recover-metadata" in e], name
        # the topic and its messages are untouched; the offsets are gone (the operator chose it):
        # a consumer is told where a new group starts (0 here, as Java's queryConsumerOffset)
        async with Admin(c.namesrv_addr) as admin:
            assert [await admin.max_offset(q) for q in await admin.topic_queues(TOPIC)] == [6, 5, 5, 5]
        assert [c.broker.offsets.query(GROUP, TOPIC, q.queue_id) for q in committed] == [-1, -1]
        assert set((await _committed(c, list(committed))).values()) == {0}
        assert SG not in c.broker.groups_config.groups
    for name in NOT_TOPICS:
        kept = sorted(q.read_bytes() for q in cfg.glob(f"{name}*.corrupt-*"))
        assert kept == [b"garbage", b"more garbage"], name
    async with _cluster(tmp_path):  # the next start needs no flag
        pass


# ------------------------------------------------------------------------------ topics rebuilt


async def _send_back_one(c: LocalCluster, group: str) -> None:
    """Fail one message of ``TOPIC`` the way a consumer does (CONSUMER_SEND_MSG_BACK): %RETRY%group."""
    async with Admin(c.namesrv_addr) as admin:
        q0 = (await admin.topic_queues(TOPIC))[0]
        raw = await admin.pull_raw(q0, 0, 1)
    msg = decode_records(raw.body)[0]
    h = ConsumerSendMsgBackRequestHeader(
        offset=msg.commit_log_offset, group=group, delay_level=0, origin_msg_id=msg.msg_id, origin_topic=TOPIC
    )
    conn = await Connection.connect(c.broker_addr)
    try:
        r = await conn.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h.to_ext_fields()), 10)
        assert r.code == ResponseCode.SUCCESS, r.remark
    finally:
        await conn.close()
    await wait_until(
        lambda: c.broker.store.get_max_offset(f"%RETRY%{group}", 0) == 1, timeout=15, what="retry message stored"
    )


@pytest.mark.parametrize("how", ["deleted", "garbage"])
async def test_topics_rebuilt_from_consume_queues_and_every_message_readable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    n = 2000
    async with _cluster(tmp_path) as c:
        async with Admin(c.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, 4)
        async with Producer("meta-pg", namesrv_addr=c.namesrv_addr) as p:
            for i in range(0, n, 100):
                r = await p.send_batch([Message.build(TOPIC, f"m{j:05d}".encode()) for j in range(i, i + 100)])
                assert r.send_status.name == "SEND_OK"
        await _send_back_one(c, GROUP)
    cfg = _config(tmp_path)
    for name in ("topics.json", "topics.json.bak"):
        if how == "deleted":
            (cfg / name).unlink()
        else:
            (cfg / name).write_bytes(b"\x00 not json at all")
    caplog.set_level(logging.WARNING)
    async with _cluster(tmp_path) as c:  # no --recover-metadata needed
        lines = [w for w in _records(caplog, logging.WARNING) if "rebuilt 2 topics from consume queues" in w]
        assert len(lines) == 1, _records(caplog, logging.WARNING)
        assert TOPIC in lines[0] and f"%RETRY%{GROUP}" in lines[0]
        if how == "garbage":
            assert "no --recover-metadata" in lines[0]
        retry = c.broker.topics.get(f"%RETRY%{GROUP}")
        assert retry is not None and (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, 6)
        got: list[bytes] = []
        first = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        async with LitePullConsumer(
            "meta-reader", namesrv_addr=c.namesrv_addr, auto_commit=False, consume_from_where=first
        ) as lp:
            queues = await lp.fetch_message_queues(TOPIC)
            assert len(queues) == 4
            lp.assign(queues)

            async def all_read() -> bool:
                got.extend(m.body for m in await lp.poll(0.2))
                return len(got) >= n

            await wait_until(all_read, timeout=60, what=f"{n} messages pulled")
        assert sorted(got) == [f"m{j:05d}".encode() for j in range(n)]
    # the rebuilt table was written: the next start needs no rebuild
    assert TOPIC in json_file.load_json(cfg / "topics.json")["topicConfigTable"]
    if how == "garbage":
        assert sorted(q.read_bytes() for q in cfg.glob("topics.json*.corrupt-*")) == [b"\x00 not json at all"] * 2


def test_a_topic_missing_from_the_bak_is_rebuilt_and_configured_ones_are_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for topic, qid in (("Old", 1), ("New", 2), ("New", 0), ("SCHEDULE_TOPIC_XXXX", 2)):
        (tmp_path / "consumequeue" / topic / str(qid)).mkdir(parents=True)
    (tmp_path / "consumequeue" / "New" / "notaqueue").mkdir()
    cfg = tmp_path / "config"
    json_file.save_json(
        cfg / "topics.json",
        {"topicConfigTable": {"Old": {"topicName": "Old", "readQueueNums": 8, "writeQueueNums": 8, "perm": 4}}},
    )
    (cfg / "topics.json").write_bytes(b"{")
    table = TopicTable("b", "c")
    table.create_system_topics(0)
    caplog.set_level(logging.WARNING)
    added = apply_topics(table, read_topics(cfg / "topics.json", tmp_path), 1)
    assert added == ["New"]
    new, old = table.get("New"), table.get("Old")
    assert new is not None and (new.read_queue_nums, new.write_queue_nums, new.perm) == (3, 3, 6)
    assert old is not None and (old.read_queue_nums, old.perm) == (8, 4)  # from the .bak, not the directories
    assert table.get("SCHEDULE_TOPIC_XXXX").read_queue_nums == 18  # type: ignore[union-attr]
    assert table.dirty
    assert [
        w
        for w in _records(caplog, logging.WARNING)
        if "rebuilt 1 topics from consume queues (missing from the backup file): New" in w
    ]


# ------------------------------------------------------------------------------ local offsets (client)

Q0, Q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)


async def test_local_offsets_bak_after_every_write_and_used_when_the_file_is_bad(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = LocalOffsetStore("127.0.0.1@x", "bg", tmp_path)
    bak = s.path.with_name("offsets.json.bak")
    s.update_offset(Q0, 4, increase_only=False)
    await s.persist(Q0)
    assert decode_offsets(bak.read_bytes()) == decode_offsets(s.path.read_bytes()) == {Q0: 4}  # first write too
    s.update_offset(Q1, 9, increase_only=False)
    await s.persist(Q1)
    assert decode_offsets(bak.read_bytes()) == {Q0: 4}
    s.path.write_bytes(b'{"offsetTable": 5}')  # parses, wrong shape
    caplog.set_level(logging.WARNING)
    fresh = LocalOffsetStore("127.0.0.1@x", "bg", tmp_path)
    fresh.load()
    assert fresh.snapshot() == {Q0: 4}
    assert [w for w in _records(caplog, logging.WARNING) if str(s.path) in w and str(bak) in w]
    assert [q.read_bytes() for q in s.path.parent.glob("offsets.json.corrupt-*")] == [b'{"offsetTable": 5}']


async def test_local_offsets_both_bad_raise_and_are_never_overwritten(tmp_path: Path) -> None:
    s = LocalOffsetStore("127.0.0.1@y", "bg", tmp_path)
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(b"garbage")
    with pytest.raises(OffsetFileError, match=r"offsets\.json"):  # no .bak: Java would load nothing silently
        s.load()
    s.path.with_name("offsets.json.bak").write_bytes(encode_offsets({Q0: 4})[:10])
    with pytest.raises(OffsetFileError) as err:
        s.load()
    assert set(err.value.paths) == {s.path, s.path.with_name("offsets.json.bak")}
    # like Java: persist logs and writes nothing, read_offset answers -1
    s.update_offset(Q0, 11, increase_only=False)
    await s.persist(Q0)
    await s.persist_all([Q0])
    assert s.path.read_bytes() == b"garbage"
    assert await s.read_offset(Q1, ReadOffsetType.READ_FROM_STORE) == -1
