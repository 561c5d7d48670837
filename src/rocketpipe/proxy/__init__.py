"""rocketpipe's gRPC endpoint: Apache RocketMQ 5's ``apache.rocketmq.v2.MessagingService``, as
Apache's proxy serves it, for the 5.x SDKs (Java ``rocketmq-client-java``, the official Python
``rocketmq-python-client``, Go, C++ …) (L3.5, next to console and spark).

The service translates every gRPC call into remoting calls made with rocketpipe's own client,
so the same code serves the embedded broker (``rocketpipe serve --grpc-port``) and any remoting
cluster. Message stubs: the generated modules ``rocketmq.grpc_protocol`` shipped by the
``rocketmq-python-client`` package (``pip install 'rocketpipe[grpc]'``).

Modules: :mod:`.convert` (gRPC message → remoting message, Java's hashing, statuses),
:mod:`.route` (topic route → message queues), :mod:`.channel` (the clients' Telemetry streams
and producer groups), :mod:`.transaction` (half messages, EndTransaction, check-backs),
:mod:`.service` (the servicer), :mod:`.server` (:class:`ProxyServer`), :mod:`.tls` (TLS of the
gRPC port), :mod:`.auth` (the SDKs' signatures checked, their calls signed as them).
"""

from __future__ import annotations

from .server import ProxyServer

__all__ = ["ProxyServer"]
