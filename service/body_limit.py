"""Request bodies bounded per route, so that what a request may cost is known before anyone is authenticated:
a body above its route's bound is refused with a 413 (one line, as every error) before it is parsed, by its
Content-Length before the app sees the request, or, for a chunked body, as soon as the bytes received pass
the bound. Routes that take many items at once (a batch of events, a commit's write statistics, a list of
files) have a larger bound than the rest."""
from __future__ import annotations

import re

from fastapi import HTTPException, Request, status
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import problem

# The routes taking many items in one body (their templates), bounded by TMS_MAX_BULK_BODY_BYTES.
BULK_ROUTES = ("/api/v1/hudi/callback", "/api/v1/events", "/api/v1/events:batch",
               "/api/v1/tables/{table_id}/orphans:remove")


def too_large(bound: int, setting: str) -> str:
    return f"the request body is larger than {bound} bytes ({setting})"


class BodyLimit:
    """An ASGI middleware: `default` bytes for every route, `bulk` for BULK_ROUTES."""

    def __init__(self, app: ASGIApp, *, default: int, bulk: int):
        self.app = app
        self.default = (default, "TMS_MAX_BODY_BYTES")
        self.bulk = (bulk, "TMS_MAX_BULK_BODY_BYTES")
        self.bulk_paths = [compile_path(path)[0] for path in BULK_ROUTES]

    def bound_of(self, path: str) -> tuple[int, str]:
        """The bound of the route at `path`, and the setting that sets it."""
        return self.bulk if any(p.fullmatch(path) for p in self.bulk_paths) else self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        bound, setting = self.bound_of(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > bound:
            await problem(Request(scope), status.HTTP_413_CONTENT_TOO_LARGE, too_large(bound, setting))(
                scope, receive, send)
            return
        received = 0

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > bound:  # a chunked body (or one longer than it said): the app answers 413
                    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, too_large(bound, setting))
            return message

        await self.app(scope, bounded_receive, send)


_DIGITS = re.compile(rb"[0-9]+")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if _DIGITS.fullmatch(value) else None
    return None
