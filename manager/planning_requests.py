"""The planners' periodic work, decided by the leader: it marks the enabled tables due for the periodic
trigger (every `planner_tick_seconds`) or the reconciliation scan (every `planner_scan_seconds`), and the
planners take the marked tables (SKIP LOCKED), so a scan over many tables is spread over every planner."""
from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, func, update

from tms.db import RegisteredTable

from .leadership import LeaderLease


def request_ticks(lease: LeaderLease, epoch: int) -> int:
    return _request(lease, epoch, RegisteredTable.tick_requested_at)


def request_scans(lease: LeaderLease, epoch: int) -> int:
    return _request(lease, epoch, RegisteredTable.scan_requested_at)


def _request(lease: LeaderLease, epoch: int, column: Any) -> int:
    """Mark every enabled table not already marked; the number marked."""
    with lease.fenced(epoch) as session:
        result = session.execute(update(RegisteredTable).where(RegisteredTable.enabled.is_(True), column.is_(None))
                                 .values({column: func.now()}), execution_options={"synchronize_session": False})
        return cast(CursorResult[Any], result).rowcount
