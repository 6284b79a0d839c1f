"""Fencing: the check a driver makes before each timeline change, so that an attempt whose lease was taken
over (a worker that lost its task) cannot start or complete the instant.

A fence is a callable that returns when this attempt still owns the plan and raises FencingError when not."""
from __future__ import annotations

from collections.abc import Callable

import httpx

from .errors import FencingError

Fence = Callable[[], None]


def no_fence() -> None:
    """The fence of a run nobody else can take over (`tms execute`, tests)."""


def http_fence(url: str, timeout: float = 10.0) -> Fence:
    """A fence for a Spark driver, which may run on a cluster node: GET `url` (the service's check of this
    attempt's lease and fencing token) must answer 2xx. No answer counts as a lost lease."""

    def check() -> None:
        try:
            response = httpx.get(url, timeout=timeout)
        except httpx.HTTPError as e:
            raise FencingError(f"cannot confirm the lease at {url}: {e}") from None
        if not response.is_success:
            raise FencingError(f"lease lost: {url} answered {response.status_code} {response.text.strip()[:200]}")

    return check
