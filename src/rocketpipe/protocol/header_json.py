"""JSON header codec (serialize type 0), as fastjson writes ``RemotingCommand`` (L1, sans-IO).

Decoding tolerates any key order, absent/null/empty ``remark`` and ``extFields``, numeric or
named ``language``, and non-string ext values (stringified as Java would). Encoding emits the
Java key set with ``language`` as its enum name.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..compiled import load
from ..errors import ProtocolError
from .codes import LanguageCode, SerializeType
from .command import RemotingCommand

_LANG_BY_NAME = {m.name: m for m in LanguageCode}
_NAME_BY_VALUE = {int(m): m.name for m in LanguageCode}
#: decode_json_header's compiled fast path (None: not built), and the one in use (None: orjson only).
_compiled_built, _compiled = load(f"{__package__}._header", "decode")


def _language_name(lang: LanguageCode | int) -> str:
    """Enum name of a language; an unknown numeric language (decoded from a binary header) is OTHER."""
    name = _NAME_BY_VALUE.get(lang)  # members hash as their int value
    if name is not None:
        return name
    if isinstance(lang, LanguageCode):
        return lang.name
    return _NAME_BY_VALUE.get(int(lang), "OTHER")


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """Encode the header of ``cmd`` as JSON bytes (UTF-8)."""
    lang = cmd.language
    doc: dict[str, Any] = {
        "code": cmd.code,
        "extFields": cmd.ext_fields,
        "flag": cmd.flag,
        "language": _language_name(lang),
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


def decode_json_header(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode a JSON header.

    Headers as Java's fastjson and this package write them (string ``extFields`` values, known
    members) are parsed in one compiled call (``_header.decode``) when it is built; orjson and
    the checks below are the reference and decode the rest.

    Raises:
        ProtocolError: not a JSON object, a numeric field that is not an integer, or
            ``extFields`` that is not an object.
    """
    if _compiled is not None:
        fields = _compiled(data, _LANG_BY_NAME)
        if fields is not None:
            code, opaque, flag, remark, ext_fields, lang, version = fields
            return RemotingCommand(
                code=code,
                opaque=opaque,
                flag=flag,
                remark=remark,
                ext_fields=ext_fields,
                language=LanguageCode.OTHER if lang is None else lang,
                version=version,
                serialize_type=SerializeType.JSON,
            )
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"bad JSON header: {exc}") from None
    if type(doc) is not dict:
        raise ProtocolError("JSON header is not an object")
    get = doc.get
    code = get("code", 0)
    opaque = get("opaque", 0)
    flag = get("flag", 0)
    version = get("version", 0)
    # type() is int excludes bool (a subclass of int) in one test
    if type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int:
        raise ProtocolError("JSON header code/opaque/flag/version is not an integer")
    lang_raw = get("language")
    language: LanguageCode | int
    if type(lang_raw) is str:
        language = _LANG_BY_NAME.get(lang_raw, LanguageCode.OTHER)
    elif type(lang_raw) is int:
        language = lang_raw
    else:
        language = LanguageCode.OTHER
    remark = get("remark")
    if remark is not None and type(remark) is not str:
        remark = _ext_value(remark)
    if remark == "":
        remark = None
    ext_raw = get("extFields")
    ext: dict[str, str]
    if type(ext_raw) is dict:
        ext = ext_raw  # orjson built a fresh dict: reuse it when every value is already a string
        for v in ext_raw.values():
            if type(v) is not str:
                ext = {k: _ext_value(x) for k, x in ext_raw.items() if x is not None}
                break
    elif ext_raw is None or ext_raw == "":
        ext = {}
    else:
        raise ProtocolError("JSON header extFields is not an object")
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
