"""Message-request-mode / QUERY_ASSIGNMENT bodies against golden vectors from Java 5.3.3.

``tests/vectors/java_assignment/*.hex`` were written by
``tests/interop/vectors/CaptureAssignmentVectors.java`` with the official 5.3.3 classes (fastjson
1.2.83; command in ``tests/interop/vectors/README.md`` style, see the Java file's header). Each
vector is decoded, its fields asserted, and re-encoded byte for byte (the three-element
response as parsed JSON: Java writes its HashSet's order, we write queue order).
"""

from __future__ import annotations

import json

import pytest
from _protocol_vectors import VECTORS, load_hex

from rocketpipe.errors import ProtocolError
from rocketpipe.protocol.bodies.assignment import (
    MessageModel,
    MessageQueueAssignment,
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketpipe.protocol.message import MessageQueue


def vec(name: str) -> bytes:
    return load_hex(f"java_assignment/{name}.hex")


def test_every_vector_names_its_java_provenance() -> None:
    files = sorted((VECTORS / "java_assignment").glob("*.hex"))
    assert len(files) == 10
    for f in files:
        first = f.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# provenance: apache/rocketmq 5.3.3 "), f.name
        assert "captured by tests/interop/vectors/CaptureAssignmentVectors.java on " in first, f.name


@pytest.mark.parametrize(
    ("name", "mode", "share"),
    [("set_mode_pop", MessageRequestMode.POP, 2), ("set_mode_default", MessageRequestMode.PULL, 0)],
)
def test_set_message_request_mode_body(name: str, mode: MessageRequestMode, share: int) -> None:
    data = vec(name)
    body = SetMessageRequestModeRequestBody.decode(data)
    assert body == SetMessageRequestModeRequestBody(
        topic="TopicA", consumer_group="GroupA", mode=mode, pop_share_queue_num=share
    )
    assert body.encode() == data


def test_set_message_request_mode_defaults_and_errors() -> None:
    assert SetMessageRequestModeRequestBody.decode(b'{"topic":"T"}') == SetMessageRequestModeRequestBody(topic="T")
    assert SetMessageRequestModeRequestBody.decode(b'{"popShareQueueNum":"3"}').pop_share_queue_num == 3
    for bad in (
        b"",
        b"[1]",
        b'{"topic":"T","mode":"PUSH"}',
        b'{"mode":3}',
        b"{not json",
        b'{"popShareQueueNum":"x"}',
        b'{"popShareQueueNum":[]}',
    ):
        with pytest.raises(ProtocolError):
            SetMessageRequestModeRequestBody.decode(bad)


def test_query_assignment_request_body() -> None:
    data = vec("query_assignment_request")
    req = QueryAssignmentRequestBody.decode(data)
    assert req == QueryAssignmentRequestBody("TopicA", "GroupA", "127.0.0.1@interop", "AVG", MessageModel.CLUSTERING)
    assert req.encode() == data
    assert QueryAssignmentRequestBody.decode(b"{}") == QueryAssignmentRequestBody()
    assert QueryAssignmentRequestBody().encode() == b"{}"
    with pytest.raises(ProtocolError):
        QueryAssignmentRequestBody.decode(b'{"messageModel":"SOMETIMES"}')


def test_query_assignment_response_bodies() -> None:
    pop = vec("query_assignment_response_pop")
    body = QueryAssignmentResponseBody.decode(pop)
    assert body.message_queue_assignments == [
        MessageQueueAssignment(MessageQueue("TopicA", "broker-a", -1), MessageRequestMode.POP)
    ]
    assert body.encode() == pop

    att = vec("query_assignment_response_attachments")
    body = QueryAssignmentResponseBody.decode(att)
    (a,) = body.message_queue_assignments or []
    assert (a.message_queue, a.mode, a.attachments) == (
        MessageQueue("TopicA", "broker-a", 3),
        MessageRequestMode.PULL,
        {"k": "v"},
    )
    assert body.encode() == att

    three = vec("query_assignment_response_three")
    body = QueryAssignmentResponseBody.decode(three)
    assert sorted(a.message_queue.queue_id for a in body.message_queue_assignments or []) == [0, 1, 2]
    assert json.loads(body.encode()) == json.loads(three) and len(body.encode()) == len(three)

    assert QueryAssignmentResponseBody.decode(vec("query_assignment_response_null")) == QueryAssignmentResponseBody(
        None
    )
    assert QueryAssignmentResponseBody(None).encode() == vec("query_assignment_response_null")
    assert QueryAssignmentResponseBody.decode(vec("query_assignment_response_empty")) == QueryAssignmentResponseBody([])
    assert QueryAssignmentResponseBody([]).encode() == vec("query_assignment_response_empty")


def test_request_mode_manager_body() -> None:
    data = vec("request_mode_manager")
    w = MessageRequestModeSerializeWrapper.decode(data)
    assert w.message_request_mode_map == {
        "TopicA": {"GroupA": SetMessageRequestModeRequestBody("TopicA", "GroupA", MessageRequestMode.POP, 0)}
    }
    assert w.encode() == data
    # the pretty form ConfigManager.persist writes (tabs, newlines) reads the same
    assert MessageRequestModeSerializeWrapper.decode(vec("request_mode_manager_pretty")) == w


def test_response_skips_entries_without_a_queue() -> None:
    raw = b'{"messageQueueAssignments":[{"mode":"POP"},7,{"messageQueue":{"topic":"T","brokerName":"b","queueId":1}}]}'
    assert QueryAssignmentResponseBody.decode(raw).message_queue_assignments == [
        MessageQueueAssignment(MessageQueue("T", "b", 1))
    ]
