"""Broker configuration (L3): :class:`BrokerConfig`, a frozen dataclass with Java defaults.

Names follow ``org.apache.rocketmq.common.BrokerConfig`` and, for the store-related keys the
broker forwards to :class:`rocketpipe.store.StoreConfig`, ``MessageStoreConfig``. Durations
keep Java's millisecond units (``*_ms`` / ``*_mills`` as in Java); the broker converts them to
seconds where it waits on the event loop. Imports the stdlib, :mod:`rocketpipe.errors`,
:mod:`rocketpipe.acl.signer` (``SessionCredentials``) and :mod:`rocketpipe.transport.tls` (the
TLS settings' dataclasses).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from ..acl.signer import SessionCredentials
from ..errors import InvalidArgumentError
from ..transport.tls import TlsClientConfig as TlsClientConfig  # re-exported for the CLI
from ..transport.tls import TlsServerConfig as TlsServerConfig  # re-exported for the CLI

#: MessageStoreConfig.messageDelayLevel
DEFAULT_MESSAGE_DELAY_LEVEL: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: MessageStoreConfig.maxMessageSize (4 MiB)
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024


def init_user_credentials(text: str) -> tuple[str, str]:
    """(username, password) of an ``initAuthenticationUser`` JSON object.

    Raises:
        InvalidArgumentError: not a JSON object with non-blank ``username`` and ``password``.
    """
    try:
        obj = json.loads(text)
    except ValueError as err:
        raise InvalidArgumentError(f"init_authentication_user is not JSON: {err}") from None
    if not isinstance(obj, dict):
        raise InvalidArgumentError("init_authentication_user must be a JSON object")
    username, password = obj.get("username"), obj.get("password")
    if not isinstance(username, str) or not username.strip() or not isinstance(password, str) or not password.strip():
        raise InvalidArgumentError('init_authentication_user needs {"username": ..., "password": ...}')
    return username, password


def _default_store_dir() -> Path:
    return Path.home() / "store"


@dataclass(frozen=True, kw_only=True)
class BrokerConfig:
    """Configuration of one embedded broker (Java ``BrokerConfig`` + a few store keys).

    Attributes:
        broker_name: broker group name (``brokerName``).
        broker_cluster_name: cluster name (``brokerClusterName``).
        broker_id: 0 = master (the only role implemented).
        host: address the broker listens on and advertises (``brokerIP1``).
        listen_port: TCP port; 0 picks a free one (``listenPort``, Java default 10911).
        namesrv_addr: ``"host:port[;host:port]"`` of name servers, or None (no registration).
        store_dir: root of the store and of ``config/*.json`` (``storePathRootDir``).
        flush_disk_type: ``"ASYNC_FLUSH"`` or ``"SYNC_FLUSH"`` (group commit).
        broker_permission: PermName bits of the broker (6 = read + write).
        auto_create_topic_enable: keep TBW102 with PERM_INHERIT so sends auto-create topics.
        auto_create_subscription_group: create unknown groups on first use.
        default_topic_queue_nums: queues of TBW102 (``defaultTopicQueueNums``).
        long_polling_enable: hold PULL_NOT_FOUND pulls up to the client's suspend timeout.
        short_polling_time_mills: hold time when long polling is off (ms).
        long_polling_check_interval_ms: period of the held-pull sweep (5 000 ms in Java).
        notify_consumer_ids_changed_enable: push NOTIFY_CONSUMER_IDS_CHANGED on membership change.
        channel_expired_timeout_ms: drop client channels without a heartbeat for this long (ms).
        client_housekeeping_interval_ms: period of the channel-expiry scan (ms).
        register_name_server_period_ms: period of REGISTER_BROKER (ms).
        register_broker_timeout_mills: timeout of one REGISTER_BROKER request (ms).
        flush_consumer_offset_interval_ms: period of consumerOffset.json persistence (ms).
        flush_delay_offset_interval_ms: period of delayOffset.json persistence (ms).
        message_delay_level: delay levels, tokens with units s/m/h/d.
        max_message_size: largest accepted body, bytes (``maxMessageSize``).
        sync_flush_timeout_ms: SYNC_FLUSH wait before FLUSH_DISK_TIMEOUT (``syncFlushTimeout``).
        flush_interval_commit_log_ms: period of the periodic commit-log flush (ms; ``flushIntervalCommitLog``).
        flush_commit_log_least_pages: dirty 4 KiB pages needed before a periodic commit-log flush
            (``flushCommitLogLeastPages``).
        flush_commit_log_thorough_interval_ms: flush the commit log regardless of dirty pages at
            least this often (ms; ``flushCommitLogThoroughInterval``).
        flush_interval_consume_queue_ms: period of the consume-queue + checkpoint flush (ms;
            ``flushIntervalConsumeQueue``). The SYNC_FLUSH group commit syncs the commit log only.
        mapped_file_size_commit_log: commit-log segment size in bytes, or None for the store's default.
        mapped_file_size_consume_queue: consume-queue segment size in bytes, or None.
        max_transfer_count_on_message_in_memory: most messages one pull returns
            (``maxTransferCountOnMessageInMemory``, 32).
        max_transfer_bytes_on_message_in_memory: most bytes one pull returns
            (``maxTransferBytesOnMessageInMemory``, 256 KiB).
        message_index_enable: keep the key index used by QUERY_MESSAGE (``messageIndexEnable``, true).
        init_pop_offset_by_check_msg_in_mem: a POP group new to a queue, asking to start at the
            end (``ConsumeInitMode.MAX``), starts at offset 0 instead while the queue still
            begins at 0 and its first message is in memory (``initPopOffsetByCheckMsgInMem``, true).
        max_hash_slot_num: hash slots of one key-index file (``maxHashSlotNum``, 5 000 000).
        max_index_num: entries of one key-index file (``maxIndexNum``, 20 000 000).
        region_id: returned as ``MSG_REGION`` on send responses.
        trace_on: returned as ``TRACE_ON`` on send responses.
        enable_property_filter: accept SQL92 subscriptions (``enablePropertyFilter``, default
            false: SQL92 pulls answer SYSTEM_ERROR and CHECK_CLIENT_CONFIG rejects them).
        disk_max_used_space_ratio: percent of the store's filesystem past which expired files
            are deleted before their time (``diskMaxUsedSpaceRatio``, 75).
        disk_space_warning_level_ratio: percent of the filesystem past which puts are refused as
            disk full (5.x ``diskSpaceWarningLevelRatio``, 90; 4.x had the system property 0.90;
            clamped to 35..90 as Java does).
        disk_space_clean_forcibly_ratio: percent past which the oldest files are deleted even when
            not expired, if ``clean_file_forcibly_enable`` (5.x ``diskSpaceCleanForciblyRatio``, 85;
            clamped to 30..85).
        file_reserved_time: hours a commit-log file is kept after its last write (``fileReservedTime``, 72).
        trace_topic_enable: create the trace topic at start (``traceTopicEnable``, false).
        msg_trace_topic_name: its name (``msgTraceTopicName``, ``RMQ_SYS_TRACE_TOPIC``).
        store_reply_message_enable: also store the replies pushed to requesters
            (``storeReplyMessageEnable``).
        timer_wheel_enable: accept 5.x timer messages (``timerWheelEnable``).
        timer_precision_ms: delivery-time step of timer messages (``timerPrecisionMs``, 1 000).
        timer_max_delay_sec: furthest delivery of a timer message, s (``timerMaxDelaySec``, 3 days).
        recall_message_enable: serve RECALL_MESSAGE, the recall of a waiting timer message
            (``recallMessageEnable``, off as in Java 5.3.3).
        allow_recall_when_broker_not_writeable: recall also while the broker's permission has
            no write bit (``allowRecallWhenBrokerNotWriteable``, on).
        transaction_timeout: ms a half message waits for its producer's decision before the
            first check-back (``transactionTimeOut``, 6 000).
        transaction_check_max: check-backs of one half before it is discarded to
            ``TRANS_CHECK_MAX_TIME_TOPIC`` (``transactionCheckMax``, 15).
        transaction_check_interval: ms between check passes (``transactionCheckInterval``;
            30 000 as 5.x, 60 000 in 4.9).
        reject_transaction_message: refuse half messages with NO_PERMISSION
            (``rejectTransactionMessage``).
        delete_when: hours of the day, ``"04"`` or ``"01;04"``, at which expired files are deleted
            (``deleteWhen``).
        clean_file_forcibly_enable: delete unexpired files when the disk is nearly full
            (``cleanFileForciblyEnable``).
        delete_commit_log_files_interval: pause between two deleted commit-log files, ms
            (5.x ``deleteCommitLogFilesInterval``, 100; 4.x ``deletePhysicFilesInterval``).
        clean_resource_interval: period of the clean service, ms (``cleanResourceInterval``, 10 000).
        destroy_mapped_file_interval_forcibly: how long a deleted file may stay mapped by readers, ms
            (``destroyMapedFileIntervalForcibly``, 120 000).
        server_channel_max_idle_time_seconds: close a connection that sent nothing for this long, s
            (``serverChannelMaxIdleTimeSeconds``, 120; 0 = never).
        server_max_connections: accepted connections at once; more are closed at accept.
        server_max_pending_frame_bytes: bytes one connection may buffer for an incomplete frame
            (a frame may be at most 16 MiB, Java's ``frameMaxLength``).
        server_max_pending_bytes_total: bytes all connections together may buffer for incomplete
            frames; past it the connection holding most is closed first.
        server_warning_interval_seconds: at most one warning line per cause per this many seconds
            (with the count of the events it stands for).
        recover_metadata: start even when a ``config/*.json`` file and its ``.bak`` are both
            unreadable (their state starts empty, the bad files are kept aside); without it the
            broker refuses to start.
        acl_enable: check every request against the ACL 1.0 rules of ``acl_file`` before its
            processor runs (``aclEnable``); denials answer NO_PERMISSION (16). See
            :class:`rocketpipe.acl.PlainPermissionManager`.
        acl_file: the plain_acl.yml path; reloaded when it changes. Default (with
            ``acl_enable``): ``$ROCKETMQ_HOME/conf/plain_acl.yml``, as Java.
        tls_server: TLS of the broker's listening port (Java's ``tls.server.*`` settings:
            ``mode`` disabled / permissive / enforcing, certificate, key, trust CA, client
            auth); default disabled. See :class:`rocketpipe.transport.TlsServerConfig`.
        tls_enable: the broker's own connections to the name servers speak TLS (Java:
            ``tls.enable``, read by ``BrokerOuterAPI``'s client). Default False.
        tls_client: the settings of those connections (``tls.client.*``,
            ``tls.test.mode.enable``); see :class:`rocketpipe.transport.TlsClientConfig`.
        inner_client_authentication_credentials: the broker signs the requests it sends itself
            (its registrations with the name servers) with these ACL credentials, for a name
            server that checks ACL (``NameServer(acl_enable=True)``; they need ``admin: true``).
            Java 5.3: ``innerClientAuthenticationCredentials``. None: unsigned. With ACL 2.0
            they are also created as a Super user at start when missing (Java's ``initUser``).
        authentication_enabled: ACL 2.0 (Java 5.3 ``authenticationEnabled``): every request must
            be signed by a known, enabled user (HMAC-SHA1 as ACL 1.0, AccessKey = username,
            secret = password). See :class:`rocketpipe.acl.AuthChecker`.
        authorization_enabled: ACL 2.0 (``authorizationEnabled``): every request is checked
            against the ACLs of its signer (Super users pass). With either ACL 2.0 switch on,
            ``acl_enable`` (ACL 1.0) is ignored, as Apache 5.3 ignores ``aclEnable``.
        authentication_whitelist, authorization_whitelist: request codes, comma-separated, that
            skip the check (``authenticationWhitelist`` / ``authorizationWhitelist``).
        init_authentication_user: JSON ``{"username": …, "password": …}`` of a Super user created
            at start when missing (``initAuthenticationUser``).

    Raises:
        InvalidArgumentError: an invalid flush type, delay level string or negative period.
    """

    broker_name: str = "broker-a"
    broker_cluster_name: str = "DefaultCluster"
    broker_id: int = 0
    host: str = "127.0.0.1"
    listen_port: int = 0
    namesrv_addr: str | None = None
    store_dir: Path = field(default_factory=_default_store_dir)
    flush_disk_type: Literal["ASYNC_FLUSH", "SYNC_FLUSH"] = "ASYNC_FLUSH"
    broker_permission: int = 6
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    long_polling_check_interval_ms: int = 5000
    notify_consumer_ids_changed_enable: bool = True
    channel_expired_timeout_ms: int = 120_000
    client_housekeeping_interval_ms: int = 10_000
    register_name_server_period_ms: int = 30_000
    register_broker_timeout_mills: int = 24_000
    flush_consumer_offset_interval_ms: int = 5000
    flush_delay_offset_interval_ms: int = 10_000
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    sync_flush_timeout_ms: int = 5000
    flush_interval_commit_log_ms: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval_ms: int = 10_000
    flush_interval_consume_queue_ms: int = 1000
    mapped_file_size_commit_log: int | None = None
    mapped_file_size_consume_queue: int | None = None
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    message_index_enable: bool = True
    init_pop_offset_by_check_msg_in_mem: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    enable_property_filter: bool = False
    # --- disk space and retention (MessageStoreConfig; forwarded to StoreConfig) ---
    disk_max_used_space_ratio: int = 75
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    file_reserved_time: int = 72
    delete_when: str = "04"
    clean_file_forcibly_enable: bool = True
    delete_commit_log_files_interval: int = 100
    clean_resource_interval: int = 10_000
    destroy_mapped_file_interval_forcibly: int = 120_000
    # --- connection limits (NettyServerConfig; used by the transport server) ---
    server_channel_max_idle_time_seconds: int = 120
    server_max_connections: int = 4096
    server_max_pending_frame_bytes: int = 16 * 1024 * 1024 + 1024
    server_max_pending_bytes_total: int = 256 * 1024 * 1024
    server_warning_interval_seconds: int = 60
    # --- timer messages (MessageStoreConfig, 5.x) ---
    timer_wheel_enable: bool = True
    timer_precision_ms: int = 1000
    timer_max_delay_sec: int = 3 * 24 * 3600
    recall_message_enable: bool = False
    allow_recall_when_broker_not_writeable: bool = True
    # --- message trace ---
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    # --- request-reply ---
    store_reply_message_enable: bool = True
    # --- transactional messages (BrokerConfig, 5.x defaults) ---
    transaction_timeout: int = 6_000
    transaction_check_max: int = 15
    transaction_check_interval: int = 30_000
    reject_transaction_message: bool = False
    # --- metadata files ---
    recover_metadata: bool = False
    # --- ACL 1.0 ---
    acl_enable: bool = False
    acl_file: str | None = None
    # --- TLS (TlsSystemConfig) ---
    tls_server: TlsServerConfig = field(default_factory=TlsServerConfig)
    tls_enable: bool = False
    tls_client: TlsClientConfig = field(default_factory=TlsClientConfig)
    inner_client_authentication_credentials: SessionCredentials | None = None
    # --- ACL 2.0 (AuthConfig, Java 5.3) ---
    authentication_enabled: bool = False
    authorization_enabled: bool = False
    authentication_whitelist: str | None = None
    authorization_whitelist: str | None = None
    init_authentication_user: str | None = None

    def __post_init__(self) -> None:
        if self.flush_disk_type not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            raise InvalidArgumentError(
                f"flush_disk_type must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flush_disk_type!r}"
            )
        if not isinstance(self.store_dir, Path):
            object.__setattr__(self, "store_dir", Path(self.store_dir))
        for name in (
            "short_polling_time_mills",
            "long_polling_check_interval_ms",
            "channel_expired_timeout_ms",
            "client_housekeeping_interval_ms",
            "register_name_server_period_ms",
            "flush_consumer_offset_interval_ms",
            "flush_delay_offset_interval_ms",
            "sync_flush_timeout_ms",
            "flush_interval_commit_log_ms",
            "flush_commit_log_thorough_interval_ms",
            "flush_interval_consume_queue_ms",
        ):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"{name} must be positive")
        if self.acl_enable and not self.acl_file:
            home = os.environ.get("ROCKETMQ_HOME")
            if not home:
                raise InvalidArgumentError("acl_enable needs acl_file (or $ROCKETMQ_HOME/conf/plain_acl.yml)")
            object.__setattr__(self, "acl_file", str(Path(home) / "conf" / "plain_acl.yml"))
        if self.init_authentication_user is not None:
            init_user_credentials(self.init_authentication_user)
        if self.flush_commit_log_least_pages < 0:
            raise InvalidArgumentError("flush_commit_log_least_pages must be >= 0")
        from .schedule import parse_delay_levels  # local: schedule imports nothing from config

        parse_delay_levels(self.message_delay_level)

    @property
    def auth_enabled(self) -> bool:
        """True when ACL 2.0 (authentication or authorization) is on."""
        return self.authentication_enabled or self.authorization_enabled

    @property
    def namesrv_addrs(self) -> list[str]:
        """The name-server addresses (``namesrv_addr`` split on ``;``)."""
        if not self.namesrv_addr:
            return []
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]
