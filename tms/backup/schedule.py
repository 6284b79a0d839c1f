"""When a table's backup is due: pure functions of its schedule, its last backup and the time.

A schedule is "daily" (00:00 UTC), "hourly" (on the hour) or a five-field cron expression (UTC), read by
APScheduler's CronTrigger. A backup is due once a fire time has passed with no backup requested since it; a
table with no backup yet is due at once. A due backup not done within the grace is missed."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from apscheduler.triggers.cron import CronTrigger

from tms.table_service import TableService

if TYPE_CHECKING:
    from tms.db import BackupHistory

NAMED = {"daily": "0 0 * * *", "hourly": "0 * * * *"}
# How far back the last fire time is looked for (a yearly cron expression fires at least once a year).
LOOKBACK = timedelta(days=366)


# cron numbers weekdays from Sunday (0 or 7); APScheduler's CronTrigger from Monday (0), and steps count from
# there: the weekday field is expanded here, as cron reads it, into the days' names.
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _weekday(token: str) -> int:
    token = token.strip().lower()
    if token[:3] in WEEKDAYS:
        return WEEKDAYS.index(token[:3])
    if not token.isdigit() or int(token) > 7:
        raise ValueError(f"{token!r} is no weekday (0-7 or sun-sat)")
    return int(token) % 7


def _cron_weekdays(field: str) -> str:
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for part in field.split(","):
        span, _, step = part.partition("/")
        if span in ("*", "?"):
            first, last = 0, 6
        elif "-" in span:
            first, last = (_weekday(t) for t in span.split("-", 1))
            last = 7 if last == 0 and first > 0 else last  # "1-7", "mon-sun": to Sunday
        else:
            first = last = _weekday(span)
            if step:
                last = 6
        if not step.isdigit() and step:
            raise ValueError(f"{step!r} is no step")
        days.update(d % 7 for d in range(first, last + 1, int(step or 1)))
    return ",".join(WEEKDAYS[d] for d in sorted(days))


def parse_schedule(schedule: str) -> CronTrigger:
    """The trigger of a schedule; ValueError (one line) if it is neither a name nor a cron expression."""
    expression = NAMED.get(schedule.strip().lower(), schedule.strip())
    fields = expression.split()
    try:
        if len(fields) == 5:
            fields[4] = _cron_weekdays(fields[4])
            expression = " ".join(fields)
        return CronTrigger.from_crontab(expression, timezone=UTC)
    except ValueError as exc:
        raise ValueError(f"backup schedule {schedule!r} is neither daily, hourly nor a cron expression "
                         f"(minute hour day month weekday): {exc}") from None


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
