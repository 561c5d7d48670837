"""A web console for any RocketMQ cluster (rocketpipe's or Apache's), like rocketmq-dashboard.

Starlette + Jinja2, server-rendered, served by uvicorn; a small vanilla script draws the
charts (no CDN). ``rocketpipe console -n NAMESRV --port 8080`` runs it; ``serve`` can start it
in-process with :func:`start_console`. Pages: cluster and brokers, topics (queues and offsets,
messages-per-second), consumer groups (members, lag, reset offset by time), message search
(key, msg id, time range), DLQ browsing and resend. Write actions need ``allow_writes``.

Layering: above ``client`` (uses only its public API plus ``protocol`` shapes and ``errors``);
``cli`` imports it. Needs the ``console`` extra (starlette, uvicorn, jinja2).
"""

from __future__ import annotations

from .app import create_app
from .server import ConsoleHandle, start_console
from .service import ConsoleService, ConsoleSettings

__all__ = ["ConsoleHandle", "ConsoleService", "ConsoleSettings", "create_app", "start_console"]
