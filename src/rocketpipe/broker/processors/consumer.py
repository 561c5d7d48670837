"""Client registration: HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
CHECK_CLIENT_CONFIG (46).

Mirrors ``ClientManageProcessor`` and ``ConsumerManageProcessor.getConsumerListByGroup``. A
membership or subscription change makes the broker push NOTIFY_CONSUMER_IDS_CHANGED to every
channel of the group (:meth:`~rocketpipe.broker.context.BrokerContext.notify_consumer_ids_changed`).
"""

from __future__ import annotations

import logging

from ...errors import ProtocolError
from ...protocol import sysflag as sf
from ...protocol.bodies import javajson as jj
from ...protocol.bodies.heartbeat import HeartbeatData, SubscriptionData
from ...protocol.codes import RequestCode, ResponseCode
from ...protocol.command import RemotingCommand
from ...protocol.headers.consumer import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from ...transport import Connection, Router
from .. import retry
from ..context import BrokerContext
from ..filter.manager import compile_filter, is_tag_type
from ..filter.sql92 import SQL92ParseError
from ..groups import ClientChannel
from .common import decode_header, error, require

log = logging.getLogger(__name__)


class ConsumerProcessor:
    """Handlers of client registration and group membership requests."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def register(self, router: Router) -> None:
        """Register the handlers on ``router``."""
        router.register(RequestCode.HEART_BEAT, self.heart_beat)
        router.register(RequestCode.UNREGISTER_CLIENT, self.unregister_client)
        router.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.get_consumer_list_by_group)
        router.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config)

    async def heart_beat(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Register the client's consumer and producer groups; SUCCESS even for skipped groups."""
        b = self.broker
        try:
            data = HeartbeatData.decode(bytes(cmd.body) or b"{}")
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {exc}")
        now = b.clock.now_ms()
        changed_groups: list[str] = []
        for cd in data.consumer_data_set:
            gcfg = b.groups_config.find(cd.group_name)
            if gcfg is None:
                log.info("heartbeat: group %r cannot be created; consumer not registered", cd.group_name)
                continue
            rtopic = retry.retry_topic(cd.group_name)
            if b.topics.get(rtopic) is None:
                unit = 0x1 if cd.unit_mode else 0
                b.topics.create_if_missing(rtopic, gcfg.retry_queue_nums, sf.PERM_READ | sf.PERM_WRITE, unit, now)
                b.topics_changed()
            client = ClientChannel(conn, data.client_id, int(cmd.language), cmd.version, now)
            changed = b.clients.register_consumer(
                cd.group_name,
                client,
                consume_type=cd.consume_type,
                message_model=cd.message_model,
                consume_from_where=cd.consume_from_where,
                subscriptions=cd.subscription_data_set,
            )
            # ConsumerGroupEvent.REGISTER -> ConsumerFilterManager.register (SQL92 filter data)
            b.consumer_filters.register(cd.group_name, cd.subscription_data_set, now)
            if changed and cd.message_model != "BROADCASTING" and gcfg.notify_consumer_ids_changed_enable:
                changed_groups.append(cd.group_name)
        for pd in data.producer_data_set:
            b.clients.register_producer(
                pd.group_name, ClientChannel(conn, data.client_id, int(cmd.language), cmd.version, now)
            )
        for group in changed_groups:
            b.notify_consumer_ids_changed(group)
        return cmd.response(ResponseCode.SUCCESS)

    async def unregister_client(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Remove this channel from the named producer and/or consumer group."""
        b = self.broker
        h = decode_header(UnregisterClientRequestHeader, cmd)
        require(h.client_id, "clientID")
        if h.producer_group:
            b.clients.unregister_producer(h.producer_group, conn)
        if h.consumer_group:
            gcfg = b.groups_config.groups.get(h.consumer_group)
            if b.clients.unregister_consumer(h.consumer_group, conn) and (
                gcfg is None or gcfg.notify_consumer_ids_changed_enable
            ):
                b.notify_consumer_ids_changed(h.consumer_group)
        return cmd.response(ResponseCode.SUCCESS)

    async def get_consumer_list_by_group(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Client ids of the group's live channels; SYSTEM_ERROR for an unknown or empty group."""
        h = decode_header(GetConsumerListByGroupRequestHeader, cmd)
        require(h.consumer_group, "consumerGroup")
        info = self.broker.clients.consumer_group(h.consumer_group)  # type: ignore[arg-type]
        ids = info.client_ids() if info is not None else []
        if not ids:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumer_group}")
        return cmd.response(ResponseCode.SUCCESS, None, None, jj.dumps({"consumerIdList": ids}))

    async def check_client_config(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """TAG subscriptions are fine; others need enablePropertyFilter and must compile."""
        try:
            obj = jj.as_dict(jj.loads(bytes(cmd.body) or b"{}"))
        except ProtocolError as exc:
            return error(cmd, ResponseCode.SYSTEM_ERROR, f"bad body: {exc}")
        sub = obj.get("subscriptionData")
        if sub is not None:
            sd = SubscriptionData.from_obj(sub)
            if not is_tag_type(sd.expression_type):
                if not self.broker.config.enable_property_filter:
                    return error(
                        cmd,
                        ResponseCode.SYSTEM_ERROR,
                        f"The broker does not support consumer to filter message by {sd.expression_type}",
                    )
                try:
                    compile_filter(sd.expression_type, sd.sub_string)
                except SQL92ParseError as exc:
                    return error(cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return cmd.response(ResponseCode.SUCCESS)
