"""``rocketpipe topic create | stats``: small admin commands (L4, cli).

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from rocketpipe import eventloop

from ..errors import handle_errors
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
    from rocketpipe.client.config import SessionCredentials, TlsClientConfig

console = Console(highlight=False, soft_wrap=True)

DEFAULT_NAMESRV = "127.0.0.1:9876"

topic_app = typer.Typer(name="topic", help="Create a topic or show its queues and offsets.", no_args_is_help=True)

NamesrvOption = Annotated[
    str, typer.Option("--namesrv", "-n", envvar="NAMESRV_ADDR", help="Name server(s), 'host:port[;host:port]'.")
]


async def _create(
    namesrv: str,
    topic: str,
    queues: int,
    wait_s: float = 10.0,
    credentials: SessionCredentials | None = None,
    tls: TlsClientConfig | None = None,
) -> int:
    """Create the topic, then wait (up to ``wait_s``) for the name server to route it.

    Returns:
        Queues in the topic's route (0 if the name server did not list it in time).
    """
    from rocketpipe.client import Admin, ClientConfig
    from rocketpipe.errors import RocketMQError

    async with Admin(config=ClientConfig(namesrv_addr=namesrv, credentials=credentials).with_tls(tls)) as admin:
        await admin.create_topic(topic, queue_nums=queues)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            try:
                n = len(await admin.topic_queues(topic))
            except RocketMQError:
                n = 0
            if n >= queues or loop.time() > deadline:
                return n
            await asyncio.sleep(0.2)


async def _stats(
    namesrv: str, topic: str, credentials: SessionCredentials | None = None, tls: TlsClientConfig | None = None
) -> list[tuple[str, int, int, int]]:
    from rocketpipe.client import Admin, ClientConfig

    async with Admin(config=ClientConfig(namesrv_addr=namesrv, credentials=credentials).with_tls(tls)) as admin:
        rows = []
        for mq in await admin.topic_queues(topic):
            rows.append((mq.broker_name, mq.queue_id, await admin.min_offset(mq), await admin.max_offset(mq)))
        return rows


@topic_app.command("create")
@handle_errors
def create(
    topic: Annotated[str, typer.Argument(help="Topic name.")],
    queues: Annotated[
        int, typer.Option("--queues", "-q", min=1, max=1024, help="Read and write queues per broker.")
    ] = 8,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
) -> None:
    """Create (or update) TOPIC on every master broker of the cluster."""
    tls = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    n = eventloop.run(_create(namesrv, topic, queues, credentials=credentials_from(access_key, secret_key), tls=tls))
    if n:
        console.print(f"topic {topic}: {n} queue(s) in its route")
    else:
        console.print(f"topic {topic} created; the name server lists it after the broker's next registration")


@topic_app.command("stats")
@handle_errors
def stats(
    topic: Annotated[str, typer.Argument(help="Topic name.")],
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
) -> None:
    """Show TOPIC's queues with their min and max offsets and message counts."""
    tls = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    rows = eventloop.run(_stats(namesrv, topic, credentials=credentials_from(access_key, secret_key), tls=tls))
    table = Table(title=f"topic {topic}", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("broker", "queue", "min offset", "max offset", "messages"):
        table.add_column(col, justify="left" if col == "broker" else "right")
    for broker, queue_id, lo, hi in rows:
        table.add_row(broker, str(queue_id), f"{lo:,}", f"{hi:,}", f"{hi - lo:,}")
    console.print(table)
    console.print(f"{len(rows)} queue(s), {sum(hi - lo for _, _, lo, hi in rows):,} message(s)")
