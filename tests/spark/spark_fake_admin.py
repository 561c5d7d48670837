"""A file-backed fake of ``SyncAdmin`` for Spark plumbing tests (imported by executors too).

Executors run in other processes, so the fake keeps its state in a JSON file whose path is the
``nameServer`` option (``fake:<path>``); the source's ``clientFactory`` option points here
(``spark_fake_admin:FakeAdmin``). Messages are synthesised from (topic, broker, queue, offset)
with :func:`rocketpipe.protocol.message.encode_record`, so every row can be checked exactly.
Pull semantics follow the broker: below min -> OFFSET_ILLEGAL (next = min), at max -> NO_NEW_MSG,
above max -> OFFSET_ILLEGAL.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path

from rocketpipe.errors import TransportError
from rocketpipe.protocol.message import MessageQueue, encode_record

FACTORY = "spark_fake_admin:FakeAdmin"
BORN_MS = 1_700_000_000_000


class FakePullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass
class FakePullRaw:
    status: FakePullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""


def _key(mq: MessageQueue) -> str:
    return f"{mq.topic}|{mq.broker_name}|{mq.queue_id}"


def body_of(topic: str, broker: str, qid: int, offset: int) -> bytes:
    """The synthetic body of a message."""
    return f"{topic}|{broker}|{qid}|{offset}".encode()


def record(topic: str, broker: str, qid: int, offset: int) -> bytes:
    """The stored record of a synthetic message."""
    return encode_record(
        topic=topic,
        body=body_of(topic, broker, qid, offset),
        properties={"TAGS": f"tag{offset % 3}", "KEYS": f"k{offset}", "UNIQ_KEY": f"U-{broker}-{qid}-{offset}"},
        queue_id=qid,
        queue_offset=offset,
        physical_offset=offset * 1000 + qid,
        born_timestamp=BORN_MS + offset,
        store_timestamp=BORN_MS + offset + 1,
        store_host="127.0.0.1:10911",
        reconsume_times=offset % 2,
    )


class FakeCluster:
    """Writes the state file the fake admins read (test side)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state: dict[str, dict[str, object]] = {"queues": {}, "min": {}, "max": {}}

    @property
    def name_server(self) -> str:
        return f"fake:{self.path}"

    def add_topic(self, topic: str, queues: list[tuple[str, int]]) -> None:
        self.state["queues"][topic] = [list(q) for q in queues]  # type: ignore[index]
        for b, q in queues:
            k = _key(MessageQueue(topic, b, q))
            self.state["min"].setdefault(k, 0)  # type: ignore[union-attr]
            self.state["max"].setdefault(k, 0)  # type: ignore[union-attr]
        self.save()

    def produce(self, topic: str, broker: str, qid: int, n: int) -> None:
        k = _key(MessageQueue(topic, broker, qid))
        self.state["max"][k] += n  # type: ignore[index]
        self.save()

    def set_pull_cap(self, cap: int, jitter: bool = False) -> None:
        """Cap messages per pull like a broker; ``jitter`` also answers short at offsets divisible by 5."""
        self.state["cap"] = {"n": cap, "jitter": jitter}
        self.save()

    def set_min(self, topic: str, broker: str, qid: int, offset: int) -> None:
        self.state["min"][_key(MessageQueue(topic, broker, qid))] = offset  # type: ignore[index]
        self.save()

    def fail_next(self, method: str, times: int) -> None:
        """Make the next ``times`` calls of ``method`` (``topic_queues``, ``max_offset`` …) raise
        TransportError, as a stalled broker or name server would."""
        self.state = json.loads(self.path.read_text())  # the admins count failures down in the file
        self.state.setdefault("fail", {})[method] = times  # type: ignore[index]
        self.save()

    def failures_left(self, method: str) -> int:
        return int(json.loads(self.path.read_text()).get("fail", {}).get(method, 0))

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state))
        os.replace(tmp, self.path)


class FakeAdmin:
    """The subset of ``SyncAdmin`` the Spark source uses, backed by the state file."""

    def __init__(self, name_server: str) -> None:
        assert name_server.startswith("fake:"), name_server
        self._path = Path(name_server[5:])
        self.closed = False

    def _state(self) -> dict[str, dict[str, object]]:
        return json.loads(self._path.read_text())  # type: ignore[no-any-return]

    def _maybe_fail(self, method: str) -> None:
        st = self._state()
        left = int(st.get("fail", {}).get(method, 0))  # type: ignore[union-attr, call-overload]
        if left > 0:
            st["fail"][method] = left - 1  # type: ignore[index]
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text(json.dumps(st))
            os.replace(tmp, self._path)
            raise TransportError(f"fake {method} timed out ({left - 1} failures left)")

    def topic_queues(self, topic: str) -> list[MessageQueue]:
        self._maybe_fail("topic_queues")
        qs = self._state()["queues"].get(topic)
        if qs is None:
            raise LookupError(f"no route for {topic}")
        return sorted(MessageQueue(topic, b, q) for b, q in qs)  # type: ignore[union-attr]

    def fetch_all_topic_list(self) -> set[str]:
        return set(self._state()["queues"])

    def max_offset(self, mq: MessageQueue) -> int:
        self._maybe_fail("max_offset")
        return int(self._state()["max"][_key(mq)])  # type: ignore[index]

    def min_offset(self, mq: MessageQueue) -> int:
        return int(self._state()["min"][_key(mq)])  # type: ignore[index]

    def pull_raw(
        self, mq: MessageQueue, offset: int, max_nums: int, *, timeout: float = 10.0, max_bytes: int | None = None
    ) -> FakePullRaw:
        st = self._state()
        lo, hi = int(st["min"][_key(mq)]), int(st["max"][_key(mq)])  # type: ignore[index]
        if offset < lo:
            return FakePullRaw(FakePullStatus.OFFSET_ILLEGAL, lo, lo, hi)
        if offset == hi:
            return FakePullRaw(FakePullStatus.NO_NEW_MSG, offset, lo, hi)
        if offset > hi:
            return FakePullRaw(FakePullStatus.OFFSET_ILLEGAL, hi, lo, hi)
        n = min(max_nums, hi - offset)
        cap = st.get("cap")
        if cap:
            n = min(n, int(cap["n"]))  # type: ignore[index]
            if cap["jitter"] and offset % 5 == 0:  # type: ignore[index]
                n = max(1, n // 2)
        body = b"".join(record(mq.topic, mq.broker_name, mq.queue_id, o) for o in range(offset, offset + n))
        return FakePullRaw(FakePullStatus.FOUND, offset + n, lo, hi, body)

    def close(self) -> None:
        self.closed = True
