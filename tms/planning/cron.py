"""A backup schedule read once: "daily" (00:00 UTC), "hourly" (on the hour) or a five-field cron expression
(UTC), as APScheduler's CronTrigger. Pure, in the planning library beside the policies that validate their
schedule with it (tms.backup.schedule reads it to request backups)."""
from __future__ import annotations

from datetime import UTC

from apscheduler.triggers.cron import CronTrigger

NAMED = {"daily": "0 0 * * *", "hourly": "0 * * * *"}


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
