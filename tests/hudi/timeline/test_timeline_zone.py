"""Instant times are wall-clock times in the table's timeline zone (hoodie.table.timeline.timezone): UTC, or
LOCAL (Hudi's default), the writers' zone, which TMS takes from TMS_TIMELINE_LOCAL_TIMEZONE or else from this
host (TZ, /etc/localtime). Every instant time TMS writes, and every one it reads as a moment, uses it."""
from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tms.config import load_settings
from tms.errors import ConfigError
from tms.hudi.context import HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import instant_to_datetime, instant_wall_clock, millis_from_instant, new_instant_time
from tms.hudi.timeline.instant_time import TimeGenerator
from tms.hudi.timeline.zone import TIMELINE_TIMEZONE, is_utc_timeline, system_zone
from tms.table_context import child_env, table_context
from tms.timeline_zone import LOCAL_TIMEZONE_ENV, local_zone

SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")


@pytest.fixture
def shanghai() -> HudiContext:
    """What TMS passes the library under TMS_TIMELINE_LOCAL_TIMEZONE=Asia/Shanghai."""
    return table_context(load_settings(timeline_local_timezone="Asia/Shanghai"))


def _table(fixture_tables, tmp_path, name: str, context: HudiContext, timeline_zone: str | None = None
           ) -> HudiTable:
    path = tmp_path / name
    shutil.copytree(fixture_tables[name], path)
    if timeline_zone is not None:
        props = path / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + f"{TIMELINE_TIMEZONE}={timeline_zone}\n")
    return HudiTable.load(str(path), context=context)


def _off_by(ts: str, zone) -> timedelta:
    """How far instant time `ts` is from the wall clock in `zone` now (computed without TMS's conversions)."""
    return abs(instant_wall_clock(ts) - datetime.now(zone).replace(tzinfo=None))


@pytest.mark.parametrize("timeline_zone", [None, "LOCAL", "local"])
def test_a_local_tables_new_instant_is_the_writers_wall_clock(fixture_tables, tmp_path, shanghai, timeline_zone):
    table = _table(fixture_tables, tmp_path, "mor_v8_trips_8i3u1d", shanghai, timeline_zone)
    ts = table.timeline.new_instant_time()
    assert _off_by(ts, SHANGHAI) < timedelta(minutes=5)  # and so 8 hours from the UTC wall clock
    assert ts > max(i.timestamp for i in table.timeline.instants())


def test_a_utc_tables_new_instant_is_the_utc_wall_clock(fixture_tables, tmp_path, shanghai):
    table = _table(fixture_tables, tmp_path, "mor_v8_trips_8i3u1d", shanghai, "UTC")
    assert _off_by(table.timeline.new_instant_time(), UTC) < timedelta(minutes=5)


def test_without_the_setting_local_is_this_hosts_zone(fixture_tables, tmp_path, monkeypatch):
    monkeypatch.delenv(LOCAL_TIMEZONE_ENV, raising=False)
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        table = _table(fixture_tables, tmp_path, "mor_v8_trips_8i3u1d", table_context(load_settings()))
        assert _off_by(table.timeline.new_instant_time(), SHANGHAI) < timedelta(minutes=5)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_v6_completion_time_is_the_files_mtime_in_the_timeline_zone(fixture_tables, tmp_path, shanghai):
    for timeline_zone, zone in (("LOCAL", SHANGHAI), ("UTC", UTC)):
        table = _table(fixture_tables, tmp_path / timeline_zone, "mor_v6_trips_8i1u", shanghai, timeline_zone)
        done = table.timeline.last_completed()
        moment = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
        os.utime(table.base_path + "/" + table.timeline.path_of(done), (moment.timestamp(),) * 2)
        expected = moment.astimezone(zone).strftime("%Y%m%d%H%M%S") + "000"
        assert table.timeline.completion_time(done) == expected


def test_instant_times_read_as_moments_in_their_zone():
    assert instant_to_datetime("20250601200000123", SHANGHAI) == datetime(2025, 6, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert instant_to_datetime("20250601200000123", UTC) == datetime(2025, 6, 1, 20, 0, 0, 123000, tzinfo=UTC)
    assert new_instant_time(SHANGHAI, datetime(2025, 6, 1, 12, 0, 0, 123000, tzinfo=UTC)) == "20250601200000123"
    # the record index's epoch milliseconds, as Java's parseDateFromInstantTime(..).getTime()
    assert millis_from_instant("20250601200000123", SHANGHAI) == 1748779200123
    assert millis_from_instant("20250601200000", UTC) == 1748808000000


def test_daylight_saving_wall_clocks_read_as_java_reads_them():
    # 02:30 on 2025-03-09 does not exist in New York: Java's atZone moves it past the gap, to 03:30 EDT
    assert instant_to_datetime("20250309023000000", NEW_YORK) == datetime(2025, 3, 9, 7, 30, tzinfo=UTC)
    # 01:30 on 2025-11-02 happens twice: Java takes the earlier offset (EDT)
    assert instant_to_datetime("20251102013000000", NEW_YORK) == datetime(2025, 11, 2, 5, 30, tzinfo=UTC)


def test_new_instants_stay_later_than_the_timeline_when_the_wall_clock_turns_back():
    # 06:30 UTC is 01:30 EST, after 01:59:59.999 EDT (05:59:59.999 UTC) on the same wall clock
    after_fall_back = datetime(2025, 11, 2, 6, 30, tzinfo=UTC).timestamp()
    latest = new_instant_time(NEW_YORK, datetime(2025, 11, 2, 5, 59, 59, 999000, tzinfo=UTC))
    assert latest == "20251102015959999"
    ts = TimeGenerator(clock=lambda: after_fall_back).next_time(NEW_YORK, latest)
    assert ts > latest


def test_an_unknown_timeline_timezone_value_is_an_error():
    with pytest.raises(HudiError, match="expected LOCAL or UTC"):
        is_utc_timeline({TIMELINE_TIMEZONE: "Europe/Paris"})


def test_the_setting_is_checked_at_start_and_reaches_the_library(monkeypatch):
    monkeypatch.setenv(LOCAL_TIMEZONE_ENV, "Mars/Olympus_Mons")
    with pytest.raises(ConfigError, match=f"{LOCAL_TIMEZONE_ENV}.*not an IANA time zone"):
        load_settings()
    monkeypatch.delenv(LOCAL_TIMEZONE_ENV)
    monkeypatch.setenv("TZ", "Nowhere/Atlantis")
    with pytest.raises(ConfigError, match=f"TZ=Nowhere/Atlantis.*set {LOCAL_TIMEZONE_ENV}"):
        load_settings()
    monkeypatch.delenv("TZ")
    settings = load_settings(timeline_local_timezone="Asia/Shanghai")
    assert settings.timeline_local_timezone == "Asia/Shanghai" and local_zone("Asia/Shanghai") == SHANGHAI
    assert table_context(settings).local_zone == SHANGHAI, "passed to the library explicitly"
    assert LOCAL_TIMEZONE_ENV not in os.environ, "not through this process's environment"
    assert child_env(settings) == {LOCAL_TIMEZONE_ENV: "Asia/Shanghai"}, "handed to the processes TMS starts"


def test_without_a_context_local_is_this_hosts_zone_file(fixture_tables, tmp_path):
    """The library reads no setting and no environment: LOCAL is the zone passed in, else /etc/localtime's."""
    table = _table(fixture_tables, tmp_path, "mor_v8_trips_8i3u1d", HudiContext())
    assert table.config.timeline_zone is system_zone()
