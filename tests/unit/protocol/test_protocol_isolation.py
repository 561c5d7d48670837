"""Layering and consistency: protocol/ is sans-IO; errors' code table matches ResponseCode."""

from __future__ import annotations

import json
import subprocess
import sys

from rocketpipe import errors
from rocketpipe.protocol.codes import RequestCode, ResponseCode

_PROBE = """
import json, sys
import rocketpipe.protocol
import rocketpipe.protocol.codes, rocketpipe.protocol.command, rocketpipe.protocol.frame
import rocketpipe.protocol.header_json, rocketpipe.protocol.header_binary, rocketpipe.protocol.message
import rocketpipe.protocol.compression, rocketpipe.protocol.sysflag
import rocketpipe.protocol.headers, rocketpipe.protocol.bodies
print(json.dumps(sorted(m for m in ("asyncio", "socket", "threading", "selectors", "ssl") if m in sys.modules)))
"""


def test_importing_protocol_pulls_in_no_io_modules() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, timeout=60)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "asyncio" not in loaded
    assert "socket" not in loaded
    assert "threading" not in loaded  # protocol/ is sans-IO and lock-free


def _norm(s: str) -> str:
    return s.replace("_", "").lower()


def test_error_codes_match_response_codes() -> None:
    assert errors._BY_CODE
    for code, cls in errors._BY_CODE.items():
        rc = ResponseCode(code)  # raises ValueError for an unknown code
        if cls is errors.SubscriptionError:
            assert rc.name.startswith(("SUBSCRIPTION_", "FILTER_DATA_")), rc
            continue
        assert cls.code == code, cls
        assert _norm(cls.__name__) in (_norm(rc.name), _norm(rc.name) + "error"), (cls, rc)
    for code in errors.RETRY_RESPONSE_CODES:
        ResponseCode(code)


def test_code_enums_have_unique_values() -> None:
    for enum in (RequestCode, ResponseCode):
        values = [m.value for m in enum]
        assert len(values) == len(set(values))
    assert RequestCode.SEND_MESSAGE_V2 == 310 and RequestCode.LITE_PULL_MESSAGE == 361
    assert ResponseCode.GO_AWAY == 1500 and ResponseCode.PULL_OFFSET_MOVED == 21
