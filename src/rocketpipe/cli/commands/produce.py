"""``rocketpipe produce``: send messages from ``--body`` or from stdin lines (L4, cli).

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from rocketpipe import eventloop

from ..errors import EXIT_FAILURE, EXIT_USAGE, fail, handle_errors
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
    from rocketpipe.client import SendResult
    from rocketpipe.client.config import SessionCredentials, TlsClientConfig

console = Console(highlight=False, soft_wrap=True)

DEFAULT_NAMESRV = "127.0.0.1:9876"
#: Sends in flight at once (the client pipelines them on one connection).
MAX_IN_FLIGHT = 64


def _bodies(body: str | None, count: int | None, lines: Iterable[str]) -> Iterator[str]:
    """Yield the message bodies: ``body`` ``count`` times, or each non-empty stdin line."""
    if body is not None:
        for _ in range(1 if count is None else count):
            yield body
        return
    sent = 0
    for line in lines:
        text = line.rstrip("\r\n")
        if not text:
            continue
        if count is not None and sent >= count:
            return
        sent += 1
        yield text


async def produce_messages(
    *,
    namesrv: str,
    topic: str,
    bodies: Iterable[str],
    tag: str | None,
    key: str | None,
    group: str,
    quiet: bool,
    credentials: SessionCredentials | None = None,
    tls: TlsClientConfig | None = None,
) -> tuple[int, int]:
    """Send one message per body and print one line per result.

    Args:
        namesrv: name-server address(es).
        topic: destination topic.
        bodies: message bodies (UTF-8 encoded on send).
        tag: message tag, or None.
        key: message key, or None.
        group: producer group.
        quiet: print only the summary.
        credentials: ACL credentials that sign every request, or None.
        tls: connect with TLS with these settings, or None (plain).

    Returns:
        ``(sent, not_ok)``: messages stored, and how many of them were not SEND_OK.

    Raises:
        RocketMQError: a send failed after the client's retries.
    """
    from rocketpipe.client import ClientConfig, Message, Producer, SendStatus

    sent = not_ok = 0

    def report(result: SendResult) -> None:
        nonlocal sent, not_ok
        sent += 1
        ok = result.send_status == SendStatus.SEND_OK
        if not ok:
            not_ok += 1
        if not quiet or not ok:
            mq = result.message_queue
            style = "green" if ok else "yellow"
            console.print(
                f"[{style}]{result.send_status.name}[/] msgId={result.msg_id} "
                f"queue={mq.broker_name}:{mq.queue_id} offset={result.queue_offset}"
            )

    config = ClientConfig(namesrv_addr=namesrv, credentials=credentials).with_tls(tls)
    async with Producer(group, config=config) as producer:
        pending: list[asyncio.Task[SendResult]] = []
        for text in bodies:
            msg = Message.build(topic, text, tags=tag, keys=key)
            pending.append(asyncio.create_task(producer.send(msg)))
            if len(pending) >= MAX_IN_FLIGHT:
                for result in await asyncio.gather(*pending):
                    report(result)
                pending.clear()
        if pending:
            for result in await asyncio.gather(*pending):
                report(result)
    return sent, not_ok


@handle_errors
def produce(
    topic: Annotated[str, typer.Argument(help="Topic to send to.")],
    body: Annotated[
        str | None, typer.Option("--body", "-b", help="Message body; without it, each stdin line is one message.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="Message tag.")] = None,
    key: Annotated[str | None, typer.Option("--key", "-k", help="Message key.")] = None,
    count: Annotated[
        int | None,
        typer.Option(
            "--count", "-c", min=1, help="Send --body this many times (default 1); with stdin, at most this many lines."
        ),
    ] = None,
    namesrv: Annotated[
        str, typer.Option("--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s), 'host:port[;host:port]'.")
    ] = DEFAULT_NAMESRV,
    group: Annotated[str, typer.Option("--group", "-g", help="Producer group.")] = "rocketpipe-cli-producer",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")] = False,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
) -> None:
    """Send messages to TOPIC: --body (repeated --count times) or one message per stdin line."""
    if body is None and sys.stdin.isatty():
        raise fail("give --body TEXT or pipe messages on stdin (one per line)", EXIT_USAGE)
    credentials = credentials_from(access_key, secret_key)
    tls = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    started = time.perf_counter()
    sent, not_ok = eventloop.run(
        produce_messages(
            namesrv=namesrv,
            topic=topic,
            bodies=_bodies(body, count, sys.stdin if body is None else ()),
            tag=tag,
            key=key,
            group=group,
            quiet=quiet,
            credentials=credentials,
            tls=tls,
        )
    )
    elapsed = time.perf_counter() - started
    rate = sent / elapsed if elapsed > 0 else 0.0
    console.print(f"sent {sent} message(s) to {topic} in {elapsed:.2f} s ({rate:,.0f} msg/s)", style="bold")
    if not_ok:
        raise fail(f"{not_ok} message(s) were stored without SEND_OK (see above)", EXIT_FAILURE)
