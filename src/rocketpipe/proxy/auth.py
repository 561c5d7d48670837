"""Authentication of the SDKs' gRPC calls, and their remoting calls signed as the SDK's user.

A RocketMQ 5 SDK with credentials sends, with every call, the metadata
``x-mq-date-time: 20250101T120000Z`` and
``authorization: MQv2-HMAC-SHA1 Credential=<ak>, SignedHeaders=x-mq-date-time, Signature=<hex>``,
the signature being hex(HMAC-SHA1(secret key, the date-time text, UTF-8)). When the endpoint has
a :class:`CredentialSource`, :class:`AuthInterceptor` checks it on every call, as Java 5.3.3's
proxy does (``AuthenticationPipeline`` → ``DefaultAuthenticationContextBuilder.build(Metadata,
…)`` → ``DefaultAuthenticationHandler``), and refuses a bad one with the call's own response
carrying ``Code.UNAUTHORIZED`` (40100) and Java's message (``ResponseBuilder.buildStatus``: an
``AuthenticationException`` is UNAUTHORIZED).

Authorization (simplified from Java): Java's proxy in cluster mode also authorizes each call
itself (``AuthorizationPipeline``, users and ACLs fetched from a broker) and then calls the
brokers signed with its own ``innerClientAuthenticationCredentials``. rocketpipe's endpoint
instead signs the remoting calls it makes for an authenticated call with that caller's
credentials (:data:`CALLER`, read by :class:`CallerSigner`), so the brokers' own ACL 1.0
(``plain_acl.yml`` permissions) or ACL 2.0 (users and ACLs) checks decide what the SDK's user may
do; their NO_PERMISSION is answered UNAUTHORIZED, the code Java's proxy gives an
``AuthorizationException`` (:func:`rocketpipe.proxy.convert.error_status`). The endpoint's own
background requests (route refresh, heartbeats, transaction check-back set-up) stay signed with
its own credentials, when it has some. Not done: Java's ``authenticationWhitelist`` and its
stateful strategy (a channel authenticated once); like Java, the date-time is not checked for
freshness.

Sources of the secret of an access key: :class:`StaticAccounts` (a mapping given to the
endpoint), :class:`AclFileAccounts` (an ACL 1.0 ``plain_acl.yml``, reloaded when it changes) and
:class:`BrokerUsers` (ACL 2.0 users read from a broker with AUTH_GET_USER, cached, as Java's
``ClusterMetadataService`` user cache).
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb

from ..acl import SessionCredentials
from ..acl.config import load_acl_file
from ..acl.errors import AclError
from ..acl.signer import sign_request
from ..client import Admin
from ..client.admin_acl import get_user
from ..errors import RocketMQError
from ..protocol.command import RemotingCommand

log = logging.getLogger(__name__)

__all__ = [
    "CALLER",
    "Account",
    "AclFileAccounts",
    "AuthInterceptor",
    "AuthenticationError",
    "BrokerUsers",
    "CallerSigner",
    "CredentialSource",
    "StaticAccounts",
    "authenticate",
    "parse_authorization",
    "signature_hex",
]

#: gRPC metadata keys (``GrpcConstants.AUTHORIZATION`` / ``DATE_TIME``).
AUTHORIZATION: Final = "authorization"
DATE_TIME: Final = "x-mq-date-time"
#: ``DefaultAuthenticationContextBuilder``'s items of the authorization header.
CREDENTIAL: Final = "Credential"
SIGNATURE: Final = "Signature"

#: The credentials of the SDK whose call is being served (None: the endpoint's own requests).
CALLER: ContextVar[SessionCredentials | None] = ContextVar("rocketpipe_proxy_caller", default=None)


class AuthenticationError(Exception):
    """A call refused by authentication; ``str()`` is Java's ``AuthenticationException`` message."""


@dataclass(frozen=True, slots=True)
class Account:
    """What a source knows of one access key: its secret, and whether it may sign in
    (an ACL 2.0 user whose ``userStatus`` is ``disable`` may not)."""

    secret_key: str
    enabled: bool = True


class CredentialSource(Protocol):
    """Where the endpoint finds the secret of an access key."""

    async def account(self, access_key: str) -> Account | None:
        """The account of ``access_key``, or None when there is none."""
        ...


class StaticAccounts:
    """Accounts given to the endpoint: ``{access key: secret key}``."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self._accounts = {ak: Account(sk) for ak, sk in secrets.items()}

    async def account(self, access_key: str) -> Account | None:
        """The account, or None for an unknown key."""
        return self._accounts.get(access_key)


class AclFileAccounts:
    """The accounts of an ACL 1.0 ``plain_acl.yml`` (:mod:`rocketpipe.acl.config`): the broker's
    file, so that an SDK signs with the same keys as a remoting client.

    The file is looked at (mtime and size) at most every ``reload_interval`` seconds and
    reloaded when it changed; a changed file that does not parse is logged and the previous
    accounts stay (as the broker's ``PlainPermissionManager``).

    Raises:
        AclError: the file is missing or malformed at construction.
    """

    def __init__(
        self, path: str | Path, *, reload_interval: float = 1.0, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = Path(path)
        self.reload_interval = reload_interval
        self._monotonic = monotonic
        self._stamp = self._file_stamp()
        self._accounts = load_acl_file(self.path).accounts
        self._next_look = monotonic() + reload_interval

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _reload_if_changed(self) -> None:
        now = self._monotonic()
        if now < self._next_look:
            return
        self._next_look = now + self.reload_interval
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self._accounts = load_acl_file(self.path).accounts
        except AclError as err:
            log.error("ACL file not reloaded by the gRPC endpoint, the previous accounts stay: %s", err)

    async def account(self, access_key: str) -> Account | None:
        """The account of ``access_key`` in the file, or None."""
        self._reload_if_changed()
        acc = self._accounts.get(access_key)
        return None if acc is None else Account(acc.secret_key)


class BrokerUsers:
    """ACL 2.0 users read from a master broker of the cluster (AUTH_GET_USER, 3004), signed with
    the endpoint's own credentials (a Super user), as Java's proxy does in cluster mode
    (``ProxyAuthenticationMetadataProvider`` → ``ClusterMetadataService``'s user cache).

    Args:
        admin: an admin client of the cluster, with the endpoint's credentials.
        cluster_name: the brokers asked (None: any cluster the name server knows).
        refresh_seconds: how long an answer (a user, or "no such user") is kept (Java's
            ``userCacheRefreshSecond``, 60).
        monotonic: the clock of the cache, seconds.
    """

    def __init__(
        self,
        admin: Admin,
        cluster_name: str | None = None,
        *,
        refresh_seconds: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.admin = admin
        self.cluster_name = cluster_name
        self.refresh_seconds = refresh_seconds
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, Account | None]] = {}

    async def account(self, access_key: str) -> Account | None:
        """The user named ``access_key``; None when the brokers know none.

        Raises:
            RocketMQError: no broker answered (the call is then refused with Java's
                "Authentication failed. Please verify the credentials and try again.").
        """
        now = self._monotonic()
        hit = self._cache.get(access_key)
        if hit is not None and now < hit[0]:
            return hit[1]
        token = CALLER.set(None)  # the endpoint's own request
        try:
            addrs = await self.admin.cluster_master_addrs(self.cluster_name)
            info = await get_user(self.admin, addrs[0], access_key)
        finally:
            CALLER.reset(token)
        account = None
        if info is not None and info.password is not None:
            account = Account(info.password, (info.user_status or "enable").lower() != "disable")
        self._cache[access_key] = (now + self.refresh_seconds, account)
        return account


def _java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split(regex)`` for a one-character literal: trailing empty parts dropped."""
    if not text:
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def signature_hex(secret_key: str, date_time: str) -> str:
    """hex(HMAC-SHA1(secret key, date-time)), both UTF-8: what the SDKs send as ``Signature``."""
    return hmac.new(secret_key.encode("utf-8"), date_time.encode("utf-8"), hashlib.sha1).hexdigest()


def _metadata_value(metadata: Iterable[tuple[str, Any]], key: str) -> str | None:
    for k, v in metadata:
        if k == key:
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return None


def parse_authorization(metadata: Iterable[tuple[str, Any]]) -> tuple[str | None, bytes | None, str | None]:
    """``DefaultAuthenticationContextBuilder.build(Metadata, request)``: the user name, the
    signature (bytes, decoded from hex) and the signed date-time of a call's metadata; all None
    when there is no ``authorization``.

    Raises:
        AuthenticationError: ``datetime is null.``, ``authentication header is incorrect.``,
            ``authentication keyValues length is incorrect, actual length=N.``, ``authentication
            credential length is incorrect, actual length=0.``, ``create authentication context
            error.`` (a signature that is not hex), with Java's texts.
    """
    md = list(metadata)
    authorization = _metadata_value(md, AUTHORIZATION)
    if not authorization:
        return None, None, None
    date_time = _metadata_value(md, DATE_TIME)
    if not date_time:
        raise AuthenticationError("datetime is null.")
    scheme_and_rest = authorization.split(" ", 1)
    if len(scheme_and_rest) != 2:
        raise AuthenticationError("authentication header is incorrect.")
    username: str | None = None
    signature: bytes | None = None
    for key_value in _java_split(scheme_and_rest[1], ","):
        kv = key_value.strip().split("=", 1)
        if len(kv) != 2:
            raise AuthenticationError(f"authentication keyValues length is incorrect, actual length={len(kv)}.")
        item, value = kv
        if item == CREDENTIAL:
            credential = _java_split(value, "/")
            if not credential:
                raise AuthenticationError("authentication credential length is incorrect, actual length=0.")
            username = credential[0]
        elif item == SIGNATURE:
            try:
                signature = binascii.unhexlify(value)
            except (binascii.Error, ValueError):
                raise AuthenticationError("create authentication context error.") from None
    return username, signature, date_time


async def authenticate(metadata: Iterable[tuple[str, Any]], source: CredentialSource) -> SessionCredentials:
    """Check a call's signature (``DefaultAuthenticationHandler``); return the caller's credentials.

    Raises:
        AuthenticationError: with Java's messages: those of :func:`parse_authorization`, then
            ``username cannot be null.``, ``User:<u> is not found.``, ``User:<u> is disabled.``,
            ``check signature failed.``; ``Authentication failed. Please verify the credentials
            and try again.`` when the source failed.
    """
    username, signature, date_time = parse_authorization(metadata)
    if not username:
        raise AuthenticationError("username cannot be null.")
    try:
        account = await source.account(username)
    except (RocketMQError, OSError) as exc:
        log.warning("gRPC endpoint: cannot look up user %s: %s", username, exc)
        raise AuthenticationError("Authentication failed. Please verify the credentials and try again.") from None
    if account is None:
        raise AuthenticationError(f"User:{username} is not found.")
    if not account.enabled:
        raise AuthenticationError(f"User:{username} is disabled.")
    expected = binascii.unhexlify(signature_hex(account.secret_key, date_time or ""))
    if signature is None or not hmac.compare_digest(expected, signature):
        raise AuthenticationError("check signature failed.")
    return SessionCredentials(username, account.secret_key)


class CallerSigner(SessionCredentials):
    """The signer of the endpoint's remoting clients (given as ``ClientConfig.credentials``):
    signs a request with :data:`CALLER` when it is sent for an authenticated SDK call, else with
    ``own`` (the endpoint's credentials), else not at all."""

    __slots__ = ("own",)
    own: SessionCredentials | None

    def __init__(self, own: SessionCredentials | None) -> None:
        base = own if own is not None else SessionCredentials("rocketpipe-grpc-endpoint", "-")
        super().__init__(base.access_key, base.secret_key, base.security_token)
        object.__setattr__(self, "own", own)  # the frozen dataclass base refuses plain assignment

    def sign(self, cmd: RemotingCommand) -> None:
        """Sign ``cmd`` with the caller's credentials, or the endpoint's, or leave it unsigned."""
        creds = CALLER.get() or self.own
        if creds is not None:
            sign_request(cmd, creds)


def _unauthorized(response_type: Any, message: str) -> Any:
    return response_type(status=pb.Status(code=pb.Code.UNAUTHORIZED, message=message))


def _response_type(method: str) -> Any:
    """The response message class of ``/apache.rocketmq.v2.MessagingService/<Name>``."""
    name = method.rsplit("/", 1)[-1]
    desc = spb.DESCRIPTOR.services_by_name["MessagingService"].methods_by_name.get(name)
    return None if desc is None else getattr(spb, desc.output_type.name)


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Authenticates every ``MessagingService`` call with ``source`` before its handler runs.

    A refused call gets its response type with ``status`` UNAUTHORIZED and Java's message (a
    stream gets one such response and ends); an accepted one runs with :data:`CALLER` set to
    the SDK's credentials.
    """

    def __init__(self, source: CredentialSource) -> None:
        self.source = source

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        """Wrap the method's handler with the authentication check."""
        handler = await continuation(details)
        response_type = _response_type(details.method)
        if handler is None or response_type is None:
            return handler
        metadata = tuple(details.invocation_metadata or ())
        source = self.source

        async def check() -> tuple[SessionCredentials | None, str]:
            try:
                return await authenticate(metadata, source), ""
            except AuthenticationError as exc:
                return None, str(exc)

        kwargs = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: Any) -> Any:
                creds, error = await check()
                if creds is None:
                    return _unauthorized(response_type, error)
                token = CALLER.set(creds)
                try:
                    return await inner_uu(request, context)
                finally:
                    CALLER.reset(token)

            return grpc.unary_unary_rpc_method_handler(unary_unary, **kwargs)
        if handler.unary_stream is not None:
            inner_us = handler.unary_stream

            async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
                creds, error = await check()
                if creds is None:
                    yield _unauthorized(response_type, error)
                    return
                CALLER.set(creds)  # the call's own task and context
                async for response in inner_us(request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(unary_stream, **kwargs)
        if handler.stream_stream is not None:
            inner_ss = handler.stream_stream

            async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
                creds, error = await check()
                if creds is None:
                    yield _unauthorized(response_type, error)
                    return
                CALLER.set(creds)
                async for response in inner_ss(requests, context):
                    yield response

            return grpc.stream_stream_rpc_method_handler(stream_stream, **kwargs)
        return handler  # no client-streaming call in MessagingService
