"""ClientConfig, public exports and the sync facades' construction rules."""

from __future__ import annotations

import pickle
import threading

import pytest

import rocketpipe
from rocketpipe.client import ClientConfig, SyncAdmin, SyncProducer
from rocketpipe.errors import InvalidArgumentError


def test_defaults_mirror_java() -> None:
    c = ClientConfig(namesrv_addr="a:1;b:2")
    assert c.namesrv_addrs() == ["a:1", "b:2"]
    assert (c.poll_name_server_interval, c.heartbeat_broker_interval, c.persist_consumer_offset_interval) == (
        30.0,
        30.0,
        5.0,
    )
    assert c.request_timeout == 3.0
    assert c.client_id() == "127.0.0.1@DEFAULT"


def test_instance_name_becomes_pid() -> None:
    c1 = ClientConfig(namesrv_addr="a:1").with_pid_instance_name()
    c2 = ClientConfig(namesrv_addr="a:1").with_pid_instance_name()
    assert c1.instance_name != "DEFAULT" and "#" in c1.instance_name
    assert c1.client_id() != c2.client_id()
    named = ClientConfig(namesrv_addr="a:1", instance_name="x").with_pid_instance_name()
    assert named.client_id() == "127.0.0.1@x"


@pytest.mark.parametrize("kwargs", [{"namesrv_addr": ""}, {"namesrv_addr": "a:1", "request_timeout": 0}])
def test_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        ClientConfig(**kwargs)  # type: ignore[arg-type]


def test_exported_members() -> None:
    for name in rocketpipe.__all__:
        assert getattr(rocketpipe, name) is not None, name
    assert {"Producer", "PushConsumer", "Admin", "SyncProducer", "SyncAdmin", "SendResult", "PullRaw"} <= set(
        rocketpipe.__all__
    )
    assert rocketpipe.Producer is rocketpipe.client.Producer


def _portal_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("rocketpipe-sync")]


def test_sync_facades_open_nothing_and_pickle() -> None:
    admin = SyncAdmin("127.0.0.1:1")
    producer = SyncProducer("pg", "127.0.0.1:1")
    assert _portal_threads() == []  # no loop thread (and no connection) until first use
    admin2 = pickle.loads(pickle.dumps(admin))
    producer2 = pickle.loads(pickle.dumps(producer))
    assert admin2.__getstate__() == admin.__getstate__()
    assert producer2.__getstate__() == producer.__getstate__()
    assert _portal_threads() == []
    admin.close()
    producer.close()


def test_sync_admin_raises_client_errors_and_restarts_after_close() -> None:
    from rocketpipe.errors import ConnectionClosedError

    admin = SyncAdmin("127.0.0.1:1")  # nothing listens on port 1
    with pytest.raises(ConnectionClosedError):
        admin.topic_route("T")
    assert len(_portal_threads()) == 1
    admin.close()
    assert _portal_threads() == []
    with pytest.raises(ConnectionClosedError):
        admin.topic_queues("T")  # usable again after close: a new loop thread
    admin.close()
    assert _portal_threads() == []


def test_client_layering() -> None:
    """The client never pulls in broker, name server or store code."""
    import subprocess
    import sys

    code = (
        "import sys, rocketpipe.client; "
        "bad = [m for m in sys.modules if m.startswith(('rocketpipe.broker', 'rocketpipe.namesrv', 'rocketpipe.store'))]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
