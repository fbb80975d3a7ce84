"""The console's web application (aiohttp): the page and its script and styles (static/, with uPlot
vendored: it works offline) and a read-only JSON API that the page polls.

GET /                  the page
GET /api/overview      figures, series, clusters, latest pairs, dead letters, lag
GET /api/document/ID   an id's current verdict, its history (deletions included) and its cluster
GET /api/pair?a=&b=    the two texts and their shared and differing passages (a: the later document)
GET /api/text?id=      one document's text
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from stream.console.diff import diff_texts
from stream.console.document_reader import DocumentReader
from stream.console.model import ConsoleState
from stream.errors import DedupError

STATIC = Path(str(resources.files("stream.console").joinpath("static")))


@dataclass
class Console:
    state: ConsoleState
    lock: threading.Lock  # the feed thread writes the state
    reader: DocumentReader
    status: Callable[[], dict[str, Any]]  # the feed's condition for the page (caught up, error)


CONSOLE = web.AppKey("console", Console)


def _state(request: web.Request) -> tuple[ConsoleState, threading.Lock]:
    console = request.app[CONSOLE]
    return console.state, console.lock


async def index(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


async def overview(request: web.Request) -> web.Response:
    state, lock = _state(request)
    with lock:
        body = state.overview()
    body["status"] = request.app[CONSOLE].status()
    return web.json_response(body)


async def document(request: web.Request) -> web.Response:
    state, lock = _state(request)
    with lock:
        body = state.document(request.match_info["doc"])
    return web.json_response(body)


def _missing(message: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=message, content_type="text/plain")


async def _read(request: web.Request, position: dict[str, Any] | None, doc: str) -> dict[str, Any]:
    if position is None:
        raise _missing(f"no current verdict for {doc!r} (unknown, or deleted)")
    try:
        shown = await asyncio.to_thread(request.app[CONSOLE].reader.read, position)
    except DedupError as exc:
        raise _missing(str(exc)) from None
    return shown.to_json()


async def pair(request: web.Request) -> web.Response:
    a, b = request.query.get("a", ""), request.query.get("b", "")
    if not a or not b:
        raise web.HTTPBadRequest(text="give two ids: /api/pair?a=ID&b=ID", content_type="text/plain")
    state, lock = _state(request)
    with lock:
        where_a, where_b = state.position_of(a), state.position_of(a, b)
        verdict = state.latest.get(a)
    first, second = await _read(request, where_a, a), await _read(request, where_b, b)
    # the canonical's text on the left: it came first
    diff = await asyncio.to_thread(diff_texts, second["text"], first["text"])
    return web.json_response({"a": second, "b": first, "verdict": verdict, **diff.to_json()})


async def text(request: web.Request) -> web.Response:
    doc = request.query.get("id", "")
    state, lock = _state(request)
    with lock:
        position = state.position_of(doc)
    return web.json_response(await _read(request, position, doc))


@web.middleware
async def read_only(request: web.Request, handler: Any) -> web.StreamResponse:
    """Nothing on this server changes anything: only GET (and HEAD) are answered."""
    if request.method not in ("GET", "HEAD"):
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"])
    response: web.StreamResponse = await handler(request)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def make_app(console: Console) -> web.Application:
    app = web.Application(middlewares=[read_only])
    app[CONSOLE] = console
    app.router.add_get("/", index)
    app.router.add_get("/api/overview", overview)
    app.router.add_get("/api/document/{doc:.+}", document)
    app.router.add_get("/api/pair", pair)
    app.router.add_get("/api/text", text)
    app.router.add_static("/static/", STATIC)
    return app
