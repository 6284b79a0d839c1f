"""The planners' periodic work, decided by the leader: every `planner_tick_seconds` it marks the enabled
tables the periodic trigger is due on (their `tick_due_at` passed: an index range, not every table), and
every `planner_scan_seconds` it asks for a reconciliation scan as a handful of chunks of table ids. The
planners take marked tables and chunks (SKIP LOCKED), so a scan over many tables is spread over every
planner."""
from __future__ import annotations

from tms.db import ScanRequestRepo, TableRepo
from tms.leadership import LeaderLease

SCAN_CHUNK_TABLES = 500  # table ids per scan request: what one planner takes at once


def request_ticks(lease: LeaderLease, epoch: int) -> int:
    """Mark the tables due for the periodic trigger; the number marked."""
    with lease.fenced(epoch) as session:
        return TableRepo(session).request_ticks()


def request_scans(lease: LeaderLease, epoch: int) -> int:
    """Ask for a scan of every table; the number of chunks (0 while the previous scan's wait)."""
    with lease.fenced(epoch) as session:
        return ScanRequestRepo(session).request(SCAN_CHUNK_TABLES)
