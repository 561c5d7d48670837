"""The ``rocketpipe`` command: subcommand registry (L4, cli).

``rocketpipe serve | produce | consume | topic create/stats | admin <mqadmin command> | demo``; see
``rocketpipe --help``. Errors end the process with the exit codes listed in :mod:`rocketpipe.cli.errors`.
"""

from __future__ import annotations

import typer

from .commands.admin import admin_app
from .commands.console import console
from .commands.consume import consume
from .commands.produce import produce
from .commands.proxy import proxy
from .commands.serve import serve
from .commands.topic import topic_app
from .demo import demo

app = typer.Typer(
    name="rocketpipe",
    help="Apache RocketMQ's messaging system in pure Python: broker, name server, clients, demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("serve")(serve)
app.command("produce")(produce)
app.command("consume")(consume)
app.command("demo")(demo)
app.command("console")(console)
app.command("proxy")(proxy)
app.add_typer(topic_app, name="topic")
app.add_typer(admin_app, name="admin")


def main() -> None:
    """Run the command line (``python -m rocketpipe``)."""
    app(prog_name="rocketpipe")
