"""The Starlette app behind `nvq web`: the Jobs, job and Nodes pages, the buttons that
act on jobs (POSTs), and the server-sent events that keep an open page current.
Every request needs the token (or the cookie it was traded for); see `access`."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from nvq.cli.render.queue import unreachable_label
from nvq.client.asynchronous import AsyncClient
from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.domain import gpu_oom
from nvq.domain.report import BY
from nvq.model import FINISHED_STATES, JobState
from nvq.web import access, pages, render
from nvq.web.live import Hub

Handler = Callable[[Request], Awaitable[Response]]
LOG_LINES = 50
MAX_FORM = 64 * 1024


@dataclass
class Site:
    root: Path
    token: str
    visitor: pages.Visitor
    client: AsyncClient
    hub: Hub

    @property
    def csrf(self) -> str:
        return access.csrf_value(self.token)


def build(root: Path, token: str, visitor: pages.Visitor) -> Starlette:
    # A page left open starts no daemon stopped on purpose (nvq.client.stop_mark).
    site = Site(root, token, visitor, AsyncClient(root, observing=True), Hub())
    env = render.environment()

    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            offered = request.query_params.get("token")
            if offered is not None:
                return _trade_token(site, request, offered)
            if not access.matches(site.token, request.cookies.get(access.COOKIE)):
                return _refused(401, "This page needs its token: open the URL `nvq web` printed.")
            if request.method == "POST" and not _same_origin(request):
                return _refused(403, "Refused: the form came from another site.")
            try:
                return await handler(request)
            except DaemonUnavailable as exc:
                return _refused(503, f"The queue's daemon does not answer: {exc}")
            except ClientError as exc:
                return _refused(404, str(exc))

        return endpoint

    def html(request: Request, body: str, **context: Any) -> HTMLResponse:
        fragment = request.headers.get("x-nvq-fragment") == "1"
        context.setdefault("error", request.query_params.get("error", ""))
        text = render.page(
            env, body, fragment=fragment, csrf=site.csrf, visitor=site.visitor,
            path=request.url.path, now=time.time(), **context,
        )  # fmt: skip
        return HTMLResponse(text, headers={"Cache-Control": "no-store"})

    async def jobs_page(request: Request) -> Response:
        q = request.query_params
        filters = pages.Filters(q.get("state", ""), q.get("user", ""), q.get("tag", ""))
        now = time.time()
        active = await site.client.jobs(active=True)
        finished = await site.client.jobs(
            states=[s.value for s in FINISHED_STATES], limit=pages.COMPLETED_SCAN
        )
        return html(
            request,
            "jobs.html",
            filters=filters,
            states=[s.value for s in JobState],
            active=pages.active_rows(active, filters, site.visitor, now),
            completed=pages.completed_rows(finished, filters, site.visitor, now,
                                           frozenset({JobState.COMPLETED})),
            ended_badly=pages.completed_rows(finished, filters, site.visitor, now,
                                             pages.ENDED_BADLY),
            window_days=int(pages.COMPLETED_WINDOW // 86400),
            cap=pages.COMPLETED_CAP,
        )

    async def job_page(request: Request) -> Response:
        job_id = int(request.path_params["id"])
        detail = await site.client.show(job_id)
        # `?attempt=N`: that attempt's output (not followed); else the latest's, followed
        picked = request.query_params.get("attempt", "")
        attempt = int(picked) if picked.isdigit() else None
        # A live refresh keeps the logs the page already follows: no need to read them.
        fragment = request.headers.get("x-nvq-fragment") == "1"
        logs = {
            s: None if fragment else await _tail(site.client, job_id, s, attempt)
            for s in ("stdout", "stderr")
        }
        runtimes, total = pages.attempt_runtimes(detail.attempts, time.time())
        try:
            artifacts = await site.client.artifacts(job_id)
        except ClientError:
            artifacts = None
        return html(
            request,
            "job.html",
            job=detail,
            row=pages.row(detail, site.visitor, time.time()),
            logs=logs,
            artifacts=artifacts,
            attempt=attempt,
            runtimes=runtimes,
            total_runtime=total,
            memory=[gpu_oom.attempt_words(a.vram_mb, a.vram_was_mb, a.peak_vram_mb)
                    for a in detail.attempts],
        )

    async def nodes_page(request: Request) -> Response:
        now = time.time()
        longest, _, coarse = pages.CHART_SPANS[-1]
        try:
            history = await site.client.gpu_history(since=now - longest, step=coarse)
            oldest = min((p.time for p in history), default=None)
            span, label, step = pages.chart_span(oldest, now, slack=coarse)
            if span < longest:
                history = await site.client.gpu_history(since=now - span, step=step)
        except ClientError:
            history = []  # a daemon without the history: the page shows no chart
            span, label, _ = pages.CHART_SPANS[1]
        nodes = await site.client.nodes()
        return html(
            request,
            "nodes.html",
            nodes=nodes,
            # `unreachable 40s (reassign in 1m20s)` while a node's grace runs
            unreachable={n.name: unreachable_label(n, now) for n in nodes},
            charts=pages.charts(history, now, span),
            chart_label=label,
            chart_w=pages.CHART_W,
            chart_h=pages.CHART_H,
        )

    async def usage_page(request: Request) -> Response:
        now = time.time()
        by = request.query_params.get("by", "user")
        span = request.query_params.get("since", "7d")
        if by not in BY or span not in pages.USAGE_SPANS:
            return _refused(400, "by: user, submitter, tag, node or day; since: 1d, 7d or 30d")
        doc = await site.client.report(now - pages.USAGE_SPANS[span], now, by=by)
        return html(
            request, "usage.html", report=doc, by=by, span=span, bys=BY,
            spans=list(pages.USAGE_SPANS), bars=pages.usage_bars(doc.rows),
        )  # fmt: skip

    async def act(request: Request) -> Response:
        form = await _form(request)
        if not access.matches(site.csrf, form.get("csrf")):
            return _refused(403, "Refused: the form's CSRF value is missing or wrong.")
        job_id = int(request.path_params["id"])
        action = request.path_params["action"]
        back = _local(form.get("back", "/"))
        actions: dict[str, Callable[[int], Awaitable[object]]] = {
            "pause": site.client.pause,
            "resume": site.client.resume,
            "cancel": site.client.cancel,
            "requeue": site.client.requeue,
            "release": site.client.release,
        }
        call = actions.get(action)
        if call is None:
            return _refused(404, f"No such action: {action}")
        try:
            await call(job_id)
        except ClientError as exc:
            back = _with_query(back, error=str(exc))
        return RedirectResponse(back, status_code=303)

    async def live(request: Request) -> Response:
        return StreamingResponse(
            _changes(site.hub),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def log_stream(request: Request) -> Response:
        job_id = int(request.path_params["id"])
        stream = request.path_params["stream"]
        if stream not in ("stdout", "stderr"):
            return _refused(404, f"No such log: {stream}")
        return StreamingResponse(
            _log_events(site.client, job_id, stream),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )

    async def progress(request: Request) -> Response:
        """The running jobs' progress lines ({id: line}), which raise no event: an
        open page that shows a running job reads them every few seconds."""
        try:
            lines = await site.client.progress_lines()
        except ClientError:
            lines = []
        return Response(json.dumps({str(p.id): p.progress for p in lines}),
                        media_type="application/json", headers={"Cache-Control": "no-store"})

    async def script(request: Request) -> Response:
        return FileResponse(render.STATIC / "live.js", media_type="text/javascript")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(site.hub.follow, site.client)
            yield
            tg.cancel_scope.cancel()

    routes = [
        Route("/", guarded(jobs_page)),
        Route("/jobs/{id:int}", guarded(job_page)),
        Route("/jobs/{id:int}/{action}", guarded(act), methods=["POST"]),
        Route("/jobs/{id:int}/log/{stream}", guarded(log_stream)),
        Route("/nodes", guarded(nodes_page)),
        Route("/usage", guarded(usage_page)),
        Route("/live", guarded(live)),
        Route("/progress", guarded(progress)),
        Route("/live.js", guarded(script)),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _trade_token(site: Site, request: Request, offered: str) -> Response:
    """The token in the URL becomes a cookie, and the URL loses the token."""
    if not access.matches(site.token, offered):
        return _refused(403, "This token is not the page's token.")
    rest = {k: v for k, v in request.query_params.items() if k != "token"}
    target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(access.COOKIE, site.token, httponly=True, samesite="strict", path="/")
    return response


async def _form(request: Request) -> dict[str, str]:
    """A small url-encoded form (the page's buttons send nothing else): parsed here
    rather than through python-multipart, which Starlette needs for `request.form()`."""
    body = await request.body()
    if len(body) > MAX_FORM:
        return {}
    pairs = parse_qsl(body.decode(errors="replace"), keep_blank_values=True)
    return dict(pairs)


def _same_origin(request: Request) -> bool:
    """A browser names the page a form was sent from; it must be this site."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host


def _refused(status: int, message: str) -> HTMLResponse:
    body = f"<!doctype html><title>nvq</title><p>{_escape(message)}</p>"
    return HTMLResponse(body, status_code=status)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _local(path: str) -> str:
    """Only a path on this site (never `//elsewhere`) as the place to go back to."""
    return path if path.startswith("/") and not path.startswith("//") else "/"


def _with_query(path: str, **params: str) -> str:
    return path.split("?", 1)[0] + "?" + urlencode(params)


async def _tail(client: AsyncClient, job_id: int, stream: str,
                attempt: int | None = None) -> str | None:
    try:
        chunks = [c async for c in client.logs(job_id, lines=LOG_LINES, stream=stream,  # type: ignore[arg-type]
                                               attempt=attempt)]
    except ClientError:
        return None
    return b"".join(chunks).decode(errors="replace")


async def _changes(hub: Hub) -> AsyncIterator[str]:
    """One `data:` line per wake-up: the page re-reads its live part."""
    seen = hub.last_id
    yield f"retry: 1000\ndata: {seen}\n\n"
    while True:
        newest = seen
        with anyio.move_on_after(15):
            newest = await hub.next_after(seen)
        if newest > seen:
            seen = newest
            yield f"data: {seen}\n\n"
        else:
            yield ": keep-alive\n\n"


async def _log_events(client: AsyncClient, job_id: int, stream: str) -> AsyncIterator[str]:
    """The log's last lines, then each new chunk, as JSON strings; `end` when done."""
    try:
        async for chunk in client.logs(job_id, lines=LOG_LINES, follow=True, stream=stream):  # type: ignore[arg-type]
            yield f"data: {json.dumps(chunk.decode(errors='replace'))}\n\n"
    except ClientError as exc:
        yield f"event: end\ndata: {json.dumps(str(exc))}\n\n"
        return
    yield 'event: end\ndata: ""\n\n'
