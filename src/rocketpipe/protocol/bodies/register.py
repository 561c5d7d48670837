"""Broker-registration bodies (L1, sans-IO): ``DataVersion``, ``TopicConfig``,
``TopicConfigSerializeWrapper`` and ``RegisterBrokerBody`` (JSON and the zlib "compressed" form).

Mirrors ``common/TopicConfig``, ``remoting/protocol/DataVersion`` and
``body/{TopicConfigSerializeWrapper,TopicConfigAndMappingSerializeWrapper,RegisterBrokerBody}``.
"""

from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from ...errors import ProtocolError
from . import javajson as jj

__all__ = ["DataVersion", "RegisterBrokerBody", "TopicConfig", "TopicConfigSerializeWrapper"]

#: MQVersion.V5_0_0: compressed bodies carry the topic-queue-mapping section from this version on.
_V5_0_0 = 413


@dataclass(slots=True)
class DataVersion:
    """Version stamp of a broker's topic table (Java ``DataVersion``).

    Equality (all three fields) is what the name server compares.

    Attributes:
        state_version: 5.x state version.
        timestamp: ms since the epoch of the last change.
        counter: change counter (an AtomicLong in Java, a number on the wire).
    """

    state_version: int = 0
    timestamp: int = field(default_factory=lambda: int(time.time() * 1000))
    counter: int = 0

    def next_version(self, now_ms: int | None = None) -> DataVersion:
        """Return the bumped version (Java ``nextVersion``: counter + 1, timestamp = now)."""
        return DataVersion(self.state_version, int(time.time() * 1000) if now_ms is None else now_ms, self.counter + 1)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp}

    @classmethod
    def from_obj(cls, d: Any) -> DataVersion:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(jj.as_int(d.get("stateVersion")), jj.as_int(d.get("timestamp")), jj.as_int(d.get("counter")))

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> DataVersion:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))


@dataclass(slots=True)
class TopicConfig:
    """A topic's configuration on a broker (Java ``TopicConfig``).

    Attributes:
        topic_name: topic.
        read_queue_nums: readable queues (Java default 16).
        write_queue_nums: writable queues (Java default 16).
        perm: PermName bits (default 6 = read|write).
        topic_filter_type: ``SINGLE_TAG`` or ``MULTI_TAG``.
        topic_sys_flag: TopicSysFlag bits.
        order: order topic.
        attributes: 5.x attributes.
    """

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "attributes": self.attributes,
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_obj(cls, d: Any) -> TopicConfig:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            topic_name=jj.as_str(d.get("topicName"), "") or "",
            read_queue_nums=jj.as_int(d.get("readQueueNums"), 16),
            write_queue_nums=jj.as_int(d.get("writeQueueNums"), 16),
            perm=jj.as_int(d.get("perm"), 6),
            topic_filter_type=jj.as_str(d.get("topicFilterType"), "SINGLE_TAG") or "SINGLE_TAG",
            topic_sys_flag=jj.as_int(d.get("topicSysFlag")),
            order=jj.as_bool(d.get("order")),
            attributes={str(k): jj.as_str(v, "") or "" for k, v in jj.as_dict(d.get("attributes")).items()},
        )

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> TopicConfig:
        """Decode JSON.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))

    def encode_text(self) -> str:
        """The space-separated text form of compressed registrations (Java ``TopicConfig.encode``):
        ``name read write perm filterType attributesJson`` (no sys flag, no order)."""
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} "
            f"{self.topic_filter_type} {jj.dumps(self.attributes).decode()}"
        )

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        """Parse the text form (Java ``TopicConfig.decode``); unparsable attributes are ignored.

        Raises:
            ProtocolError: fewer than 5 fields or non-numeric counts.
        """
        parts = text.split(" ")
        if len(parts) < 5:
            raise ProtocolError(f"bad topic config text {text!r}")
        try:
            tc = cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4])
        except ValueError:
            raise ProtocolError(f"bad topic config text {text!r}") from None
        if len(parts) >= 6:
            try:
                attrs = jj.loads(parts[5])
                if isinstance(attrs, dict):
                    tc.attributes = {str(k): str(v) for k, v in attrs.items()}
            except ProtocolError:
                pass
        return tc


@dataclass(slots=True)
class TopicConfigSerializeWrapper:
    """A broker's topic table (Java ``TopicConfigSerializeWrapper`` / 5.x
    ``TopicConfigAndMappingSerializeWrapper``).

    Attributes:
        topic_config_table: topic -> config.
        data_version: version of the table.
        topic_queue_mapping_info_map: 5.x static topics, parsed JSON (normally empty).
        topic_queue_mapping_detail_map: 5.x static topics, parsed JSON (normally empty).
        mapping_data_version: 5.x, or None.
    """

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    topic_queue_mapping_info_map: dict[str, Any] = field(default_factory=dict)
    topic_queue_mapping_detail_map: dict[str, Any] = field(default_factory=dict)
    mapping_data_version: DataVersion | None = None

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        d: dict[str, Any] = {"dataVersion": self.data_version.to_obj()}
        if self.mapping_data_version is not None:
            d["mappingDataVersion"] = self.mapping_data_version.to_obj()
        d["topicConfigTable"] = {k: v.to_obj() for k, v in self.topic_config_table.items()}
        d["topicQueueMappingDetailMap"] = self.topic_queue_mapping_detail_map
        d["topicQueueMappingInfoMap"] = self.topic_queue_mapping_info_map
        return d

    @classmethod
    def from_obj(cls, d: Any) -> TopicConfigSerializeWrapper:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        mdv = d.get("mappingDataVersion")
        return cls(
            topic_config_table={
                str(k): TopicConfig.from_obj(v) for k, v in jj.as_dict(d.get("topicConfigTable")).items()
            },
            data_version=DataVersion.from_obj(d.get("dataVersion")),
            topic_queue_mapping_info_map=jj.as_dict(d.get("topicQueueMappingInfoMap")),
            topic_queue_mapping_detail_map=jj.as_dict(d.get("topicQueueMappingDetailMap")),
            mapping_data_version=DataVersion.from_obj(mdv) if isinstance(mdv, dict) else None,
        )

    def encode(self) -> bytes:
        """Encode as JSON (body of GET_ALL_TOPIC_CONFIG)."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> TopicConfigSerializeWrapper:
        """Decode JSON.

        Raises:
            ProtocolError: the body is not JSON.
        """
        return cls.from_obj(jj.loads(data))


_I32 = struct.Struct(">i")


@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER request body (Java ``RegisterBrokerBody``).

    Attributes:
        topic_config_serialize_wrapper: the broker's topics and their DataVersion.
        filter_server_list: filter servers (obsolete; empty).
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(default_factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "filterServerList": self.filter_server_list,
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_obj(),
        }

    def encode(self, compressed: bool = False, version: int = _V5_0_0) -> bytes:
        """Encode as JSON, or in the zlib "compressed" form when ``compressed`` (header
        ``compressed=true``).

        Args:
            compressed: use the compressed form.
            version: the request's version; >= 413 (V5_0_0) adds the mapping section.
        """
        if not compressed:
            return jj.dumps(self.to_obj())
        w = self.topic_config_serialize_wrapper
        parts: list[bytes] = []

        def blob(b: bytes) -> None:
            parts.append(_I32.pack(len(b)))
            parts.append(b)

        blob(w.data_version.encode())
        parts.append(_I32.pack(len(w.topic_config_table)))
        for tc in w.topic_config_table.values():
            blob(tc.encode_text().encode())
        blob(jj.dumps(self.filter_server_list))
        if version >= _V5_0_0:
            parts.append(_I32.pack(len(w.topic_queue_mapping_info_map)))
            for info in w.topic_queue_mapping_info_map.values():
                blob(jj.dumps(info))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def from_obj(cls, d: Any) -> RegisterBrokerBody:
        """Build from a parsed bean."""
        d = jj.as_dict(d)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper.from_obj(d.get("topicConfigSerializeWrapper")),
            filter_server_list=[x for x in jj.as_list(d.get("filterServerList")) if isinstance(x, str)],
        )

    @classmethod
    def decode(cls, data: bytes | memoryview, compressed: bool = False, version: int = _V5_0_0) -> RegisterBrokerBody:
        """Decode the JSON or (``compressed``) zlib form.

        Args:
            data: the request body.
            compressed: the header's ``compressed`` flag.
            version: the request's version (>= 413: the mapping section follows).

        Raises:
            ProtocolError: malformed JSON, bad zlib stream or truncated sections.
        """
        if not compressed:
            return cls.from_obj(jj.loads(data))
        try:
            raw = zlib.decompress(bytes(data))
        except zlib.error as exc:
            raise ProtocolError(f"bad compressed register body: {exc}") from None
        mv = memoryview(raw)
        pos = 0

        def read_int() -> int:
            nonlocal pos
            if pos + 4 > len(mv):
                raise ProtocolError("compressed register body truncated")
            (v,) = _I32.unpack_from(mv, pos)
            pos += 4
            return int(v)

        def read_blob() -> bytes:
            nonlocal pos
            n = read_int()
            if n < 0 or pos + n > len(mv):
                raise ProtocolError("compressed register body truncated")
            b = bytes(mv[pos : pos + n])
            pos += n
            return b

        def text(b: bytes) -> str:
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError:
                raise ProtocolError("compressed register body is not UTF-8") from None

        w = TopicConfigSerializeWrapper(data_version=DataVersion.decode(read_blob()))
        for _ in range(read_int()):
            tc = TopicConfig.decode_text(text(read_blob()))
            w.topic_config_table[tc.topic_name] = tc
        fsl = jj.loads(read_blob())
        if version >= _V5_0_0 and pos < len(mv):
            for _ in range(read_int()):
                info = jj.as_dict(jj.loads(read_blob()))
                w.topic_queue_mapping_info_map[str(info.get("topic"))] = info
        return cls(w, [x for x in jj.as_list(fsl) if isinstance(x, str)])
