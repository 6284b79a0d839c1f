"""One archive task's work, as its job runs it (jobs.archive_job): Hudi's archival of the table's active timeline
(tms.hudi.table.archival), then of its metadata table's, under the table's lock with the task's fence checked
when the lock is taken, before any instant file is deleted (an attempt that lost its lease deletes nothing).

What to archive is decided again when the job runs, by the settings of the task's plan (the table's policy when
it was planned) on the timeline as it is then: a retry archives what its failed attempt left on the active
timeline (the archiver deletes an instant's completed file last, so none is lost between its LSM row and its
deletion), and an attempt that finds nothing left archives nothing."""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.locks import parse_concurrency_options
from tms.hudi.metadata.keys import METADATA_DIR
from tms.hudi.metadata.reader import metadata_partitions
from tms.hudi.table.archival import ArchivalResult, archive
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import parse_instant_file_name
from tms.planning.archive import archival_options, archival_settings, cleaner_retains_from
from tms.planning.policy import TablePolicy
from tms.task_payload import ArchiveRequest

from .fencing import Fence, no_fence
from .ttl_task import FencedTransactions


@dataclass(frozen=True)
class ArchiveRun:
    archived: tuple[str, ...]           # the data table's instants archived, ascending
    files_removed: int                  # their instant files deleted from the active timeline
    metadata_archived: tuple[str, ...]  # the metadata table's
    metadata_files_removed: int

    def record(self) -> dict[str, Any]:
        return {"action": "archive", "archived": len(self.archived),
                "archived_through": self.archived[-1] if self.archived else None,
                "files_removed": self.files_removed, "metadata_archived": len(self.metadata_archived),
                "metadata_files_removed": self.metadata_files_removed}

    def summary(self) -> str:
        if not self.archived and not self.metadata_archived:
            return "archive: nothing to archive (within Hudi's limits, or held back by its rules)"
        through = f" through {self.archived[-1]}" if self.archived else ""
        return (f"archive: {len(self.archived)} instant(s){through} archived ({self.files_removed} file(s) removed); "
                f"metadata table: {len(self.metadata_archived)} ({self.metadata_files_removed} file(s) removed)")


def _instant_files(table: HudiTable) -> set[str]:
    return set(table.storage.names(table.timeline.dir))


def _removed(before: set[str], table: HudiTable, result: ArchivalResult) -> int:
    """The archived instants' files the archival deleted."""
    archived = set(result.archived)
    gone = before - _instant_files(table)
    return sum(1 for name in gone if (inst := parse_instant_file_name(name)) and inst.timestamp in archived)


def run_archive_task(base_path: str, plan: ArchiveRequest, fence: Fence = no_fence,
                     options: Mapping[str, str] | None = None, now: datetime | None = None,
                     context: HudiContext = DEFAULT_CONTEXT) -> ArchiveRun:
    """Archive the table at `base_path` (read with `context`) and its metadata table as Hudi's archiver would
    now, with the settings of the task's `plan` (its `policy`); `options`: the table's lock options."""
    policy = TablePolicy.from_stored(dict(plan.policy))
    archival = archival_options(policy)
    settings = archival_settings(archival)
    table = HudiTable.load(base_path, context=context)
    transactions = FencedTransactions(table, parse_concurrency_options(options or {}, base_path=table.base_path,
                                                                       table_name=table.name))
    transactions.fence = fence
    with transactions:
        before = _instant_files(table)
        retains = cleaner_retains_from(table, policy, now or datetime.now(UTC))
        result = archive(table, settings, cleaner_retains_from=retains, transactions=transactions)
        removed = _removed(before, table, result)
        mdt_result, mdt_removed = ArchivalResult(), 0
        if settings.metadata_enabled and metadata_partitions(table):
            mdt = HudiTable.load(posixpath.join(table.base_path, METADATA_DIR), context=context)
            mdt_before = _instant_files(mdt)
            mdt_result = archive(mdt, settings.for_metadata_table(archival), data_table=table,
                                 transactions=transactions)
            mdt_removed = _removed(mdt_before, mdt, mdt_result)
    return ArchiveRun(tuple(result.archived), removed, tuple(mdt_result.archived), mdt_removed)
