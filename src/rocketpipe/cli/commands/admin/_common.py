"""Shared pieces of ``rocketpipe admin``: options, output (rich tables or ``--json``), time and
message formatting (L4, cli).

Option letters and long names are those of Apache RocketMQ's ``mqadmin`` (``tools/command``);
``-n/--namesrvAddr`` is common to every command (``MQAdminStartup``), default ``NAMESRV_ADDR`` or
``127.0.0.1:9876``.

Imports: the public API of :mod:`rocketpipe.client`, ``typer``, ``rich``, ``orjson``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import orjson
import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rocketpipe import eventloop

from ...errors import EXIT_USAGE, fail

if TYPE_CHECKING:
    from rocketpipe.client import Admin, MessageExt
    from rocketpipe.client.config import SessionCredentials, TlsClientConfig

T = TypeVar("T")

DEFAULT_NAMESRV: Final = "127.0.0.1:9876"
#: Console width when stdout is not a terminal (pipes, tests) and ``COLUMNS`` is unset: wide
#: enough that tables are not folded.
PIPE_WIDTH: Final = 240

NamesrvOption = Annotated[
    str,
    typer.Option(
        "--namesrvAddr", "-n", "--namesrv", envvar="NAMESRV_ADDR", help="Name server(s), 'host:port[;host:port]'."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (for scripts) instead of a table.")]
#: mqadmin's ``-b/--brokerAddr`` and ``-c/--clusterName`` of the commands that act on brokers
BrokerAddrOption = Annotated[str | None, typer.Option("--brokerAddr", "-b", help="One broker 'host:port'.")]
ClusterNameOption = Annotated[str | None, typer.Option("--clusterName", "-c", help="Every master of this cluster.")]


def console() -> Console:
    """A console on the current stdout (made per call: CliRunner swaps ``sys.stdout``)."""
    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else PIPE_WIDTH
    return Console(highlight=False, soft_wrap=False, width=width)


@dataclass(frozen=True)
class AdminConnection:
    """How every ``rocketpipe admin`` command connects: the ACL credentials and TLS settings given
    to the ``admin`` group (``rocketpipe admin --access-key K --secret-key S --use-tls ... topicList``,
    mqadmin's ``AclClientRPCHook`` and ``tls.enable``); None: unsigned / plain TCP."""

    credentials: SessionCredentials | None = None
    tls: TlsClientConfig | None = None

    def __repr__(self) -> str:  # never print a secret (the TLS key password included)
        ak = None if self.credentials is None else self.credentials.access_key
        return f"AdminConnection(access_key={ak!r}, tls={self.tls is not None})"


#: the connection of the ``admin`` invocation running in this context (typer >= 0.29 vendors its
#: own click, so the click context is not reachable through ``click.get_current_context``)
_CONNECTION: ContextVar[AdminConnection | None] = ContextVar("rocketpipe_admin_connection", default=None)


def set_connection(ctx: typer.Context, connection: AdminConnection) -> None:
    """Make ``connection`` the one of the commands run under ``ctx`` (the ``admin`` group's
    context: kept in ``ctx.meta["rocketpipe.admin.connection"]``, forgotten when ``ctx`` closes)."""
    ctx.meta["rocketpipe.admin.connection"] = connection
    token = _CONNECTION.set(connection)
    ctx.call_on_close(lambda: _CONNECTION.reset(token))


def current_connection() -> AdminConnection:
    """The connection settings of the running ``admin`` group (plain and unsigned outside one)."""
    return _CONNECTION.get() or AdminConnection()


def run_admin(namesrv: str, fn: Callable[[Admin], Awaitable[T]]) -> T:
    """Open an :class:`~rocketpipe.client.Admin` on ``namesrv`` (signed and over TLS as the
    ``admin`` group's options say, see :func:`current_connection`), run ``fn`` with it, close it."""
    connection = current_connection()

    async def main() -> T:
        from rocketpipe.client import Admin, ClientConfig

        config = ClientConfig(namesrv_addr=namesrv, credentials=connection.credentials).with_tls(connection.tls)
        async with Admin(config=config) as admin:
            return await fn(admin)

    return eventloop.run(main())


def emit(as_json: bool, data: Any, render: Callable[[Console], None]) -> None:
    """Print ``data`` as JSON (``--json``) or call ``render`` with a console."""
    if as_json:
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
        sys.stdout.flush()
    else:
        render(console())


def table(*columns: str, title: str | None = None, numeric: tuple[str, ...] = ()) -> Table:
    """A table in the house style; the ``numeric`` columns are right-justified."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for c in columns:
        t.add_column(c, justify="right" if c in numeric else "left", overflow="fold")
    return t


#: ``MQVersion.Version``: ordinal of ``V4_0_0_SNAPSHOT``; from there each ``Vx_y_z`` has a
#: ``_SNAPSHOT`` and a release ordinal, in order, up to ``V5_9_9``; then ``HIGHER_VERSION``.
_V4_0_0_SNAPSHOT: Final = 212
_HIGHER_VERSION: Final = 612


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: ``V5_3_3`` for 479; the number itself below 4.0.0."""
    if version >= _HIGHER_VERSION:
        return "HIGHER_VERSION"
    if version < _V4_0_0_SNAPSHOT:
        return str(version)
    k, snapshot = divmod(version - _V4_0_0_SNAPSHOT, 2)
    return f"V{4 + k // 100}_{(k // 10) % 10}_{k % 10}" + ("" if snapshot else "_SNAPSHOT")


def java_bool(value: str | None, default: bool = False) -> bool:
    """``Boolean.parseBoolean``: True only for ``true`` (any case); ``default`` when not given."""
    if value is None:
        return default
    return value.strip().lower() == "true"


def either_broker_or_cluster(broker_addr: str | None, cluster_name: str | None, command: str) -> None:
    """mqadmin's ``-b`` or ``-c`` rule: raise a usage error when neither is given."""
    if not broker_addr and not cluster_name:
        raise fail(f"{command} needs -b/--brokerAddr or -c/--clusterName", EXIT_USAGE)


def human_time(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: local ``yyyy-MM-dd HH:mm:ss,SSS``."""
    dt = datetime.fromtimestamp(ms / 1000)
    return dt.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"


def short_time(ms: int) -> str:
    """``UtilAll.formatDate(.., YYYY_MM_DD_HH_MM_SS)``: local ``yyyy-MM-dd HH:mm:ss``; ``N/A`` for 0."""
    return "N/A" if ms == 0 else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def parse_timestamp(value: str) -> int:
    """The time forms of ``resetOffsetByTime -s`` / ``printMsg -b``: ``now``, epoch ms, or local
    ``yyyy-MM-dd#HH:mm:ss:SSS``; returns epoch ms.

    Raises:
        typer.Exit: (usage) none of these forms.
    """
    v = value.strip()
    if v == "now":
        return int(datetime.now().timestamp() * 1000)
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        dt = datetime.strptime(v, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise fail(f"bad timestamp {value!r}: use now, epoch ms or yyyy-MM-dd#HH:mm:ss:SSS", EXIT_USAGE) from None
    return int(dt.timestamp() * 1000)


def body_text(body: bytes, charset: str | None) -> str | None:
    """The body decoded with ``charset`` (Java charset names such as ``UTF-8``, ``GBK``), or None."""
    if charset is None:
        return None
    try:
        return body.decode(charset, "replace")
    except LookupError:
        raise fail(f"unknown charset {charset!r}", EXIT_USAGE) from None


def message_json(msg: MessageExt, charset: str | None = None) -> dict[str, Any]:
    """A stored message as JSON: the fields ``queryMsgById`` prints (times epoch ms) plus
    ``msgId`` (the unique key) and, with ``charset``, ``body``."""
    d: dict[str, Any] = {
        "msgId": msg.msg_id,
        "offsetMsgId": msg.offset_msg_id,
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.keys,
        "brokerName": msg.broker_name,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "bodyLength": len(msg.body),
        "properties": dict(msg.properties),
    }
    text = body_text(msg.body, charset)
    if text is not None:
        d["body"] = text
    return d


def render_message(c: Console, msg: MessageExt, charset: str | None = None) -> None:
    """Print a message the way ``QueryMsgByIdSubCommand.printMsg`` lays it out (label, value)."""
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    rows = [
        ("OffsetID:", msg.offset_msg_id),
        ("MsgId:", msg.msg_id),
        ("Topic:", msg.topic),
        ("Tags:", f"[{msg.tags}]"),
        ("Keys:", f"[{msg.keys}]"),
        ("Queue ID:", str(msg.queue_id)),
        ("Queue Offset:", str(msg.queue_offset)),
        ("CommitLog Offset:", str(msg.commit_log_offset)),
        ("Reconsume Times:", str(msg.reconsume_times)),
        ("Born Timestamp:", human_time(msg.born_timestamp)),
        ("Store Timestamp:", human_time(msg.store_timestamp)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", str(msg.sys_flag)),
        ("Properties:", "{" + ", ".join(f"{k}={v}" for k, v in msg.properties.items()) + "}"),
    ]
    text = body_text(msg.body, charset)
    if text is not None:
        rows.append(("Message Body:", text))
    for label, value in rows:
        t.add_row(label, escape(value))
    c.print(t)
