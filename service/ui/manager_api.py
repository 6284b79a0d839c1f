"""The manager's data (leader, mutes, webhooks and their deliveries), read through the manager's own HTTP
routes called in-process with the signed-in user's token, so the dashboard shows exactly what the API says
and needs no knowledge of the manager's tables. A service without those routes (no manager installed) makes
the pages say so instead of failing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request
from starlette.routing import Match

MANAGER = "/api/v1/manager"
MUTES = "/api/v1/mutes"
WEBHOOKS = "/api/v1/webhooks"


@dataclass(frozen=True)
class ApiAnswer:
    available: bool  # False: the service has no such route
    status_code: int = 0
    body: Any = None

    @property
    def ok(self) -> bool:
        return self.available and 200 <= self.status_code < 300

    @property
    def error(self) -> str:
        if not self.available:
            return "not available: this service has no manager API (the manager role is not installed)"
        detail = self.body.get("detail") if isinstance(self.body, dict) else None
        return f"{self.status_code}: {detail or self.body}"


def has_route(request: Request, path: str, method: str = "GET") -> bool:
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    return any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes)


async def call(request: Request, token: str, method: str, path: str, json: Any = None) -> ApiAnswer:
    if not has_route(request, path, method):
        return ApiAnswer(available=False)
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tms.dashboard") as client:
        response = await client.request(method, path, json=json, headers={"Authorization": f"Bearer {token}"})
    try:
        body = response.json()
    except ValueError:
        body = response.text
    return ApiAnswer(available=True, status_code=response.status_code, body=body)
