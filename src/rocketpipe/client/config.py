"""Client configuration (L3): :class:`ClientConfig`, shared by producers, consumers and admins.

A frozen dataclass with Java ``ClientConfig`` names in snake_case and Java defaults. Durations
are seconds (floats); :mod:`rocketpipe.client.rpc` converts them to wire milliseconds.
Imports only the standard library, :mod:`rocketpipe.errors`, :mod:`rocketpipe.acl`
(:class:`SessionCredentials`, re-exported here) and :mod:`rocketpipe.transport.tls`
(:class:`TlsClientConfig`, which checks the TLS settings); ``prometheus_client`` for typing only
(``metrics_registry``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from ..acl.signer import SessionCredentials
from ..errors import InvalidArgumentError
from ..transport.tls import TlsClientConfig

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["DEFAULT_INSTANCE_NAME", "ClientConfig", "SessionCredentials", "TlsClientConfig"]

#: ClientConfig.instanceName default (``rocketmq.client.name``).
DEFAULT_INSTANCE_NAME: Final = "DEFAULT"


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Settings of one client instance (connections, timers, identity).

    Mirrors ``org.apache.rocketmq.client.ClientConfig``.

    Attributes:
        namesrv_addr: ``;``-separated ``host:port`` list of name servers. Mirrors
            ``ClientConfig.namesrvAddr``.
        instance_name: part of the client id. ``"DEFAULT"`` is replaced by ``<pid>#<ns>`` when a
            runtime starts (``changeInstanceNameToPID``), so two clients in one process differ.
        client_ip: address put into the client id (``ClientConfig.clientIP``).
        unit_name: optional unit name appended to the client id.
        poll_name_server_interval: route refresh period in seconds (``pollNameServerInterval``,
            30 000 ms).
        heartbeat_broker_interval: heartbeat period in seconds (``heartbeatBrokerInterval``,
            30 000 ms).
        persist_consumer_offset_interval: offset flush period in seconds
            (``persistConsumerOffsetInterval``, 5 000 ms).
        pull_time_delay_when_exception: pull retry delay after an error, seconds
            (``pullTimeDelayMillsWhenException``, 1 000 ms).
        request_timeout: timeout of name-server and admin RPCs, seconds
            (``mqClientApiTimeout``, 3 000 ms).
        connect_timeout: TCP connect timeout, seconds (``connectTimeoutMillis``, 3 000 ms).
        trace_msg_batch_num: trace contexts per trace-dispatcher batch of a client with
            ``enable_msg_trace`` (``traceMsgBatchNum``, 10; the dispatcher caps it at 20).
        credentials: ACL 1.0 credentials; when set, every request this client sends is signed
            (``AccessKey``, ``SecurityToken``, ``Signature`` ext fields), as Java's
            ``AclClientRPCHook(new SessionCredentials(ak, sk))`` does. None: nothing is added.
        use_tls: every connection of this client (name servers and brokers) speaks TLS
            (``ClientConfig.useTLS``, ``-Dtls.enable=true``). Default False.
        tls_client_trust_cert_path: PEM CA certificates the servers' certificates must chain to
            (``tls.client.trustCertPath``; None: the system's CAs). The certificate must also
            name the host or IP connected to (``subjectAltName``).
        tls_client_cert_path: PEM client certificate for mutual TLS (``tls.client.certPath``).
        tls_client_key_path: its PEM private key (``tls.client.keyPath``; None: in the cert file).
        tls_client_key_password: password of an encrypted key (``tls.client.keyPassword``).
        tls_test_mode_enable: skip the server certificate and host name checks
            (``tls.test.mode.enable``; Java's default is true, rocketpipe's False).
        metrics: record the client metrics of the 5.x Java client (``rocketmq_send_cost_time``,
            ``rocketmq_delivery_latency``, ``rocketmq_await_time``, ``rocketmq_process_time``,
            ``rocketmq_consumer_cached_messages`` / ``_bytes``; see
            :mod:`rocketpipe.client.metrics`). Mirrors the 5.x client's metric switch (which its
            proxy turns on through telemetry settings). Default False: nothing is registered.
        metrics_registry: the ``prometheus_client.CollectorRegistry`` the samples go to; None:
            the global ``prometheus_client.REGISTRY`` (what ``start_http_server`` serves).

    Raises:
        InvalidArgumentError: a bad setting; a TLS file that does not exist. The TLS files are
            read when the client's first connection is made (a bad PEM raises then).
    """

    namesrv_addr: str
    instance_name: str = DEFAULT_INSTANCE_NAME
    client_ip: str = "127.0.0.1"
    unit_name: str | None = None
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    pull_time_delay_when_exception: float = 1.0
    request_timeout: float = 3.0
    connect_timeout: float = 3.0
    trace_msg_batch_num: int = 10
    credentials: SessionCredentials | None = None
    use_tls: bool = False
    tls_client_trust_cert_path: str | None = None
    tls_client_cert_path: str | None = None
    tls_client_key_path: str | None = None
    tls_client_key_password: str | None = None
    tls_test_mode_enable: bool = False
    metrics: bool = False
    metrics_registry: CollectorRegistry | None = None

    def __post_init__(self) -> None:
        if self.use_tls:
            self.tls_client_config()
        if not self.namesrv_addrs():
            raise InvalidArgumentError("namesrv_addr must name at least one 'host:port' name server")
        for name in (
            "poll_name_server_interval",
            "heartbeat_broker_interval",
            "persist_consumer_offset_interval",
            "request_timeout",
            "connect_timeout",
        ):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"{name} must be > 0 seconds")
        if self.trace_msg_batch_num < 1:
            raise InvalidArgumentError("trace_msg_batch_num must be >= 1")
        if self.metrics_registry is not None and not hasattr(self.metrics_registry, "register"):
            raise InvalidArgumentError("metrics_registry must be a prometheus_client.CollectorRegistry")
        if self.pull_time_delay_when_exception < 0:
            raise InvalidArgumentError("pull_time_delay_when_exception must be >= 0 seconds")

    def tls_client_config(self) -> TlsClientConfig | None:
        """The TLS settings of this client's connections (None without ``use_tls``).

        Raises:
            InvalidArgumentError: a named file does not exist, or a key without a certificate.
        """
        if not self.use_tls:
            return None
        return TlsClientConfig(
            trust_cert_path=self.tls_client_trust_cert_path,
            cert_path=self.tls_client_cert_path,
            key_path=self.tls_client_key_path,
            key_password=self.tls_client_key_password,
            test_mode_enable=self.tls_test_mode_enable,
        )

    def with_tls(self, tls: TlsClientConfig | None) -> ClientConfig:
        """Return a copy that connects with ``tls`` (``use_tls`` and the ``tls_*`` fields set from
        it), or this config unchanged when ``tls`` is None."""
        if tls is None:
            return self
        return replace(
            self,
            use_tls=True,
            tls_client_trust_cert_path=tls.trust_cert_path,
            tls_client_cert_path=tls.cert_path,
            tls_client_key_path=tls.key_path,
            tls_client_key_password=tls.key_password,
            tls_test_mode_enable=tls.test_mode_enable,
        )

    def namesrv_addrs(self) -> list[str]:
        """Return the name-server addresses, in configured order."""
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def client_id(self) -> str:
        """Return ``clientIP@instanceName[@unitName]`` (``ClientConfig.buildMQClientId``)."""
        cid = f"{self.client_ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid

    def with_pid_instance_name(self) -> ClientConfig:
        """Return a copy whose ``DEFAULT`` instance name is replaced by ``<pid>#<ns>``.

        Mirrors ``ClientConfig.changeInstanceNameToPID`` (Java appends ``System.nanoTime()``).
        """
        if self.instance_name != DEFAULT_INSTANCE_NAME:
            return self
        return replace(self, instance_name=f"{os.getpid()}#{time.monotonic_ns()}")
