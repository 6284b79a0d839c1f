"""The shape every action executor has: validate and start the instant on the driver, hand out picklable
tasks, and complete the instant from the tasks' results."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tms.hudi.errors import InstantConflictError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.metadata.writer import require_maintainable
from tms.hudi.storage.paths import PathOutsideTableError, confined, shown, table_relative
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Instant, State
from tms.planning.capabilities import require_capability
from tms.table_service import TableService

from .errors import PlanHeldError, UnsafePlanError
from .fencing import Fence
from .table_ref import TableRef


@dataclass(frozen=True)
class ExecutionResult:
    instant: Instant        # the completed instant
    service: str            # the plan's table service: compaction, clustering, clean, rollback
    tasks: int
    files_written: int = 0
    bytes_written: int = 0
    files_deleted: int = 0

    def record(self) -> dict[str, Any]:
        """The result as the job reports it to its worker (the attempt's `result`). The service is sent as
        `action`, the key every version of the job code (a registered engine's too) reports it under."""
        return {"action": self.service, "instant": self.instant.timestamp, "completed_as": self.instant.action,
                "completion_time": self.instant.completion_time, "tasks": self.tasks,
                "files_written": self.files_written, "bytes_written": self.bytes_written,
                "files_deleted": self.files_deleted}

    def summary(self) -> str:
        done = f" at {self.instant.completion_time}" if self.instant.completion_time else ""
        return (f"{self.service} {self.instant.timestamp} completed as {self.instant.action}{done}: "
                f"{self.tasks} task(s), {self.files_written} file(s) written ({self.bytes_written / 1e6:.1f} MB), "
                f"{self.files_deleted} file(s) deleted")


METAFOLDER = ".hoodie"


def _outside_metadata(rel: str) -> str:
    """A plan's data files and partitions are never the table's own metadata (its timeline, properties and
    metadata table live under `.hoodie`)."""
    if rel == METAFOLDER or rel.startswith(METAFOLDER + "/"):
        raise PathOutsideTableError(f"path {shown(rel)} is in the table's own metadata folder, not its data")
    return rel


class ActionExecutor(ABC):
    service: ClassVar[TableService]

    @staticmethod
    @abstractmethod
    def task_function(task: Any, write_token: str, /) -> Any:
        """One task's work (a TaskFunction). Subclasses set a module-level function here, as
        `staticmethod(fn)`: Spark pickles it by reference."""
    # Compaction and clustering go back to requested (through a rollback) before they run again; a clean
    # or rollback that stopped inflight is simply run again (its deletes are idempotent).
    resumable_inflight: ClassVar[bool] = False

    def __init__(self, table: HudiTable, instant: Instant, transactions: TransactionManager | None = None):
        """`transactions`: the table's lock, taken (as the writers take it) to complete the instant and to
        change the timeline; by default none (a table with a single writer)."""
        self.table = table
        self.transactions = transactions or TransactionManager.single_writer(table)
        self.timeline = table.timeline
        self.storage = table.storage
        self.config = table.config
        self.timestamp = instant.timestamp
        self.ref = TableRef.of(table)

    def _relative(self, path: str, partition: str) -> str:
        """A path of the plan relative to the table (plans name files absolutely or within a partition)."""
        return table_relative(self.storage.base_uri, path, partition)

    def plan_paths(self) -> Iterable[tuple[str, str]]:
        """Every (partition, path) the plan names, path '' for a partition alone (a file id counts as a file
        name in its partition): `validate` refuses the plan if one leads outside the table."""
        return ()

    def validate(self) -> None:
        """Raise if the plan cannot run now; changes nothing. `start` calls it first."""
        self.require_plan_inside_table()
        self._require_serviceable_table()
        require_capability(self.table, self.service)  # the same decision the planner made
        states = self.timeline.states_of(self.timestamp)
        if State.COMPLETED in states:
            raise InstantConflictError(f"{self.service} {self.timestamp} is already completed")
        if State.REQUESTED not in states:
            raise InstantConflictError(f"{self.service} {self.timestamp} has no requested plan")
        if State.INFLIGHT in states and not self.resumable_inflight:
            raise InstantConflictError(
                f"{self.service} {self.timestamp} is inflight: an earlier attempt failed or is still running; "
                "roll that attempt back first (tms execute --retry)")

    @abstractmethod
    def start(self, fence: Fence) -> Sequence[Any]:
        """Validate, move the instant to inflight, and return the tasks."""

    @abstractmethod
    def finish(self, results: Sequence[Any], fence: Fence) -> ExecutionResult:
        """Complete the instant from the tasks' results, after the fence check."""

    def task_bytes(self, tasks: Sequence[Any]) -> Sequence[int] | None:
        """The bytes each of `tasks` reads, by which a runner cuts a big plan into parts (tms.execute.parts);
        None: each task is a part of its own."""
        return None

    # --- shared checks ---------------------------------------------------------------------------
    def require_plan_inside_table(self) -> None:
        """A plan is input like any other (any writer of the table may have written it): every path it names
        must resolve inside the table, before anything is read, written or deleted."""
        try:
            # resolved as every storage operation resolves them (on a local filesystem: symbolic links too)
            self.storage.require_inside(self._plan_rels())
        except PathOutsideTableError as e:
            raise UnsafePlanError(f"{self.service} {self.timestamp} of table {self.config.name} is refused: {e}; "
                                  "nothing was run") from None

    def _plan_rels(self) -> Iterator[str]:
        """The table-relative paths the plan names, each partition once; lexically refused as they come."""
        base = self.storage.base_uri
        partitions: set[str] = set()
        for partition, path in self.plan_paths():
            if partition not in partitions:
                yield _outside_metadata(confined(partition, "partition"))
                partitions.add(partition)
            if path:
                yield _outside_metadata(table_relative(base, path, partition))

    def _require_serviceable_table(self) -> None:
        # A metadata table is kept in sync (tms.hudi.metadata.writer), except partitions TMS cannot maintain.
        require_maintainable(self.table, self.service)

    def _require_no_pending_writes_before(self) -> None:
        """Writes that started before the plan may still add data to the file groups it rewrites."""
        blockers = [i for i in self.timeline.inflight_writes() if i.timestamp < self.timestamp]
        if blockers:
            raise PlanHeldError(self.timestamp, self.service, blockers)

    def _requested(self) -> Instant:
        return self.timeline.states_of(self.timestamp)[State.REQUESTED]

    def _inflight(self, fence: Fence, content: bytes = b"") -> Instant:
        """The inflight instant: created now, or (for resumable actions) the one an earlier attempt left."""
        existing = self.timeline.states_of(self.timestamp).get(State.INFLIGHT)
        if existing is not None:
            return existing
        fence()
        return self.timeline.transition_to_inflight(self._requested(), content)
