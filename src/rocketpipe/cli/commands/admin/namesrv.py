"""``rocketpipe admin`` name-server commands: ``updateKvConfig``, ``deleteKvConfig`` (L4, cli).

Mirror ``tools/command/namesrv/{UpdateKvConfig,DeleteKvConfig}Command``: the KV store of every
name server of ``-n`` (e.g. the ``ORDER_TOPIC_CONFIG`` namespace of order topics).

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ...errors import handle_errors
from ._common import DEFAULT_NAMESRV, JsonOption, NamesrvOption, emit, run_admin

if TYPE_CHECKING:
    from rocketpipe.client import Admin

NamespaceOption = Annotated[str, typer.Option("--namespace", "-s", help="The KV namespace.")]
KeyOption = Annotated[str, typer.Option("--key", "-k", help="The key.")]


def register(app: typer.Typer) -> None:
    """Add the name-server commands to ``app``."""
    app.command("updateKvConfig")(update_kv_config)
    app.command("deleteKvConfig")(delete_kv_config)


@handle_errors
def update_kv_config(
    namespace: NamespaceOption,
    key: KeyOption,
    value: Annotated[str, typer.Option("--value", "-v", help="The value.")],
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Create or update KV config (UpdateKvConfigCommand) on every name server."""

    async def go(admin: Admin) -> None:
        await admin.put_kv_config(namespace, key, value)

    run_admin(namesrv, go)
    emit(
        as_json,
        {"namespace": namespace, "key": key, "value": value},
        lambda c: c.print("create or update kv config to namespace success.", markup=False),
    )


@handle_errors
def delete_kv_config(
    namespace: NamespaceOption,
    key: KeyOption,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Delete KV config (DeleteKvConfigCommand) on every name server."""

    async def go(admin: Admin) -> None:
        await admin.delete_kv_config(namespace, key)

    run_admin(namesrv, go)
    emit(
        as_json,
        {"namespace": namespace, "key": key},
        lambda c: c.print("delete kv config from namespace success.", markup=False),
    )
