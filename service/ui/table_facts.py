"""What a table's page and row show from storage besides the API's live view (service/table_view.py): its
instants on a time axis, the sizes and log counts of its file groups (of a sample of a giant table's
partitions, tms.fleet.file_group_sample), its pending log files, its last
table service and when the next is due."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from tms import display
from tms.db import TableRecord, TaskRecord
from tms.fleet.file_group_sample import file_group_sample
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, instant_to_datetime
from tms.planning.triggers import compaction_trigger

from .charts import TimelineEntry

TIMELINE_SHOWN = 200  # the latest instants drawn on a table's timeline
_PENDING_TASK_STATES = ("RUNNING", "RUNNABLE", "BLOCKED", "PENDING")


@dataclass
class TableFacts:
    timeline: list[TimelineEntry] = field(default_factory=list)
    instants: int = 0
    file_group_bytes: list[int] = field(default_factory=list)
    log_counts: list[int] = field(default_factory=list)
    pending_log_files: int | None = None
    sampled_partitions: int | None = None  # a giant table's: the partitions its file-group charts show
    last_service: str | None = None
    next_service: str | None = None
    error: str | None = None


def _moment(instant_time: str | None, zone: tzinfo) -> datetime | None:
    try:
        return instant_to_datetime(instant_time, zone) if instant_time else None
    except HudiError:
        return None


def _service_actions(table_type: str) -> tuple[str, ...]:
    # A MERGE_ON_READ table's compaction completes as a commit; on COPY_ON_WRITE a commit is a write.
    services = (Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK)
    return (Action.COMMIT, *services) if table_type == "MERGE_ON_READ" else services


def _next_service(hudi: HudiTable, row: TableRecord, waiting: list[TaskRecord], now: datetime) -> str:
    # A task whose instant this timeline shows completed is finishing (its worker records it next): the last
    # service, not the next, on the page drawn from the same timeline.
    waiting = [t for t in waiting if not hudi.timeline.is_completed(t.instant)]
    if waiting:
        task = min(waiting, key=lambda t: t.id)
        return f"{task.service} {task.instant} ({task.state})"
    if not row.enabled:
        return "none: the table is disabled"
    if not row.is_mor:
        return "clean or clustering when due"
    policy = row.policy
    trigger = compaction_trigger(hudi, policy, now)
    if trigger.due:
        return "compaction due now"
    more = max(policy.max_delta_commits - trigger.commits, 0)
    return f"compaction after {more} more delta commit(s) ({policy.trigger_strategy.value})"


def read_table_facts(row: TableRecord, tasks: list[TaskRecord], *, with_timeline: bool,
                     now: datetime | None = None, table: HudiTable | None = None,
                     context: HudiContext = DEFAULT_CONTEXT) -> TableFacts:
    """The table's facts from storage; a table that cannot be read gives its error, never an exception.
    `table`: the table as the rest of the page read it (one timeline for the whole page), else loaded now."""
    now = now or datetime.now(UTC)
    facts = TableFacts()
    try:
        hudi = table or HudiTable.load(row.base_path, context=context)
        timeline = hudi.timeline
        instants = timeline.instants()
        facts.instants = len(instants)
        if with_timeline:
            zone = hudi.config.timeline_zone
            for instant in instants[-TIMELINE_SHOWN:]:
                start = _moment(instant.timestamp, zone)
                if start is None:
                    continue
                end = _moment(timeline.completion_time(instant), zone) if instant.is_completed else None
                facts.timeline.append(TimelineEntry(instant=instant.timestamp, lane=instant.action,
                                                    state=instant.state.name.lower(), start=start,
                                                    end=max(end, start) if end else (start if instant.is_completed
                                                                                     else None)))
        last = timeline.last_of(_service_actions(row.table_type), completed=True)
        facts.last_service = (f"{last.action} {display.instant(last.timestamp, hudi.config.timeline_zone, now)}"
                              if last else "none yet")
        sample = file_group_sample(hudi)  # a giant table's: its charts are of a sample, its count estimated
        facts.file_group_bytes = [(g.base_size or 0) + (g.log_bytes or 0) for g in sample.groups]
        facts.log_counts = [g.log_count or 0 for g in sample.groups]
        facts.pending_log_files = sample.estimate(sum(facts.log_counts))
        facts.sampled_partitions = len(sample.listing.partitions) if sample.sampled else None
        waiting = [t for t in tasks if t.state in _PENDING_TASK_STATES]
        facts.next_service = _next_service(hudi, row, waiting, now)
    except Exception as exc:  # any storage or format error: shown on the page, like the API's health
        facts.error = f"cannot read the table: {exc}"
    return facts
