"""stdlib logging for long-running commands such as ``rocketpipe serve`` (L4, cli).

:func:`configure_logging` sends every record of the process to one handler, stderr or a
size-rotated file (:class:`logging.handlers.RotatingFileHandler`), formatted as::

    2025-01-31 12:00:00,123 INFO rocketpipe.cli.serve: message

Imports: stdlib only.
"""

from __future__ import annotations

import logging
import logging.handlers
from enum import StrEnum
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_LOG_BACKUPS", "DEFAULT_LOG_MAX_BYTES", "LOG_FORMAT", "LogLevel", "configure_logging"]

#: Timestamp (local time, milliseconds), level, logger name, message.
LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Size at which the log file is rotated, bytes (100 MiB).
DEFAULT_LOG_MAX_BYTES: Final = 100 * 1024 * 1024
#: Rotated files kept (``serve.log.1`` .. ``serve.log.5``).
DEFAULT_LOG_BACKUPS: Final = 5


class LogLevel(StrEnum):
    """Levels accepted by ``--log-level``."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


def configure_logging(
    level: LogLevel | str = LogLevel.INFO,
    log_file: Path | None = None,
    *,
    max_bytes: int = DEFAULT_LOG_MAX_BYTES,
    backups: int = DEFAULT_LOG_BACKUPS,
) -> logging.Handler:
    """Replace the root logger's handlers with one stderr or rotating-file handler.

    Args:
        level: lowest level written (a :class:`LogLevel` or its name).
        log_file: file to append to, rotated at ``max_bytes`` keeping ``backups`` old files;
            None writes to stderr. Its directory is created if missing.
        max_bytes: rotation size, bytes (> 0).
        backups: rotated files kept (>= 1).

    Returns:
        The installed handler.

    Raises:
        ValueError: ``max_bytes`` or ``backups`` out of range, or an unknown level.
        OSError: the log file cannot be opened.
    """
    if max_bytes <= 0 or backups < 1:
        raise ValueError(f"max_bytes must be > 0 and backups >= 1, not {max_bytes} and {backups}")
    handler: logging.Handler
    if log_file is None:
        handler = logging.StreamHandler()
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.basicConfig(level=str(LogLevel(str(level).upper())), handlers=[handler], force=True)
    logging.captureWarnings(True)
    return handler
