"""Batch messages' properties are spliced as strings, as Java's MessageExtEncoder appends bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketpipe.broker.processors.send import _batch_inner_properties
from rocketpipe.protocol.message import properties_to_string, string_to_properties

CLUSTER = "CLUSTER\x01DefaultCluster\x02"


def _via_dict(props: str, wait: str | None, next_id: object) -> str:
    """What the broker stored before: parse, add the keys, re-serialise."""
    d = string_to_properties(props)
    d.setdefault("UNIQ_KEY", next_id())  # type: ignore[operator]
    if wait is not None:
        d.setdefault("WAIT", wait)
    d["CLUSTER"] = "DefaultCluster"
    return properties_to_string(d)


def test_a_java_client_string_gets_the_broker_keys_appended() -> None:
    props = "KEYS\x01k1\x02UNIQ_KEY\x01AC1100\x02TAGS\x01a\x02"
    out = _batch_inner_properties(props, "true", CLUSTER, lambda: "NEW")
    assert out == props + "WAIT\x01true\x02" + CLUSTER
    assert string_to_properties(out) == {
        "KEYS": "k1",
        "UNIQ_KEY": "AC1100",
        "TAGS": "a",
        "WAIT": "true",
        "CLUSTER": "DefaultCluster",
    }


def test_missing_unique_key_is_made_and_a_missing_last_separator_added() -> None:
    out = _batch_inner_properties("TAGS\x01a", None, CLUSTER, lambda: "NEW")
    assert out == "TAGS\x01a\x02UNIQ_KEY\x01NEW\x02" + CLUSTER
    assert _batch_inner_properties("", None, CLUSTER, lambda: "N") == "UNIQ_KEY\x01N\x02" + CLUSTER


def test_an_existing_cluster_is_replaced_not_doubled() -> None:
    out = _batch_inner_properties("CLUSTER\x01other\x02UNIQ_KEY\x01U\x02", None, CLUSTER, lambda: "NEW")
    assert string_to_properties(out) == {"CLUSTER": "DefaultCluster", "UNIQ_KEY": "U"}
    assert out.count("CLUSTER\x01") == 1


def test_a_key_ending_in_another_name_is_not_mistaken_for_it() -> None:
    out = _batch_inner_properties("MY_UNIQ_KEY\x01x\x02XWAIT\x01y\x02", "false", CLUSTER, lambda: "NEW")
    assert string_to_properties(out) == {
        "MY_UNIQ_KEY": "x", "XWAIT": "y", "UNIQ_KEY": "NEW", "WAIT": "false", "CLUSTER": "DefaultCluster"
    }  # fmt: skip


names = st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "a", "DELAY", "MY_UNIQ_KEY"])
values = st.text(alphabet="abcXYZ019 -_", min_size=1, max_size=6)


@given(pairs=st.dictionaries(names, values, max_size=6), wait=st.none() | st.sampled_from(["true", "false"]))
def test_canonical_strings_store_the_same_bytes_as_the_dict_path(pairs: dict[str, str], wait: str | None) -> None:
    props = properties_to_string(pairs)  # what Java and rocketpipe clients send
    spliced = _batch_inner_properties(props, wait, CLUSTER, lambda: "ID")
    assert string_to_properties(spliced) == string_to_properties(_via_dict(props, wait, lambda: "ID"))
    if "CLUSTER" not in pairs:
        assert spliced == _via_dict(props, wait, lambda: "ID")


def test_the_brokers_region_and_trace_switch_replace_a_messages_own() -> None:
    tail = "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02" + CLUSTER
    spliced = _batch_inner_properties("MSG_REGION\x01mine\x02K\x01v", None, tail, lambda: "ID")
    assert string_to_properties(spliced)["MSG_REGION"] == "DefaultRegion"  # the last pair wins on read
    parsed = _batch_inner_properties("CLUSTER\x01other\x02MSG_REGION\x01mine", None, tail, lambda: "ID")
    assert string_to_properties(parsed) == {
        "CLUSTER": "DefaultCluster",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
        "UNIQ_KEY": "ID",
    }
