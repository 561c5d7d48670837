"""The console's Starlette application: server-rendered Jinja2 pages over :class:`ConsoleService`.

Pages: ``/cluster`` (brokers, runtime info, put / get TPS chart), ``/topics`` (list, create),
``/topics/{topic}`` (queues and offsets, messages-per-second chart, delete), ``/groups``,
``/groups/{group}`` (members, consume mode, lag per queue, reset offset by time), ``/producers``
(producer connections of a group on a topic), ``/messages``
(search by key, msg id or time range) and ``/messages/view/{offset_msg_id}`` (with the groups'
consumption and the message trace), ``/dlq`` and
``/dlq/{group}`` (dead messages, resend). JSON for the charts: ``/api/cluster``,
``/api/topics/{topic}/offsets`` and ``/api/groups/{group}/tps``. ``/groups/{group}/clients/{client_id}``
shows one member's running info. Static files (CSS, the chart script) are served from the
package; nothing is fetched from a CDN.

Write requests (POST) answer 403 unless :attr:`ConsoleSettings.allow_writes`, and are refused
when their ``Origin`` is not the console's own (a form on another site cannot post here).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ..errors import RocketMQError
from .service import DLQ_PREFIX, RETRY_PREFIX, ConsoleService, ConsoleSettings

_HERE = Path(__file__).parent
Handler = Callable[[Request], Awaitable[Response]]


def format_ms(ms: int | float | None) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS.mmm`` UTC; ``-`` for 0 / None."""
    if not ms or ms <= 0:
        return "-"
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S.") + f"{int(ms) % 1000:03d}"


def format_num(value: object) -> str:
    """A number with at most 2 decimals (``12.35``, ``3``); other values as they are."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    return f"{value:.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def parse_time(text: str | None, default_ms: int) -> int:
    """Epoch ms from ``YYYY-MM-DD[ T]HH:MM[:SS]`` (UTC) or from digits (epoch ms); ``default_ms``
    when empty.

    Raises:
        ValueError: neither form.
    """
    text = (text or "").strip()
    if not text:
        return default_ms
    if text.lstrip("-").isdigit():
        return int(text)
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"):
        try:
            t = time.strptime(text, fmt)
        except ValueError:
            continue
        return calendar.timegm(t) * 1000
    raise ValueError(f"not a time: {text!r} (use YYYY-MM-DD HH:MM:SS in UTC, or epoch ms)")


def _input_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


async def _form(request: Request) -> dict[str, str]:
    """The fields of an ``application/x-www-form-urlencoded`` POST (the console's forms send
    nothing else; no python-multipart needed). A repeated field keeps its last value."""
    return dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))


def create_app(settings: ConsoleSettings) -> Starlette:
    """Build the console application for one cluster.

    The app opens its :class:`ConsoleService` (one admin client) in its lifespan and closes it
    on shutdown; serve it with uvicorn (:func:`rocketpipe.console.start_console`).
    """
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    env = templates.env
    env.filters["ms"] = format_ms
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["num"] = format_num
    env.globals["allow_writes"] = settings.allow_writes
    env.globals["namesrv_addr"] = settings.namesrv_addr
    state: dict[str, ConsoleService] = {}

    def svc() -> ConsoleService:
        return state["svc"]

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def write(handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            if not settings.allow_writes:
                return page(
                    request,
                    "error.html",
                    403,
                    title="Read-only console",
                    message="Write actions are disabled: start the console with --allow-writes.",
                )
            origin = request.headers.get("origin")
            # a browser sends Origin with every form POST; "null" (sandboxed frames, files) is refused too
            if origin and urlsplit(origin).netloc != request.headers.get("host"):
                return page(request, "error.html", 403, title="Refused", message=f"cross-site request from {origin}")
            return await handler(request)

        return guarded

    # ------------------------------------------------------------------ cluster

    async def index(request: Request) -> Response:
        return RedirectResponse("/cluster", 302)

    async def cluster(request: Request) -> Response:
        return page(request, "cluster.html", brokers=await svc().brokers(), nav="cluster")

    async def api_cluster(request: Request) -> Response:
        rows = await svc().brokers(with_config=False)
        return JSONResponse(
            {
                "time_ms": int(time.time() * 1000),
                "brokers": [
                    {
                        "broker": f"{r.broker_name}/{r.broker_id}",
                        "addr": r.addr,
                        "put_tps": r.tps("putTps"),
                        "get_tps": r.tps("getTransferedTps") or r.tps("getTransferredTps"),
                    }
                    for r in rows
                ],
            }
        )

    # ------------------------------------------------------------------ topics

    async def topics(request: Request) -> Response:
        kind = request.query_params.get("kind", "normal")
        rows = [t for t in await svc().topics() if kind == "all" or t[1] == kind]
        return page(request, "topics.html", topics=rows, kind=kind, nav="topics")

    async def create_topic(request: Request) -> Response:
        form = await _form(request)
        topic = str(form.get("topic", "")).strip()
        queues = int(str(form.get("queues", "4")) or 4)
        await svc().create_topic(topic, queues)
        return RedirectResponse(f"/topics/{quote(topic, safe='')}?created=1", 303)

    async def topic(request: Request) -> Response:
        name = request.path_params["topic"]
        detail = await svc().topic_detail(name)
        return page(request, "topic.html", t=detail, created=request.query_params.get("created"), nav="topics")

    async def delete_topic(request: Request) -> Response:
        name = request.path_params["topic"]
        addrs = await svc().delete_topic(name)
        return page(request, "done.html", title="Topic deleted", message=f"{name} deleted on {', '.join(addrs)}")

    async def send_message(request: Request) -> Response:
        name = request.path_params["topic"]
        form = await _form(request)
        msg_id, broker, queue_id, offset = await svc().send_message(
            name, form.get("body", ""), form.get("tags", "").strip(), form.get("keys", "").strip()
        )
        return page(
            request,
            "done.html",
            title="Message sent",
            message=f"msg id {msg_id} stored in {broker} queue {queue_id} at offset {offset}",
            link=f"/topics/{quote(name, safe='')}",
            nav="topics",
        )

    async def api_topic_offsets(request: Request) -> Response:
        now, total = await svc().topic_offsets(request.path_params["topic"])
        return JSONResponse({"time_ms": now, "max_offset_sum": total})

    # ------------------------------------------------------------------ groups

    async def groups(request: Request) -> Response:
        return page(request, "groups.html", groups=await svc().group_overview(), nav="groups")

    async def group(request: Request) -> Response:
        name = request.path_params["group"]
        detail = await svc().group_detail(name)
        now = int(time.time() * 1000)
        modes, modes_error = await svc().request_modes(name)
        topics = [r.topic for r in detail.lag_rows] + [s[0] for s in detail.subscriptions]
        default_topic = next((t for t in topics if not t.startswith(RETRY_PREFIX)), "")
        return page(
            request,
            "group.html",
            g=detail,
            default_topic=default_topic,
            modes=modes,
            modes_error=modes_error,
            default_time=_input_time(now - 3600_000),
            nav="groups",
        )

    async def reset_offset(request: Request) -> Response:
        name = request.path_params["group"]
        form = await _form(request)
        ts = parse_time(str(form.get("time", "")), -1)
        new = await svc().reset_offset(name, str(form.get("topic", "")), ts)
        rows = sorted((mq.broker_name, mq.queue_id, off) for mq, off in new.items())
        return page(request, "reset.html", group=name, topic=form.get("topic"), time_ms=ts, rows=rows, nav="groups")

    async def client(request: Request) -> Response:
        name, client_id = request.path_params["group"], request.path_params["client_id"]
        info = await svc().client_info(name, client_id)
        queues = sorted(info.mq_table.items())
        return page(request, "client.html", group=name, client_id=client_id, info=info, queues=queues, nav="groups")

    async def api_group_tps(request: Request) -> Response:
        series = await svc().group_tps(request.path_params["group"])
        return JSONResponse({"time_ms": int(time.time() * 1000), "series": series})

    async def consume_mode(request: Request) -> Response:
        name = request.path_params["group"]
        form = await _form(request)
        topic_name, mode = form.get("topic", "").strip(), form.get("mode", "PULL")
        addrs = await svc().set_consume_mode(name, topic_name, mode, int(form.get("pop_share_queue_num") or 0))
        return page(
            request,
            "done.html",
            title="Consume mode set",
            message=f"{name} consumes {topic_name} in {mode} mode on {', '.join(addrs)}",
            link=f"/groups/{quote(name, safe='')}",
            nav="groups",
        )

    # ------------------------------------------------------------------ messages

    async def messages(request: Request) -> Response:
        qp = request.query_params
        now = int(time.time() * 1000)
        begin = parse_time(qp.get("begin"), now - 3600_000)
        end = parse_time(qp.get("end"), now + 60_000)
        topic_name = (qp.get("topic") or "").strip()
        mode = qp.get("mode", "key")
        found = None
        note = None
        if topic_name:
            if mode == "id":
                try:
                    found = [await svc().search_by_id(topic_name, (qp.get("msg_id") or "").strip())]
                except RocketMQError as e:  # nothing under that id: an empty result, with the reason
                    found, note = [], str(e)
            elif mode == "time":
                found = await svc().browse(topic_name, begin, end)
            else:
                found = await svc().search_by_key(topic_name, (qp.get("key") or "").strip(), begin, end)
        return page(
            request,
            "messages.html",
            found=found,
            note=note,
            topic=topic_name,
            mode=mode,
            key=qp.get("key", ""),
            msg_id=qp.get("msg_id", ""),
            begin=_input_time(begin),
            end=_input_time(end),
            nav="messages",
        )

    async def view_message(request: Request) -> Response:
        view = await svc().view(request.path_params["offset_msg_id"])
        tracks, tracks_error = await svc().tracks(view.msg)
        traces, traces_error = await svc().traces(view.msg_id)
        return page(
            request,
            "message.html",
            v=view,
            tracks=tracks,
            tracks_error=tracks_error,
            traces=traces,
            traces_error=traces_error,
            nav="messages",
        )

    async def producers(request: Request) -> Response:
        qp = request.query_params
        topic_name, group_name = (qp.get("topic") or "").strip(), (qp.get("group") or "").strip()
        found = await svc().producers(topic_name, group_name) if topic_name and group_name else None
        return page(request, "producers.html", topic=topic_name, group=group_name, found=found, nav="producers")

    # ------------------------------------------------------------------ DLQ

    async def dlq(request: Request) -> Response:
        return page(request, "dlq.html", topics=await svc().dlq_topics(), nav="dlq")

    async def dlq_group(request: Request) -> Response:
        name = request.path_params["group"]
        qp = request.query_params
        now = int(time.time() * 1000)
        begin = parse_time(qp.get("begin"), now - 24 * 3600_000)
        end = parse_time(qp.get("end"), now + 60_000)
        unreadable = await svc().unreadable_brokers(DLQ_PREFIX + name)
        found = [] if unreadable else await svc().browse(DLQ_PREFIX + name, begin, end)
        return page(
            request,
            "dlq_group.html",
            group=name,
            found=found,
            unreadable=unreadable,
            begin=_input_time(begin),
            end=_input_time(end),
            nav="dlq",
        )

    async def dlq_make_readable(request: Request) -> Response:
        name = request.path_params["group"]
        addrs = await svc().make_readable(DLQ_PREFIX + name)
        return page(
            request,
            "done.html",
            title="DLQ made readable",
            message=f"{DLQ_PREFIX}{name} is readable (perm 6) on {', '.join(addrs) or 'every broker already'}",
            link=f"/dlq/{quote(name, safe='')}",
            nav="dlq",
        )

    async def dlq_resend(request: Request) -> Response:
        form = await _form(request)
        retry_topic, new_id = await svc().resend_dlq(str(form.get("offset_msg_id", "")))
        return page(
            request,
            "done.html",
            title="Message resent",
            message=f"resent to {retry_topic} as msg id {new_id}",
            nav="dlq",
        )

    # ------------------------------------------------------------------ errors and wiring

    async def on_error(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 502, title="The cluster refused", message=f"{type(exc).__name__}: {exc}")

    async def on_bad_input(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 400, title="Bad input", message=str(exc))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["svc"] = ConsoleService(settings)
        try:
            yield
        finally:
            await state.pop("svc").close()

    routes = [
        Route("/", index),
        Route("/cluster", cluster),
        Route("/api/cluster", api_cluster),
        Route("/topics", topics),
        Route("/topics", write(create_topic), methods=["POST"]),
        Route("/topics/{topic}", topic),
        Route("/topics/{topic}/delete", write(delete_topic), methods=["POST"]),
        Route("/topics/{topic}/send", write(send_message), methods=["POST"]),
        Route("/api/topics/{topic}/offsets", api_topic_offsets),
        Route("/groups", groups),
        Route("/groups/{group}", group),
        Route("/groups/{group}/reset", write(reset_offset), methods=["POST"]),
        Route("/groups/{group}/mode", write(consume_mode), methods=["POST"]),
        Route("/groups/{group}/clients/{client_id}", client),
        Route("/api/groups/{group}/tps", api_group_tps),
        Route("/producers", producers),
        Route("/messages", messages),
        Route("/messages/view/{offset_msg_id}", view_message),
        Route("/dlq", dlq),
        Route("/dlq/resend", write(dlq_resend), methods=["POST"]),
        Route("/dlq/{group}", dlq_group),
        Route("/dlq/{group}/readable", write(dlq_make_readable), methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={RocketMQError: on_error, ValueError: on_bad_input},
    )
