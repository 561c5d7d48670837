"""Broker-wide administration: UPDATE_BROKER_CONFIG (25), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
CLEAN_EXPIRED_CONSUMEQUEUE (306), VIEW_BROKER_STATS_DATA (315).

Mirrors the matching handlers of Java's ``AdminBrokerProcessor``. The run-time config
vocabulary, its differences from Java and the file that keeps the changes are in
:mod:`.broker_config`; building the processor applies that file to the broker
(:func:`.broker_config.restore`). Statistics items come from :class:`~rocketpipe.broker.stats.BrokerStats`.
"""

from __future__ import annotations

import logging

from ...errors import InvalidArgumentError
from ...protocol.bodies.admin import SubscriptionGroupConfig, SubscriptionGroupWrapper
from ...protocol.bodies.broker_stats import BrokerStatsData, BrokerStatsItem
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.admin import ViewBrokerStatsDataRequestHeader
from ...transport import Connection, Router
from ..context import BrokerContext
from ..stats import StatsSnapshot
from . import broker_config
from .common import decode_header, error, require

log = logging.getLogger(__name__)


class BrokerAdminProcessor:
    """Handlers of broker configuration and statistics requests.

    Building it applies the persisted run-time config changes to ``broker``
    (:func:`.broker_config.restore`).

    Raises:
        MetadataError: ``config/broker.properties`` and its ``.bak`` are unreadable and
            ``recover_metadata`` is off.
    """

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        broker_config.restore(broker)

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.UPDATE_BROKER_CONFIG, self.update_broker_config)
        router.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.get_all_subscription_group)
        router.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queue)
        router.register(RequestCode.VIEW_BROKER_STATS_DATA, self.view_broker_stats_data)

    async def update_broker_config(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Change run-time settings from a ``key=value`` Properties body
        (``AdminBrokerProcessor.updateBrokerConfig``), persist them, and re-register with the
        name servers when ``brokerPermission`` is among them.

        Answers NO_PERMISSION "Can not update config in black list." for a black-listed key,
        SYSTEM_ERROR "string2Properties error" for a body that is not UTF-8, INVALID_PARAMETER
        for a key a running broker cannot change or a bad value (nothing changes then), and
        SUCCESS otherwise (no body: nothing to do), with a remark naming ignored unknown keys.
        """
        b = self.broker
        if not cmd.body:
            return cmd.response(ResponseCode.SUCCESS)
        try:
            props = broker_config.parse_properties(bytes(cmd.body).decode("utf-8"))
        except UnicodeDecodeError:
            return error(cmd, ResponseCode.SYSTEM_ERROR, "string2Properties error")
        log.info("update broker config from %s: %s", getattr(conn, "remote_address", "?"), props)
        if broker_config.BLACK_LIST & props.keys():
            return error(cmd, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        try:
            update = broker_config.plan_update(b.config, props)
        except InvalidArgumentError as exc:
            return error(cmd, ResponseCode.INVALID_PARAMETER, str(exc))
        broker_config.apply(b, update.changes)
        try:
            broker_config.persist(b, update.properties)
        except OSError as exc:
            log.error("run-time config changes applied but not saved (%s): %d keys", exc, len(update.properties))
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"config applied but not saved: {exc}")
        if update.ignored:
            log.warning("update broker config: %d unknown keys ignored: %s", len(update.ignored), update.ignored)
        if "broker_permission" in update.changes and b.config.namesrv_addrs:
            # Java: next topic-config data version, then registerBrokerAll(force)
            b.topics.data_version.next_version(b.clock.now_ms())
            await b.register_broker_all()
        remark = f"unknown keys ignored: {', '.join(update.ignored)}" if update.ignored else None
        return cmd.response(ResponseCode.SUCCESS, remark)

    async def get_all_subscription_group(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Body ``SubscriptionGroupWrapper``: every group's config (``AdminBrokerProcessor.getAllSubscriptionGroup``,
        which sends ``SubscriptionGroupManager.encode()``).

        The fields rocketpipe does not keep take Java's defaults (``consumeMessageOrderly``
        false, ``consumeTimeoutMinute`` 15, ``groupRetryPolicy`` ``{"type":"CUSTOMIZED"}``, no
        attributes). rocketpipe's group table keeps no data version: ``dataVersion`` is
        ``{"counter": 0, "stateVersion": 0, "timestamp": <broker boot ms>}``. ``forbiddenTable``
        is empty.
        """
        b = self.broker
        table = {}
        for name, cfg in sorted(b.groups_config.groups.items()):
            wire = SubscriptionGroupConfig.from_obj(cfg.to_json())
            wire.group_retry_policy = {"type": "CUSTOMIZED"}
            table[name] = wire
        body = SubscriptionGroupWrapper(
            subscription_group_table=table,
            data_version={"counter": 0, "stateVersion": 0, "timestamp": b.stats.boot_ms},
        )
        return cmd.response(ResponseCode.SUCCESS, None, None, body.encode())

    async def clean_expired_consume_queue(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Destroy the consume queues wholly below the commit log's min offset
        (``AdminBrokerProcessor.cleanExpiredConsumeQueue`` → ``DefaultMessageStore.cleanExpiredConsumerQueue``;
        see :meth:`~rocketpipe.store.MessageStore.clean_expired_consume_queues`). SUCCESS, or
        SYSTEM_ERROR with the failure's text.
        """
        try:
            queues, topics = self.broker.store.clean_expired_consume_queues()
        except OSError as exc:
            log.error("clean expired consume queues failed: %s", exc)
            return error(cmd, ResponseCode.SYSTEM_ERROR, str(exc))
        log.info("clean expired consume queues: %d queues destroyed, %d topics forgotten", queues, topics)
        return cmd.response(ResponseCode.SUCCESS)

    async def view_broker_stats_data(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """``BrokerStatsData`` of one statistics item (``AdminBrokerProcessor.ViewBrokerStatsData``):
        header ``statsName`` / ``statsKey`` (see :meth:`~rocketpipe.broker.stats.BrokerStats.stats_item`
        for the names); SYSTEM_ERROR "The stats <name> <key> not exist" for an unknown item.
        """
        h = decode_header(ViewBrokerStatsDataRequestHeader, cmd)
        require(h.stats_name, "statsName")
        require(h.stats_key, "statsKey")
        name: str = h.stats_name  # type: ignore[assignment]
        key: str = h.stats_key  # type: ignore[assignment]
        windows = self.broker.stats.stats_item(name, key, self.broker.config.broker_cluster_name)
        if windows is None:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
        minute, hour, day = (_item(w) for w in windows)
        body = BrokerStatsData(stats_minute=minute, stats_hour=hour, stats_day=day)
        return cmd.response(ResponseCode.SUCCESS, None, None, body.encode())


def _item(s: StatsSnapshot) -> BrokerStatsItem:
    return BrokerStatsItem(sum=s.sum, tps=s.tps, avgpt=s.avgpt)
