"""Request signing (L2): :class:`SessionCredentials`, :func:`sign_request`, :func:`cal_signature`.

The signature is HMAC-SHA1, keyed with the secret key, over the values (not the keys) of the
request's ext fields sorted by key, ``Signature`` left out, concatenated and UTF-8 encoded, then
the body bytes; base64 encoded. ``AccessKey`` (and ``SecurityToken`` when set) are added to the
ext fields before signing, so they are signed too. Mirrors ``AclClientRPCHook.doBeforeRequest``,
``AclUtils.combineRequestContent`` and ``AclSigner.calSignature`` (HmacSHA1, UTF-8).

Java sorts the keys with a ``TreeMap`` (UTF-16 code units); :func:`_sorted_keys` does the same.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from ..protocol.command import RemotingCommand

__all__ = [
    "ACCESS_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "SessionCredentials",
    "cal_signature",
    "combine_request_content",
    "sign_request",
]

#: Ext-field names (``SessionCredentials.ACCESS_KEY`` / ``SIGNATURE`` / ``SECURITY_TOKEN``).
ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """The access key, secret key and optional security token a client signs requests with.

    Mirrors ``org.apache.rocketmq.acl.common.SessionCredentials``. ``repr`` hides the secret.

    Raises:
        InvalidArgumentError: an empty access key or secret key.
    """

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __post_init__(self) -> None:
        from ..errors import InvalidArgumentError

        if not self.access_key or not self.secret_key:
            raise InvalidArgumentError("SessionCredentials need a non-empty access_key and secret_key")

    def __repr__(self) -> str:
        token = "None" if self.security_token is None else "'***'"
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key='***', security_token={token})"

    def sign(self, cmd: RemotingCommand) -> None:
        """Add ``AccessKey`` (+ ``SecurityToken``) and ``Signature`` to ``cmd.ext_fields`` in place."""
        sign_request(cmd, self)


def _sorted_keys(fields: Mapping[str, str]) -> list[str]:
    keys = list(fields)
    if all(k.isascii() for k in keys):
        keys.sort()
    else:  # Java's String.compareTo orders UTF-16 code units
        keys.sort(key=lambda k: k.encode("utf-16-be"))
    return keys


def signed_fields_text(fields: Mapping[str, str]) -> bytes:
    """The sorted ext-field values, ``Signature`` excluded, concatenated, UTF-8."""
    return "".join(v for k in _sorted_keys(fields) if k != SIGNATURE and (v := fields[k]) is not None).encode("utf-8")


def combine_request_content(fields: Mapping[str, str], body: bytes | memoryview | None) -> bytes:
    """Return the bytes that are signed: sorted ext-field values (``Signature`` excluded) + body.

    Mirrors ``AclUtils.combineRequestContent`` over ``new TreeMap<>(extFields)``.

    Args:
        fields: the ext fields (values of None are skipped, as Java's header-to-net does).
        body: the request body (None or empty = no body).
    """
    data = signed_fields_text(fields)
    if body:
        data += bytes(body)
    return data


def cal_signature(data: bytes, secret_key: str, body: bytes | memoryview | None = None) -> str:
    """Return base64(HMAC-SHA1(key=secret_key UTF-8, data + body)) (``AclSigner.calSignature``).

    ``body`` is fed to the MAC after ``data`` without concatenating (large message bodies).
    """
    mac = hmac.new(secret_key.encode("utf-8"), data, hashlib.sha1)
    if body:
        mac.update(body)
    return base64.b64encode(mac.digest()).decode("ascii")


def sign_request(cmd: RemotingCommand, credentials: SessionCredentials) -> None:
    """Sign ``cmd`` in place as ``AclClientRPCHook.doBeforeRequest`` does.

    Sets ``AccessKey``, ``SecurityToken`` (only when the credentials have one) and ``Signature``
    in ``cmd.ext_fields``. Signing again (a retry) replaces the old signature.
    """
    fields = cmd.ext_fields
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        fields[SECURITY_TOKEN] = credentials.security_token
    fields[SIGNATURE] = cal_signature(signed_fields_text(fields), credentials.secret_key, cmd.body)
