"""Steps shared by the push, lite pull and simple consumers (L3): constructor checks, route
refresh, the start-up subscription check, the message-trace hook.

Mirrors ``DefaultMQPushConsumerImpl.checkConfig`` (group checks), the "own a runtime unless
given one" rule that ``MQClientManager.getOrCreateMQClientInstance`` plays in Java, and
``MQClientInstance.checkClientInBroker``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...clock import Clock
from ...errors import InvalidArgumentError, RocketMQError, TopicNotExistError
from .. import rpc
from ..config import ClientConfig
from ..producer.producer import start_trace_dispatcher
from ..runtime import ClientRuntime
from ..trace.hooks import ConsumeTraceHook

if TYPE_CHECKING:
    from ...protocol.bodies.heartbeat import SubscriptionData

__all__ = ["check_client_in_broker", "check_consumer_group", "refresh_routes", "resolve_runtime", "start_consume_trace"]

log = logging.getLogger(__name__)


def check_consumer_group(consumer_group: str) -> None:
    """Reject an empty or ``DEFAULT_CONSUMER`` group and groups over 255 characters.

    Raises:
        InvalidArgumentError: the group is not usable.
    """
    if not consumer_group or consumer_group == "DEFAULT_CONSUMER":
        raise InvalidArgumentError("consumer_group must be set (and not DEFAULT_CONSUMER)")
    if len(consumer_group) > 255:
        raise InvalidArgumentError("consumer_group is longer than 255 characters")


def resolve_runtime(
    kind: str, namesrv_addr: str | None, config: ClientConfig | None, runtime: ClientRuntime | None, clock: Clock
) -> tuple[ClientRuntime, bool]:
    """Return ``(runtime, owned)``: the given runtime (not owned) or a new one (owned).

    Args:
        kind: consumer class name, for the error message.

    Raises:
        InvalidArgumentError: neither a runtime, a config nor a name server address was given.
    """
    if runtime is not None:
        return runtime, False
    if config is None:
        if not namesrv_addr:
            raise InvalidArgumentError(f"{kind} needs namesrv_addr, config or runtime")
        config = ClientConfig(namesrv_addr=namesrv_addr)
    return ClientRuntime(config, clock=clock), True


async def refresh_routes(runtime: ClientRuntime, topics: Iterable[str], logger: logging.Logger | None = None) -> None:
    """Fetch the route of every topic; a missing or failed route is logged, never raised."""
    lg = logger or log
    for topic in topics:
        try:
            await runtime.fetch_route(topic)
        except TopicNotExistError:
            lg.info("no route for subscribed topic=%s", topic)
        except RocketMQError as exc:
            lg.warning("route fetch failed topic=%s err=%s", topic, exc)


async def check_client_in_broker(runtime: ClientRuntime, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
    """CHECK_CLIENT_CONFIG for each non-TAG subscription (``MQClientInstance.checkClientInBroker``).

    Asks the master of one broker serving the topic (Java assumes every broker of a
    cluster shares the configuration); topics without a known route are skipped.

    Raises:
        BrokerError: the broker rejects the subscription (SYSTEM_ERROR: filter type not
            enabled; SUBSCRIPTION_PARSE_FAILED: the expression does not compile).
    """
    rt = runtime
    for sd in list(subscriptions):
        if sd.expression_type in ("", "TAG"):
            continue
        route = rt.cached_route(sd.topic)
        addr = None
        for bd in sorted(route.broker_datas or (), key=lambda d: d.broker_name) if route is not None else ():
            addr = rt.find_broker_addr(bd.broker_name)
            if addr is not None:
                break
        if addr is None:
            continue
        await rpc.check_client_config(rt.pool, addr, rt.client_id, group, sd, rt.config.request_timeout)


async def start_consume_trace(
    runtime: ClientRuntime, group: str, customized_trace_topic: str | None, clock: Clock
) -> ConsumeTraceHook | None:
    """The started trace hook of a consumer with ``enable_msg_trace`` (``new
    AsyncTraceDispatcher(group, CONSUME, ...)`` + ``ConsumeMessageTraceHookImpl``), or None
    (logged) when its dispatcher cannot start. Close it with ``hook.dispatcher.close()``."""
    dispatcher = await start_trace_dispatcher(runtime, group, "CONSUME", customized_trace_topic, clock)
    return ConsumeTraceHook(dispatcher, clock) if dispatcher is not None else None
