"""JSON header codec (serialize type 0), as fastjson writes ``RemotingCommand`` (L1, sans-IO).

Decoding tolerates any key order, absent/null/empty ``remark`` and ``extFields``, numeric or
named ``language``, and non-string ext values (stringified as Java would). Encoding emits the
Java key set with ``language`` as its enum name.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import ProtocolError
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand

_LANG_BY_NAME = {m.name: m for m in LanguageCode}


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """Encode the header of ``cmd`` as JSON bytes (UTF-8)."""
    lang = cmd.language
    doc: dict[str, Any] = {
        "code": cmd.code,
        "extFields": cmd.ext_fields,
        "flag": cmd.flag,
        "language": lang.name if isinstance(lang, LanguageCode) else LanguageCode(lang).name,
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }
    if cmd.remark is not None:
        doc["remark"] = cmd.remark
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def _ext_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    """Decode a JSON header.

    Raises:
        ProtocolError: not a JSON object, or a required numeric field has the wrong type.
    """
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"bad JSON header: {exc}") from None
    if not isinstance(doc, dict):
        raise ProtocolError("JSON header is not an object")
    try:
        code = doc.get("code", 0)
        opaque = doc.get("opaque", 0)
        flag = doc.get("flag", 0)
        version = doc.get("version", 0)
        for name, v in (("code", code), ("opaque", opaque), ("flag", flag), ("version", version)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise ProtocolError(f"JSON header field {name} is not an integer")
        lang_raw = doc.get("language")
        language: LanguageCode | int
        if isinstance(lang_raw, str):
            language = _LANG_BY_NAME.get(lang_raw, LanguageCode.OTHER)
        elif isinstance(lang_raw, int) and not isinstance(lang_raw, bool):
            language = lang_raw
        else:
            language = LanguageCode.OTHER
        remark = doc.get("remark")
        if remark is not None and not isinstance(remark, str):
            remark = str(remark)
        if remark == "":
            remark = None
        ext_raw = doc.get("extFields")
        ext: dict[str, str] = {}
        if isinstance(ext_raw, dict):
            for k, v in ext_raw.items():
                if v is not None:
                    ext[str(k)] = _ext_value(v)
        elif ext_raw not in (None, ""):
            raise ProtocolError("JSON header extFields is not an object")
    except ProtocolError:
        raise
    except Exception as exc:  # pragma: no cover - defensive: any oddity is a protocol error
        raise ProtocolError(f"bad JSON header: {exc!r}") from None
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        language=language,
        version=version,
        serialize_type=SerializeType.JSON,
    )
