"""The gRPC endpoint's server: ``grpc.aio`` serving :class:`~.service.MessagingService` on one
port, over a remoting cluster reached through its name server.

``rocketpipe serve --grpc-port`` runs it next to the embedded broker (Java's proxy "local"
mode); the same class in front of any remoting cluster is Java's "cluster" mode.
"""

from __future__ import annotations

import dataclasses
import logging

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc as sgrpc

from ..client import Admin, ClientConfig, Producer
from ..errors import InvalidArgumentError
from .service import MAX_MESSAGE_SIZE, MessagingService

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
        max_body_size: bytes (ProxyConfig ``maxMessageSize``, default 4 MiB).
        enable_topic_message_type_check: producers check a message's type against its topic's
            ``message.type`` attribute (ProxyConfig ``enableTopicMessageTypeCheck``, True). Off
            for brokers whose topics carry no such attribute (rocketpipe's own, today): FIFO,
            delay and transactional messages are then accepted on any topic.
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
    ) -> None:
        self.namesrv_addr = namesrv_addr
        self.host = host
        self.port = port
        self._config = config
        self._max_body_size = max_body_size
        self._type_check = enable_topic_message_type_check
        self._server: grpc.aio.Server | None = None
        self._producer: Producer | None = None
        self._admin: Admin | None = None
        #: the servicer while the server runs (its ``channels`` and ``transactions`` tables)
        self.service: MessagingService | None = None

    @property
    def address(self) -> str:
        """``host:port`` the SDKs use as their endpoint (after :meth:`start`)."""
        return f"{self.host}:{self.port}"

    async def start(self) -> int:
        """Start the remoting clients and the gRPC server; return the bound port.

        Raises:
            InvalidArgumentError: the port could not be bound.
        """
        config = (
            ClientConfig(namesrv_addr=self.namesrv_addr)
            if self._config is None
            else dataclasses.replace(self._config, namesrv_addr=self.namesrv_addr)
        )
        self._producer = Producer(
            PROXY_PRODUCER_GROUP,
            config=config,
            max_message_size=self._max_body_size,
            compress_msg_body_over_howmuch=1 << 30,  # bodies are stored as the SDK sent them
        )
        await self._producer.start()
        self._admin = Admin(config=config)
        server = grpc.aio.server()
        self.service = MessagingService(
            self._producer, self._admin, self._max_body_size, enable_topic_message_type_check=self._type_check
        )
        sgrpc.add_MessagingServiceServicer_to_server(self.service, server)
        bound: int = server.add_insecure_port(f"{self.host}:{self.port}")
        if bound == 0:
            await self._close_clients()
            raise InvalidArgumentError(f"cannot bind the gRPC endpoint to {self.host}:{self.port}")
        self.port = bound
        await server.start()
        self._server = server
        log.info(
            "gRPC endpoint (apache.rocketmq.v2.MessagingService) on %s, cluster %s", self.address, self.namesrv_addr
        )
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
