"""The README's command lines name only commands and options that exist (the README stays honest)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from rocketpipe.cli.main import app

README = Path(__file__).resolve().parents[3] / "README.md"


def _command_lines() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Command line") :]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None, "the Command line section has no bash block"
    lines = []
    for raw in block.group(1).splitlines():
        line = raw.split("   #")[0].split("  #")[0].strip()
        if "rocketpipe " in line:
            lines.append(line[line.index("rocketpipe ") :])
    return lines


LINES = _command_lines()


def _resolve(argv: list[str]) -> tuple[Any, list[str]]:
    """The (sub)command an argv names (a click command, as typer builds it), and the rest of the argv."""
    cmd: Any = typer.main.get_command(app)
    rest = argv
    while hasattr(cmd, "commands") and rest and rest[0] in cmd.commands:
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    return cmd, rest


def test_the_section_lists_every_command() -> None:
    named = {tuple(shlex.split(line)[1:3]) for line in LINES}
    for command in ("serve", "produce", "consume", "topic"):
        assert any(c[0] == command for c in named), f"no README line uses `rocketpipe {command}`"


@pytest.mark.parametrize("line", LINES)
def test_readme_command_line_uses_existing_options(line: str) -> None:
    argv = shlex.split(line)[1:]
    if argv == ["--help"]:
        return
    cmd, rest = _resolve(argv)
    assert not hasattr(cmd, "commands"), f"{line!r} names no command"
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    for word in rest:
        if word.startswith("--"):
            assert word.split("=")[0] in known, f"{line!r}: `rocketpipe {cmd.name}` has no option {word}"
