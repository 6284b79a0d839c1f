"""Fencing: the check a driver makes before each timeline change, so that an attempt whose lease was taken
over (a worker that lost its task) cannot start or complete the instant.

A fence is a callable that returns when this attempt still owns the plan and raises FencingError when not."""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

import httpx

from .errors import FencingError

log = logging.getLogger(__name__)
Fence = Callable[[], None]
# How long a fence check keeps asking a service that does not answer: the default lease
# (TMS_WORKER_LEASE_SECONDS), which the worker renews meanwhile without the service.
FENCE_PATIENCE_SECONDS = 60.0

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


def http_fence(url: str, timeout: float = 10.0, patience: float = FENCE_PATIENCE_SECONDS,
               sleep: Callable[[float], None] = time.sleep) -> Fence:
    """A fence for a Spark driver, which may run on a cluster node: GET `url` (the service's check of this
    attempt's lease and fencing token) must answer 2xx; a 4xx (a wrong key, a lost lease) stops the job at once.
    No answer in `timeout` seconds, a refused connection or a 5xx says nothing of the lease: asked again, with
    growing pauses, for up to `patience` seconds before it counts as a lost lease, so a service slow to answer
    does not end an attempt whose lease its worker keeps renewing."""
    shown = url.partition("?")[0]  # never the fence key in an error text

    def check() -> None:
        deadline = time.monotonic() + patience
        pause = 0.5
        asked = 0
        while True:
            asked += 1
            try:
                response = httpx.get(url, timeout=timeout)
            except httpx.HTTPError as e:
                unanswered = f"cannot confirm the lease at {shown}: {type(e).__name__}"
            else:
                if response.is_success:
                    return
                if response.status_code < 500:
                    raise FencingError(f"lease lost: {shown} answered {response.status_code} "
                                       f"{response.text.strip()[:200]}")
                unanswered = f"cannot confirm the lease at {shown}: it answered {response.status_code}"
            left = deadline - time.monotonic()
            if left <= 0 and asked > 1:  # asked again at least once, however slow the first answer was
                raise FencingError(f"{unanswered} (asked for {patience:g} s)")
            log.warning("%s; asking again", unanswered)
            sleep(min(pause, max(left, 0.05)))
            pause = min(pause * 2, 8.0)

    return check
