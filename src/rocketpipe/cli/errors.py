"""Exit codes of the ``rocketpipe`` command and the mapping from errors to them (L4, cli).

| code | meaning |
|------|---------|
| 0    | success |
| 1    | failure: an unexpected error, a demo reconciliation mismatch, a send not SEND_OK |
| 2    | usage: bad option or argument (also :class:`~rocketpipe.errors.InvalidArgumentError`) |
| 3    | connection: a name server or broker could not be reached or closed the connection |
| 4    | timeout: a request timed out, or ``consume --timeout`` passed before ``--count`` |
| 5    | not found: no route for the topic (topic missing) |
| 6    | broker: the broker or name server answered with an error code |
| 7    | protocol: a peer sent bytes that break the remoting protocol |
| 130  | interrupted (Ctrl-C) |

Imports: :mod:`rocketpipe.errors`, ``typer``, ``rich``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, ParamSpec, TypeVar

import typer
from rich.console import Console

from ..errors import (
    BrokerError,
    InvalidArgumentError,
    ProtocolError,
    RequestTimeoutError,
    RocketMQError,
    RouteNotFoundError,
    TopicNotExistError,
    TransportError,
)

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_CONNECTION: Final = 3
EXIT_TIMEOUT: Final = 4
EXIT_NOT_FOUND: Final = 5
EXIT_BROKER: Final = 6
EXIT_PROTOCOL: Final = 7
EXIT_INTERRUPTED: Final = 130

#: Console for error messages (stderr).
err_console = Console(stderr=True, highlight=False)

P = ParamSpec("P")
R = TypeVar("R")


def exit_code_for(exc: BaseException) -> int:
    """Return the process exit code for an exception.

    Args:
        exc: the exception that ended a command.

    Returns:
        One of the ``EXIT_*`` codes of this module (see the module docstring).
    """
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, InvalidArgumentError):
        return EXIT_USAGE
    if isinstance(exc, RequestTimeoutError | TimeoutError):
        return EXIT_TIMEOUT
    if isinstance(exc, TransportError | ConnectionError):
        return EXIT_CONNECTION
    if isinstance(exc, RouteNotFoundError | TopicNotExistError):
        return EXIT_NOT_FOUND
    if isinstance(exc, BrokerError):
        return EXIT_BROKER
    if isinstance(exc, ProtocolError):
        return EXIT_PROTOCOL
    return EXIT_FAILURE


_HINTS: Final[dict[int, str]] = {
    EXIT_CONNECTION: "is the name server/broker running? (`rocketpipe serve`; check --namesrv or NAMESRV_ADDR)",
    EXIT_TIMEOUT: "the peer did not answer in time; retry, or check that it is not overloaded",
    EXIT_NOT_FOUND: "the topic has no route; create it or send to it first (brokers auto-create topics by default)",
}


def fail(message: str, code: int = EXIT_FAILURE) -> typer.Exit:
    """Print ``error: message`` on stderr and return the :class:`typer.Exit` to raise.

    Args:
        message: what went wrong, in one line.
        code: the exit code.

    Returns:
        A ``typer.Exit(code)`` for the caller to raise.
    """
    err_console.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command so rocketpipe errors end the process with a message and a mapped exit code.

    Args:
        fn: the typer command function.

    Returns:
        The wrapped function (same signature, so typer still reads its options).
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (RocketMQError, TimeoutError, ConnectionError) as exc:
            code = exit_code_for(exc)
            err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {exc}")
            hint = _HINTS.get(code)
            if hint:
                err_console.print(f"[dim]hint: {hint}[/]")
            raise typer.Exit(code) from None

    return wrapper
