"""Fencing: the check a driver makes before each timeline change, so that an attempt whose lease was taken
over (a worker that lost its task) cannot start or complete the instant.

A fence is a callable that returns when this attempt still owns the plan and raises FencingError when not."""
from __future__ import annotations

import re
from collections.abc import Callable

import httpx

from .errors import FencingError

Fence = Callable[[], None]
REDACTED = "<redacted>"
# The key of a fence URL (`...?token=3&key=...`): whoever holds it can answer for the attempt's job.
_URL_KEY = re.compile(r"([?&]key=)[^&#\s'\"]+")


def redact_fence_keys(text: str, *keys: str) -> str:
    """`text` with the key of every fence URL in it, and each of `keys` wherever it stands, hidden: for what
    viewers read (task and attempt errors, log tails) and the console."""
    text = _URL_KEY.sub(rf"\g<1>{REDACTED}", text)
    for key in keys:
        if key:
            text = text.replace(key, REDACTED)
    return text


def no_fence() -> None:
    """The fence of a run nobody else can take over (`tms execute`, tests)."""


def http_fence(url: str, timeout: float = 10.0) -> Fence:
    """A fence for a Spark driver, which may run on a cluster node: GET `url` (the service's check of this
    attempt's lease and fencing token) must answer 2xx. No answer counts as a lost lease."""

    def check() -> None:
        try:
            response = httpx.get(url, timeout=timeout)
        except httpx.HTTPError as e:
            raise FencingError(redact_fence_keys(f"cannot confirm the lease at {url}: {e}")) from None
        if not response.is_success:
            raise FencingError(redact_fence_keys(f"lease lost: {url} answered {response.status_code} "
                                                 f"{response.text.strip()[:200]}"))

    return check
