"""An HTTP client of the TMS API for the ops commands. Every failure is a TMSError of one line: the
service's own message (the `detail` of its error body) when it answered, else what kept it from answering."""
from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import httpx

from tms.errors import TMSError

DEFAULT_URL = "http://127.0.0.1:8080"
API = "/api/v1"


class ApiError(TMSError):
    """The service refused a request; the message is its own."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def one_line(text: str) -> str:
    return " ".join(text.split())


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail:
        return one_line(detail)
    if detail is not None:
        return one_line(json.dumps(detail))
    if isinstance(body, dict) and body:  # e.g. /readyz: {"status": "unavailable", "database": "..."}
        return one_line("; ".join(f"{k}: {v}" for k, v in body.items()))
    return one_line(f"HTTP {response.status_code} {response.reason_phrase}: {response.text[:200]}")


class TmsClient:
    """`request()` returns the response's JSON (None for an empty body) or raises a one-line TMSError."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None):
        self.url = url.rstrip("/")
        self.has_token = bool(token)
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)
        except (httpx.InvalidURL, TypeError, ValueError) as e:
            raise TMSError(f"{url!r} is not a URL of a TMS service: {e}") from None

    def __enter__(self) -> TmsClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json_body: Any = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, params=query, json=json_body)
        except httpx.TimeoutException:
            raise TMSError(f"TMS at {self.url} did not answer within {self.timeout:.0f} s") from None
        except httpx.ConnectError as e:
            raise TMSError(f"cannot reach TMS at {self.url}: {_reason(e)} (is it running? set TMS_URL or --url)"
                           ) from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
            raise TMSError(f"{self.url!r} is not a URL of a TMS service: {e}") from None
        except httpx.HTTPError as e:
            raise TMSError(f"request to TMS at {self.url} failed: {one_line(str(e)) or type(e).__name__}") from None
        if response.status_code >= 400:
            message = _message(response)
            if response.status_code == 401 and not self.has_token:
                message += " (set TMS_TOKEN or --token)"
            raise ApiError(response.status_code, message)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise TMSError(f"{self.url} answered {method} {path} with something else than JSON; "
                           f"is it a TMS service?") from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", API + path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", API + path, json_body=body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", API + path, json_body=body)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", API + path, json_body=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", API + path)

    def all_pages(self, path: str, *, page_size: int = 500, **params: Any) -> list[dict[str, Any]]:
        """Every item of a paged listing, walked with its keyset cursors (`next_cursor`)."""
        items: list[dict[str, Any]] = []
        cursor: dict[str, str] = {}
        while True:
            page = self.get(path, **params, **cursor, limit=page_size)
            items += page["items"]
            if not page.get("next_cursor"):
                return items
            cursor = {"cursor": page["next_cursor"]}


def _reason(error: httpx.ConnectError) -> str:
    text = one_line(str(error))
    if "refused" in text.lower():
        return "connection refused"
    return text or "connection failed"
