"""Instant times that are unique and increase in the order instants start, across processes (Hudi 1.x's
TrueTime): taken under the table's lock, a time is the clock read before waiting out the maximum expected
clock skew (SkewAdjustingTimeGenerator), so whoever takes the lock next reads a later clock; and it is later
than every instant and completion time on the timeline, so a slow clock never goes back."""
from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo

from ..errors import HudiError
from .instant import format_wall_clock, instant_wall_clock, new_instant_time


class TimeGenerator:
    def __init__(self, max_clock_skew_ms: int = 0, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep):
        self.max_clock_skew_ms = max_clock_skew_ms
        self._clock = clock
        self._sleep = sleep

    def next_time(self, zone: tzinfo, after: str = "") -> str:
        """A new instant time (yyyyMMddHHmmssSSS, wall-clock time in the table's timeline zone `zone`) later
        than `after` (the latest time on the timeline): where a daylight-saving change turns the wall clock
        back, the times go on from the latest one instead."""
        now = datetime.fromtimestamp(self._clock(), UTC)
        if self.max_clock_skew_ms:
            self._sleep(self.max_clock_skew_ms / 1000)
        ts = new_instant_time(zone, now)
        if after and ts <= after:
            ts = later_than(after)
        return ts


def later_than(ts: str) -> str:
    """The instant time one millisecond after `ts` on the wall clock (a 14-digit second-precision time
    counts as its .000)."""
    try:
        return format_wall_clock(instant_wall_clock(ts) + timedelta(milliseconds=1))
    except (HudiError, ValueError):  # not a calendar time (Hudi's "00000000000000" init instants)
        return str(int(ts) + 1).zfill(len(ts))
