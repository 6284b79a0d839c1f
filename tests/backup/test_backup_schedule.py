"""When a backup is due, missed, or followed by a backup-clean: the schedule's pure decisions."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tms.backup.schedule import backup_due, last_fire_time, missed_since, next_backup_task
from tms.db import BackupHistory
from tms.planning.policy import TablePolicy
from tms.table_service import TableService

NOW = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
MIDNIGHT = datetime(2026, 11, 26, tzinfo=UTC)


def history(**fields) -> BackupHistory:
    values = {"first_requested": None, "last_requested": None, "last_succeeded_request": None,
              "last_succeeded_finish": None, "last_clean_requested": None, "active": None, "failed_for_good": None}
    return BackupHistory(**{**values, **fields})


def test_named_schedules_and_cron_expressions_fire_in_utc():
    assert last_fire_time("daily", NOW) == MIDNIGHT
    assert last_fire_time("hourly", NOW) == NOW.replace(minute=0)
    assert last_fire_time("*/20 * * * *", NOW) == NOW.replace(minute=20)
    assert last_fire_time("0 3 * * 1", NOW) == datetime(2026, 11, 23, 3, tzinfo=UTC)  # Monday 03:00


def test_a_schedule_that_is_not_one_is_refused_with_one_line():
    with pytest.raises(ValueError, match="neither daily, hourly nor a cron expression"):
        TablePolicy.model_validate({"tms.backup.schedule": "twice a day"})


def test_a_backup_is_due_at_once_then_after_each_fire_time():
    assert backup_due("daily", None, NOW)
    assert not backup_due("daily", MIDNIGHT + timedelta(minutes=1), NOW)
    assert backup_due("daily", MIDNIGHT - timedelta(minutes=1), NOW)


def test_a_backup_clean_follows_each_backup_that_succeeded_and_nothing_starts_beside_another():
    done = history(first_requested=MIDNIGHT, last_requested=MIDNIGHT, last_succeeded_request=MIDNIGHT,
                   last_succeeded_finish=MIDNIGHT + timedelta(minutes=2))  # requested at 00:00, done at 00:02
    assert next_backup_task("daily", done, NOW) is TableService.BACKUP_CLEAN
    cleaned = history(**{**done.__dict__, "last_clean_requested": MIDNIGHT + timedelta(minutes=1)})
    assert next_backup_task("daily", cleaned, NOW) is None
    assert next_backup_task("daily", cleaned, NOW + timedelta(days=1)) is TableService.BACKUP
    busy = history(**{**cleaned.__dict__, "active": object()})
    assert next_backup_task("daily", busy, NOW + timedelta(days=1)) is None


def test_a_backup_is_missed_once_its_grace_passed_without_one_that_succeeded():
    grace = timedelta(hours=3)
    first = MIDNIGHT - timedelta(days=1)
    assert missed_since("daily", first, first, MIDNIGHT + timedelta(hours=2), grace) is None  # within the grace
    assert missed_since("daily", first, first, MIDNIGHT + timedelta(hours=4), grace) == MIDNIGHT
    assert missed_since("daily", first, MIDNIGHT + timedelta(minutes=1), NOW + timedelta(hours=4), grace) is None
    assert missed_since("daily", None, None, NOW, grace) is None  # never backed up: the policy is new


@pytest.mark.parametrize("weekdays,expected_day", [("1", 23), ("0", 22), ("7", 22), ("1-5", 26), ("sat,sun", 22),
                                                   ("*/2", 26)])
def test_cron_weekdays_count_from_sunday_as_cron_does(weekdays, expected_day):
    """2026-11-22 is a Sunday, 23 a Monday, 26 a Thursday."""
    assert last_fire_time(f"0 3 * * {weekdays}", NOW) == datetime(2026, 11, expected_day, 3, tzinfo=UTC)
