"""``rocketpipe consume``: a push consumer that prints what it receives (L4, cli).

A message is acknowledged (CONSUME_SUCCESS) only once it has been printed. When ``--count`` is
reached, messages still being delivered are answered RECONSUME_LATER, so the group gets them
again later instead of losing them.

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from rocketpipe import eventloop

from ..errors import EXIT_TIMEOUT, fail, handle_errors
from .acl_options import (
    AccessKeyOption,
    SecretKeyOption,
    TlsClientCertOption,
    TlsClientKeyOption,
    TlsClientKeyPasswordOption,
    TlsClientTrustCertOption,
    TlsTestModeOption,
    UseTlsOption,
    credentials_from,
    tls_from,
)

if TYPE_CHECKING:
    from rocketpipe.client import MessageExt
    from rocketpipe.client.config import SessionCredentials, TlsClientConfig

console = Console(highlight=False, soft_wrap=True)

DEFAULT_NAMESRV = "127.0.0.1:9876"


class StartFrom(StrEnum):
    """Where a new consumer group starts (``ConsumeFromWhere``)."""

    FIRST = "first"
    LAST = "last"


def format_message(msg: MessageExt, max_body: int) -> str:
    """Render one message as a rich-markup line.

    Args:
        msg: the received message.
        max_body: characters of the body to show (0 = all).

    Returns:
        ``queue:offset msgId tag keys [retry n] stored-at body`` with rich markup.
    """
    body = msg.body.decode("utf-8", errors="replace")
    if max_body and len(body) > max_body:
        body = body[:max_body] + "…"
    stored = datetime.fromtimestamp(msg.store_timestamp / 1000, tz=UTC).strftime("%H:%M:%S.%f")[:-3]
    parts = [
        f"[cyan]{escape(msg.broker_name or '?')}:{msg.queue_id}@{msg.queue_offset}[/]",
        f"[dim]{msg.msg_id}[/]",
    ]
    if msg.tags:
        parts.append(f"tag=[magenta]{escape(msg.tags)}[/]")
    if msg.keys:
        parts.append(f"keys={escape(msg.keys)}")
    if msg.reconsume_times:
        parts.append(f"[yellow]retry={msg.reconsume_times}[/]")
    parts.append(f"[dim]{stored}Z[/]")
    parts.append(escape(body))
    return " ".join(parts)


async def consume_messages(
    *,
    namesrv: str,
    topic: str,
    expression: str,
    group: str,
    count: int | None,
    timeout: float | None,
    start_from: StartFrom,
    max_body: int,
    credentials: SessionCredentials | None = None,
    tls: TlsClientConfig | None = None,
) -> int:
    """Run a push consumer until ``count`` messages were printed, the timeout, or a signal.

    Args:
        namesrv: name-server address(es).
        topic: topic to subscribe to.
        expression: tag expression (``*``, ``TagA || TagB``).
        group: consumer group.
        count: stop after printing this many messages; None runs until stopped.
        timeout: stop after this many seconds; None waits forever.
        start_from: start position of a group that has no committed offset.
        max_body: characters of each body to print (0 = all).
        credentials: ACL credentials that sign every request, or None.
        tls: connect with TLS with these settings, or None (plain).

    Returns:
        The number of messages printed.

    Raises:
        TimeoutError: the timeout passed before ``count`` messages were printed.
        RocketMQError: the consumer could not start.
    """
    from rocketpipe.client import Admin, ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, PushConsumer
    from rocketpipe.errors import RouteNotFoundError, TopicNotExistError

    printed = 0
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt], context: Any) -> ConsumeConcurrentlyStatus:
        nonlocal printed
        if done.is_set():
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        for msg in msgs:
            console.print(format_message(msg, max_body))
            printed += 1
        if count is not None and printed >= count:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    where = (
        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        if start_from is StartFrom.FIRST
        else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, done.set)
    config = ClientConfig(namesrv_addr=namesrv, credentials=credentials).with_tls(tls)
    async with Admin(config=config) as admin:
        try:
            await admin.topic_route(topic)
        except (RouteNotFoundError, TopicNotExistError):
            console.print(f"[yellow]topic {topic} has no route yet; waiting for it to be created[/]")
    consumer = PushConsumer(group, config=config, consume_from_where=where)
    consumer.subscribe(topic, expression)
    consumer.register_message_listener(listener)
    console.print(f"[dim]consuming {topic} ({expression}) as group {group}; Ctrl-C stops[/]")
    async with consumer:
        try:
            async with asyncio.timeout(timeout):
                await done.wait()
        except TimeoutError:
            if count is not None and printed < count:
                raise TimeoutError(f"received {printed} of {count} message(s) in {timeout} s") from None
    return printed


@handle_errors
def consume(
    topic: Annotated[str, typer.Argument(help="Topic to subscribe to.")],
    expression: Annotated[str, typer.Argument(help="Tag expression, e.g. '*' or 'TagA || TagB'.")] = "*",
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group.")] = "rocketpipe-cli-consumer",
    count: Annotated[int | None, typer.Option("--count", "-c", min=1, help="Stop after this many messages.")] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", min=0.1, help="Stop after this many seconds (exit 4 if --count was not reached)."),
    ] = None,
    start_from: Annotated[
        StartFrom, typer.Option("--from", help="Start of a new group: first or last offset.")
    ] = StartFrom.FIRST,
    max_body: Annotated[int, typer.Option(help="Characters of each body to print (0 = all).")] = 200,
    namesrv: Annotated[
        str, typer.Option("--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s), 'host:port[;host:port]'.")
    ] = DEFAULT_NAMESRV,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
) -> None:
    """Consume TOPIC with a push consumer and print each message."""
    credentials = credentials_from(access_key, secret_key)
    tls = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    try:
        printed = eventloop.run(
            consume_messages(
                namesrv=namesrv,
                topic=topic,
                expression=expression,
                group=group,
                count=count,
                timeout=timeout,
                start_from=start_from,
                max_body=max_body,
                credentials=credentials,
                tls=tls,
            )
        )
    except TimeoutError as exc:
        raise fail(str(exc), EXIT_TIMEOUT) from None
    console.print(f"received {printed} message(s)", style="bold")
