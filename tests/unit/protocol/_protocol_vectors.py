"""Loader for tests/vectors/*.hex: '#' starts a comment; whitespace is ignored."""

from __future__ import annotations

from pathlib import Path

VECTORS = Path(__file__).resolve().parents[2] / "vectors"


def load_hex(name: str) -> bytes:
    """Return the bytes of ``tests/vectors/<name>``; the file must name its provenance."""
    text = (VECTORS / name).read_text(encoding="utf-8")
    assert "provenance:" in text.splitlines()[0], f"{name} lacks a provenance line"
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()).replace(" ", ""))
