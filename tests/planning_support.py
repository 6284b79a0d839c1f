"""Helpers of the planner tests: tables written by the writer with the model of their rows, policies, and
plans run by the real executors (in this process) so a plan's effect can be read back with hudi-rs."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from table_model import CITIES, COLUMNS, ModelledTable, rec  # noqa: F401 (re-exported to the tests)

from tms.execute.action import ExecutionResult
from tms.execute.dispatch import execute_instant
from tms.execute.fencing import no_fence
from tms.execute.runner import LocalRunner
from tms.hudi.context import HudiContext
from tms.hudi.storage.paths import table_relative
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.instant_time import TimeGenerator
from tms.hudi.timeline.serde import RollbackMetadata, parse_cleaner_plan, parse_rollback_metadata
from tms.planning.policy import TablePolicy


def now() -> datetime:
    return datetime.now(UTC)


class JavaWriterClock(TimeGenerator):
    """The instant times of a Java writer whose JVM runs in `zone` (a LOCAL timeline), as if it wrote `ago`
    before now: its wall clock, worked out here without TMS's conversions. Install it on a writer's
    transactions (`writes_in`), set `ago` before each write."""

    def __init__(self, zone: str):
        super().__init__()
        self.zone = ZoneInfo(zone)
        self.ago = timedelta()

    def next_time(self, zone: tzinfo, after: str = "") -> str:
        wall = datetime.now(self.zone) - self.ago
        return wall.strftime("%Y%m%d%H%M%S") + f"{wall.microsecond // 1000:03d}"


def set_timeline_zone(t: ModelledTable, value: str) -> None:
    """Give the table `hoodie.table.timeline.timezone=value`, and a writer that has read it."""
    from tms.hudi.table.writer import HudiWriter
    from tms.hudi.timeline.zone import TIMELINE_TIMEZONE
    props = t.path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"{TIMELINE_TIMEZONE}={value}\n")
    t.writer = HudiWriter(t.table())


def told_writers_zone(zone: str) -> HudiContext:
    """What TMS passes the format library when told TMS_TIMELINE_LOCAL_TIMEZONE=`zone`."""
    from tms.config import load_settings
    from tms.table_context import table_context
    return table_context(load_settings(timeline_local_timezone=zone))


def writes_in(t: ModelledTable, zone: str) -> JavaWriterClock:
    """Have the table's writes take their instant times from a Java writer's wall clock in `zone`."""
    clock = JavaWriterClock(zone)
    t.writer.transactions.time_generator = clock
    return clock


def policy(**options) -> TablePolicy:
    """A policy from Hudi option names (dots written as `__`): policy(hoodie__cleaner__policy=...)."""
    return TablePolicy().merged({k.replace("__", "."): v for k, v in options.items()})


def _execute(table: HudiTable, instant: str) -> ExecutionResult:
    """Run a plan with the real executor, in this process (the planner tests use no stand-ins)."""
    return execute_instant(HudiTable.load(table.base_path, context=table.context), instant, LocalRunner(), no_fence)


def run_compaction(table: HudiTable, tc: str) -> ExecutionResult:
    return _execute(table, tc)


def run_clean(table: HudiTable, ts: str) -> list[str]:
    """Run a cleaner plan; returns the table-relative paths it listed (all deleted)."""
    table.timeline.reload()
    plan = parse_cleaner_plan(table.timeline.read_plan(ts))
    listed = [table_relative(table.base_path, info.file_path)
              for infos in plan.file_paths_to_be_deleted_per_partition.values() for info in infos]
    _execute(table, ts)
    assert not [rel for rel in listed if table.storage.exists(rel)], "the clean left files it listed"
    return listed


def run_rollback(table: HudiTable, rollback_ts: str) -> RollbackMetadata:
    _execute(table, rollback_ts)
    table.timeline.reload()
    return parse_rollback_metadata(table.timeline.read(table.timeline.states_of(rollback_ts)[State.COMPLETED]))
