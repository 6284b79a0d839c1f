"""When a table's backup is due: pure functions of its schedule, its last backup and the time.

A schedule is "daily" (00:00 UTC), "hourly" (on the hour) or a five-field cron expression (UTC), read by
APScheduler's CronTrigger. A backup is due once a fire time has passed with no backup requested since it; a
table with no backup yet is due at once. A due backup not done within the grace is missed."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tms.planning.cron import parse_schedule
from tms.table_service import TableService

if TYPE_CHECKING:
    from tms.db import BackupHistory

# How far back the last fire time is looked for (a yearly cron expression fires at least once a year).
LOOKBACK = timedelta(days=366)


def last_fire_time(schedule: str, now: datetime) -> datetime | None:
    """The latest fire time of `schedule` at or before `now` (within a year)."""
    trigger = parse_schedule(schedule)
    # Walk forward from the lookback by the trigger's own arithmetic; dailies and hourlies need few steps
    # once the start is near: begin a day (then a year) back.
    for back in (timedelta(days=1), timedelta(days=32), LOOKBACK):
        start = now - back
        fire = trigger.get_next_fire_time(None, start)
        last = None
        while fire is not None and fire <= now:
            last = fire
            fire = trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
        if last is not None:
            return last
    return None


def backup_due(schedule: str, last_requested: datetime | None, now: datetime) -> bool:
    """Whether a backup should be requested now: never backed up, or a fire time passed since the last request."""
    if last_requested is None:
        return True
    fire = last_fire_time(schedule, now)
    return fire is not None and fire > last_requested


def missed_since(schedule: str, first_requested: datetime | None, last_succeeded_request: datetime | None,
                 now: datetime, grace: timedelta) -> datetime | None:
    """The fire time whose backup is missed: passed more than `grace` ago, after the table's first backup (the
    policy held then), with no backup requested since it that succeeded. None: nothing is missed."""
    if first_requested is None:
        return None
    fire = last_fire_time(schedule, now - grace)
    if fire is None or fire < first_requested:
        return None
    if last_succeeded_request is not None and last_succeeded_request >= fire:
        return None
    return fire


def next_backup_task(schedule: str, history: BackupHistory, now: datetime) -> TableService | None:
    """What the schedule asks of a table's backups now: a backup when due, else a backup-clean after each
    backup that succeeded since the last one (it expires what the new version pushed past the kept count);
    nothing while one of its backup tasks is in progress."""
    if history.active is not None:
        return None
    if history.last_succeeded_request is not None and (
            history.last_clean_requested is None or history.last_clean_requested < history.last_succeeded_request):
        return TableService.BACKUP_CLEAN
    if backup_due(schedule, history.last_requested, now):
        return TableService.BACKUP
    return None
