"""Typed headers: wire names, required fields, V1/V2 conversion, registry."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpipe.errors import HeaderError
from rocketpipe.protocol import headers as H
from rocketpipe.protocol.codes import RequestCode, SerializeType
from rocketpipe.protocol.command import RemotingCommand
from rocketpipe.protocol.frame import FrameDecoder, encode_frame
from rocketpipe.protocol.headers import base
from rocketpipe.protocol.headers.base import CommandHeader


def _all_header_classes() -> list[type[CommandHeader]]:
    return [
        getattr(H, n)
        for n in H.__all__
        if isinstance(getattr(H, n), type)
        and issubclass(getattr(H, n), CommandHeader)
        and n not in ("CommandHeader", "RpcRequestHeader", "TopicRequestHeader")
    ]


def test_send_v1_wire_names() -> None:
    h = H.SendMessageRequestHeader(
        producer_group="pg",
        topic="T",
        queue_id=3,
        born_timestamp=1700000000000,
        properties="TAGS\x01a\x02",
        batch=False,
        bname="broker-a",
    )
    assert h.to_ext_fields() == {
        "producerGroup": "pg",
        "topic": "T",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "3",
        "sysFlag": "0",
        "bornTimestamp": "1700000000000",
        "flag": "0",
        "properties": "TAGS\x01a\x02",
        "batch": "false",
        "bname": "broker-a",
    }


def test_send_v2_single_letters_and_conversion() -> None:
    v1 = H.SendMessageRequestHeader(
        producer_group="pg",
        topic="T",
        queue_id=-1,
        sys_flag=1,
        born_timestamp=5,
        flag=7,
        reconsume_times=2,
        unit_mode=False,
        max_reconsume_times=16,
        batch=True,
        bname="b",
    )
    v2 = H.SendMessageRequestHeaderV2.from_v1(v1)
    assert v2.to_ext_fields() == {
        "a": "pg",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "-1",
        "f": "1",
        "g": "5",
        "h": "7",
        "j": "2",
        "k": "false",
        "l": "16",
        "m": "true",
        "n": "b",
    }
    assert v2.to_v1() == v1
    assert H.SendMessageRequestHeaderV2.from_ext_fields(v2.to_ext_fields()) == v2


def test_missing_required_raises_header_error() -> None:
    ext = H.PullMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=0, queue_offset=5, max_msg_nums=32
    ).to_ext_fields()
    del ext["queueOffset"]
    with pytest.raises(HeaderError, match="queueOffset"):
        H.PullMessageRequestHeader.from_ext_fields(ext)


def test_java_spellings() -> None:
    assert H.UnregisterClientRequestHeader(client_id="c").to_ext_fields() == {"clientID": "c"}
    assert H.GetConsumerRunningInfoRequestHeader(consumer_group="g", client_id="c").to_ext_fields() == {
        "consumerGroup": "g",
        "clientId": "c",
        "jstackEnable": "false",
    }
    r = H.ResetOffsetRequestHeader.from_ext_fields({"group": "g", "topic": "t", "timestamp": "9", "isForce": "TRUE"})
    assert (r.is_force, r.queue_id, r.timestamp) == (True, -1, 9)
    g = H.GetRouteInfoRequestHeader(topic="T", accept_standard_json_only=True)
    assert g.to_ext_fields() == {"topic": "T", "acceptStandardJsonOnly": "true"}


def test_boolean_parsing_is_java_like() -> None:
    h = H.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "1", "committed": "yes"})
    assert h.committed is False
    assert H.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "1"}).committed is True


def test_unknown_keys_ignored_and_base_keys_read() -> None:
    h = H.QueryConsumerOffsetRequestHeader.from_ext_fields(
        {"consumerGroup": "g", "topic": "T", "queueId": "2", "bname": "b", "lo": "false", "x": "y"}
    )
    assert (h.bname, h.lo, h.queue_id) == ("b", False, 2)


def test_every_header_round_trips_and_is_frozen_slots() -> None:
    classes = _all_header_classes()
    assert len(classes) >= 50
    for cls in classes:
        kwargs: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            kind = cls._field_specs()
            assert kind is not None
            hint = str(f.type)
            if "bool" in hint:
                kwargs[f.name] = True
            elif "int" in hint:
                kwargs[f.name] = -123456789012
            else:
                kwargs[f.name] = f"v-{f.name}"
        h = cls(**kwargs)
        ext = h.to_ext_fields()
        assert set(ext) == {f.metadata["wire"] for f in dataclasses.fields(cls)}, cls
        assert cls.from_ext_fields(ext) == h, cls
        assert not hasattr(h, "__dict__"), cls
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(h, dataclasses.fields(cls)[0].name, None)


def test_request_registry() -> None:
    reg = H.REQUEST_HEADERS
    assert reg[RequestCode.SEND_MESSAGE] is H.SendMessageRequestHeader
    assert reg[RequestCode.SEND_MESSAGE_V2] is H.SendMessageRequestHeaderV2
    assert reg[RequestCode.SEND_BATCH_MESSAGE] is H.SendMessageRequestHeaderV2
    assert reg[RequestCode.PULL_MESSAGE] is H.PullMessageRequestHeader
    assert reg[RequestCode.LITE_PULL_MESSAGE] is H.PullMessageRequestHeader
    assert reg[RequestCode.GET_ROUTEINFO_BY_TOPIC] is H.GetRouteInfoRequestHeader
    assert reg[RequestCode.INVOKE_BROKER_TO_RESET_OFFSET] is H.ResetOffsetRequestHeader
    for code, cls in reg.items():
        assert type(code) is int
        assert cls.REQUEST_CODE is not None


def test_required_number_that_does_not_parse_raises() -> None:
    with pytest.raises(HeaderError, match="queueId"):
        H.GetMinOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "x"})
    # an optional number that does not parse keeps its default (Java logs and leaves it)
    h = H.PullMessageResponseHeader.from_ext_fields(
        {"suggestWhichBrokerId": "0", "nextBeginOffset": "5", "minOffset": "0", "maxOffset": "9", "offsetDelta": "?"}
    )
    assert (h.next_begin_offset, h.max_offset, h.offset_delta) == (5, 9, None)


def test_values_of_unexpected_type_are_written_java_style() -> None:
    h = H.GetMaxOffsetRequestHeader(topic="T", queue_id=True, committed=1)  # type: ignore[arg-type]
    assert h.to_ext_fields() == {"topic": "T", "queueId": "true", "committed": "1"}
    r = H.RegisterBrokerRequestHeader(
        broker_name="b",
        broker_addr="1.2.3.4:10911",
        cluster_name="C",
        ha_server_addr="1.2.3.4:10912",
        broker_id=RequestCode.SEND_MESSAGE,
        zone_name="z",
    )
    ext = r.to_ext_fields()
    assert ext["brokerId"] == "10" and ext["__ZONE_NAME"] == "z" and ext["compressed"] == "false"
    assert ext["bodyCrc32"] == "0"


def test_every_code_in_the_brief_has_a_request_header() -> None:
    codes = [
        10,
        310,
        320,
        11,
        361,
        14,
        15,
        30,
        31,
        29,
        32,
        34,
        35,
        38,
        40,
        36,
        17,
        103,
        104,
        105,
        33,
        202,
        208,
        203,
        41,
        42,
        307,
        220,
        222,
    ]
    missing = [c for c in codes if c not in H.REQUEST_HEADERS]
    assert missing == []
    # response headers the brief asks for
    for cls in (
        H.SendMessageResponseHeader,
        H.PullMessageResponseHeader,
        H.QueryConsumerOffsetResponseHeader,
        H.GetMaxOffsetResponseHeader,
        H.GetMinOffsetResponseHeader,
        H.SearchOffsetResponseHeader,
        H.GetEarliestMsgStoretimeResponseHeader,
        H.RegisterBrokerResponseHeader,
    ):
        assert cls.REQUEST_CODE is None


def _header_strategy(cls: type[CommandHeader]) -> st.SearchStrategy[CommandHeader]:
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw: dict[str, st.SearchStrategy[object]] = {}
    for spec in cls._field_specs():
        if spec.kind is bool:
            strat: st.SearchStrategy[object] = st.booleans()
        elif spec.kind is int:
            strat = st.integers(-(2**63), 2**63 - 1)
        else:
            strat = st.text(max_size=20)
        # None only where the default is None: an absent key decodes to the field's default
        kw[spec.attr] = st.none() | strat if fields[spec.attr].default is None and not spec.required else strat
    return st.builds(cls, **kw)


@pytest.mark.parametrize("cls", _all_header_classes(), ids=lambda c: c.__name__)
def test_headers_round_trip_property(cls: type[CommandHeader]) -> None:
    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_header_strategy(cls))
    def check(h: CommandHeader) -> None:
        assert cls.from_ext_fields(h.to_ext_fields()) == h
        # and through a real frame in both header encodings
        for stype in SerializeType:
            cmd = RemotingCommand(code=1, ext_fields=h.to_ext_fields(), serialize_type=stype)
            dec = FrameDecoder()
            dec.feed(encode_frame(cmd))
            got = dec.next()
            assert got is not None
            if stype == SerializeType.JSON:
                assert cls.from_ext_fields(got.ext_fields) == h
            else:  # empty strings vanish in binary headers (Java 4.9+/5.x semantics)
                assert got.ext_fields == {k: v for k, v in h.to_ext_fields().items() if v != ""}

    check()


@pytest.mark.parametrize("cls", _all_header_classes()[:60], ids=lambda c: c.__name__)
def test_from_ext_fields_fuzz_raises_only_header_error(cls: type[CommandHeader]) -> None:
    wires = [sp.wire for sp in cls._field_specs()] or ["x"]

    @settings(max_examples=15, deadline=None)
    @given(st.dictionaries(st.sampled_from(wires), st.text(max_size=8)))
    def check(ext: dict[str, str]) -> None:
        try:
            h = cls.from_ext_fields(ext)
        except HeaderError:
            return
        assert isinstance(h, cls)

    check()


def _keyword_decoder(cls: type[CommandHeader]) -> object:
    """The reference decoder: present fields collected, then ``cls(**kw)`` (the dataclass
    ``__init__``), as generated by ``_keyword_from_ext``."""
    ns: dict[str, object] = {"_missing": base._missing, "_not_a_number": base._not_a_number}
    exec("\n".join(base._keyword_from_ext(cls._field_specs())), ns)
    return ns["from_ext"]


def _outcome(decode: object, cls: type[CommandHeader], ext: dict[str, str]) -> object:
    try:
        return decode(cls, ext)  # type: ignore[operator]
    except HeaderError as exc:
        return HeaderError, str(exc)


@pytest.mark.parametrize("cls", _all_header_classes(), ids=lambda c: c.__name__)
def test_direct_decoding_equals_the_dataclass_init(cls: type[CommandHeader]) -> None:
    specs = cls._field_specs()
    assert base._direct_from_ext(cls, specs, {}) is not None  # every header takes the direct path
    reference = _keyword_decoder(cls)
    values = st.text(max_size=6) | st.integers(-(2**70), 2**70).map(str) | st.sampled_from(["true", "TRUE", "x"])

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.dictionaries(st.sampled_from([sp.wire for sp in specs] or ["x"]), values))
    def check(ext: dict[str, str]) -> None:
        got = _outcome(cls._get_codec()[1], cls, ext)
        assert got == _outcome(reference, cls, ext)
        if isinstance(got, cls):
            assert hash(got) == hash(_outcome(reference, cls, ext))  # every slot set

    check()
