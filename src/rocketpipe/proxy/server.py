"""The gRPC endpoint's server: ``grpc.aio`` serving :class:`~.service.MessagingService` on one
port, over a remoting cluster reached through its name server.

``rocketpipe serve --grpc-port`` runs it next to the embedded broker (Java's proxy "local"
mode); the same class in front of any remoting cluster is Java's "cluster" mode. TLS:
:mod:`.tls`; the SDKs' credentials: :mod:`.auth`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc

from ..client import Admin, ClientConfig, Producer
from ..errors import InvalidArgumentError
from ..transport import TlsServerConfig
from .auth import AuthInterceptor, BrokerUsers, CallerSigner, CredentialSource
from .service import MAX_MESSAGE_SIZE, MessagingService
from .tls import check_grpc_tls, server_credentials

log = logging.getLogger(__name__)

#: The producer group of the endpoint's own remoting producer.
PROXY_PRODUCER_GROUP = "rocketpipe_grpc_proxy"


class ProxyServer:
    """``apache.rocketmq.v2.MessagingService`` on ``host:port`` (port 0: a free one).

    Use ``await start()`` / ``await close()`` (or ``async with``) inside a running event loop.

    Args:
        namesrv_addr: the remoting cluster's name server(s), ``host:port[;host:port]``.
        host: the address to bind, default 127.0.0.1.
        port: the port to bind (Apache's proxy default is 8081); 0 binds a free port.
        config: client settings of the endpoint's own remoting clients (credentials, TLS).
            Its ``credentials`` sign the endpoint's own requests (routes, heartbeats, and, with
            ``auth``, the user lookups of ``"brokers"``); None: unsigned.
        max_body_size: bytes (ProxyConfig ``maxMessageSize``, default 4 MiB).
        enable_topic_message_type_check: a message's type is checked against its topic's
            ``message.type`` attribute (NORMAL when unset) by the producers and by the endpoint
            (ProxyConfig ``enableTopicMessageTypeCheck``, True; the endpoint refuses a mismatch
            with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, :mod:`.message_type`). Off: FIFO, delay
            and transactional messages are accepted on any topic.
        tls_server: TLS of the gRPC port (:mod:`.tls`): None or mode ``disabled`` serves plain
            HTTP/2, ``enforcing`` TLS only (the SDKs' ``tls_enable=True``); ``permissive`` and
            ``need_client_auth="optional"`` are refused.
        auth: authenticate every call's ``authorization`` signature (:mod:`.auth`) against this
            source of secrets, or ``"brokers"`` (ACL 2.0 users read from the cluster's brokers
            with ``config.credentials``), and sign the remoting calls made for a call with the
            caller's credentials; None: calls are not authenticated and the endpoint signs
            everything with ``config.credentials``.

    Raises:
        InvalidArgumentError: ``tls_server`` settings the gRPC server cannot serve.
    """

    def __init__(
        self,
        namesrv_addr: str,
        host: str = "127.0.0.1",
        port: int = 8081,
        *,
        config: ClientConfig | None = None,
        max_body_size: int = MAX_MESSAGE_SIZE,
        enable_topic_message_type_check: bool = True,
        tls_server: TlsServerConfig | None = None,
        auth: CredentialSource | Literal["brokers"] | None = None,
    ) -> None:
        check_grpc_tls(tls_server)
        self.namesrv_addr = namesrv_addr
        self.host = host
        self.port = port
        self._config = config
        self._max_body_size = max_body_size
        self._type_check = enable_topic_message_type_check
        self._tls = tls_server if tls_server is not None and tls_server.enabled else None
        self._auth = auth
        self._server: grpc.aio.Server | None = None
        self._producer: Producer | None = None
        self._admin: Admin | None = None
        #: the servicer while the server runs (its ``channels`` and ``transactions`` tables)
        self.service: MessagingService | None = None

    @property
    def address(self) -> str:
        """``host:port`` the SDKs use as their endpoint (after :meth:`start`)."""
        return f"{self.host}:{self.port}"

    @property
    def tls_enabled(self) -> bool:
        """True when the port serves TLS."""
        return self._tls is not None

    async def start(self) -> int:
        """Start the remoting clients and the gRPC server; return the bound port.

        Raises:
            InvalidArgumentError: the port could not be bound, or a TLS file cannot be used.
        """
        credentials = None if self._tls is None else server_credentials(self._tls)  # before anything starts
        config = (
            ClientConfig(namesrv_addr=self.namesrv_addr)
            if self._config is None
            else dataclasses.replace(self._config, namesrv_addr=self.namesrv_addr)
        )
        if self._auth is not None:  # requests made for a call are signed with the caller's credentials
            config = dataclasses.replace(config, credentials=CallerSigner(config.credentials))
        self._producer = Producer(
            PROXY_PRODUCER_GROUP,
            config=config,
            max_message_size=self._max_body_size,
            compress_msg_body_over_howmuch=1 << 30,  # bodies are stored as the SDK sent them
        )
        await self._producer.start()
        self._admin = Admin(config=config)
        source: CredentialSource | None = BrokerUsers(self._admin) if isinstance(self._auth, str) else self._auth
        server = grpc.aio.server(interceptors=() if source is None else (AuthInterceptor(source),))
        self.service = MessagingService(
            self._producer, self._admin, self._max_body_size, enable_topic_message_type_check=self._type_check
        )
        sgrpc.add_MessagingServiceServicer_to_server(self.service, server)
        target = f"{self.host}:{self.port}"
        bound: int = (
            server.add_insecure_port(target) if credentials is None else server.add_secure_port(target, credentials)
        )
        if bound == 0:
            await self._close_clients()
            raise InvalidArgumentError(f"cannot bind the gRPC endpoint to {self.host}:{self.port}")
        self.port = bound
        await server.start()
        self._server = server
        log.info(
            "gRPC endpoint (apache.rocketmq.v2.MessagingService) on %s, cluster %s, tls=%s, authentication=%s",
            self.address, self.namesrv_addr, self.tls_enabled, source is not None,
        )  # fmt: skip
        return bound

    async def close(self, grace: float = 1.0) -> None:
        """Stop accepting calls, let running ones finish for ``grace`` seconds, stop the clients."""
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        await self._close_clients()

    async def _close_clients(self) -> None:
        self.service = None
        if self._producer is not None:
            await self._producer.close()
            self._producer = None
        if self._admin is not None:
            await self._admin.close()
            self._admin = None

    async def __aenter__(self) -> ProxyServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
