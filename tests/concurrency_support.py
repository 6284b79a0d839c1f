"""Helpers of the concurrency tests: parties (writers, TMS) that each open the table and its lock as a separate
process would, the model of acknowledged writes, and the checks of what hudi-rs reads."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from table_model import COLUMNS, TableModel, rec  # noqa: F401 (re-exported to the tests)

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter, create_table_for_records
from tms.hudi.timeline.instant import Action
from tms.hudi.timeline.serde import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
    serialize_requested_replace_metadata,
)
from tms.planning.policy import TablePolicy
from tms.planning.schedule import schedule

OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
NBCC = "NON_BLOCKING_CONCURRENCY_CONTROL"


def fs_lock_options(tmp_path: Path, mode: str = OCC) -> dict[str, str]:
    return {"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
            "hoodie.write.lock.filesystem.path": str(tmp_path / "lock"),
            "hoodie.write.lock.client.wait_time_ms_between_retry": "20",
            "hoodie.write.concurrency.mode": mode, "hoodie.time.generator.max_expected_clock_skew_ms": "5"}


def zk_options(zookeeper, key: str, **extra) -> dict[str, str]:
    """ZookeeperBasedLockProvider options for the test server, the lock at /hudi/locks/<key>."""
    return zookeeper.lock_options(key, **extra)


def create_table(path: Path, table_type: str = "MERGE_ON_READ", version: int = 8, event_time: bool = True,
                 partitioned: bool = False) -> TableModel:
    """A table (key `id`, ordering `ts`) created with one row (id 0); returns the model of its rows."""
    writer = create_table_for_records(str(path), [rec(0, 0)], table_type=table_type, version=version, key=["id"],
                                      ordering=["ts"], partition=["city"] if partitioned else [],
                                      merge_mode=None if event_time else "COMMIT_TIME_ORDERING")
    writer.write([rec(0, 0)])
    model = TableModel("id", "city" if partitioned else None, "ts", event_time=event_time)
    model.upsert([rec(0, 0)])
    return model


class Party:
    """One writer or TMS process: its own table handle and its own lock provider instance."""

    def __init__(self, path: Path, options: dict[str, str], *, allow_updates_to_clustering: bool = False):
        self.table = HudiTable.load(str(path))
        self.concurrency = parse_concurrency_options(options, base_path=str(path), table_name=self.table.name)
        self.transactions = TransactionManager(self.table, self.concurrency)
        self.writer = HudiWriter(self.table, transactions=self.transactions,
                                 allow_updates_to_clustering=allow_updates_to_clustering)

    def schedule(self, action: str, **policy) -> str | None:
        """Plan `action` under the lock; the plan's instant, or None if nothing was due."""
        result = schedule(self.table, action, TablePolicy().merged(policy), datetime.now(UTC),
                          self.transactions)
        return result.planned[0].instant if result.planned else None

    def roll_back_failed_writes(self) -> list[str]:
        """Plan and run the rollback of every write whose heartbeat stopped (at once: a 1 ms tolerance)."""
        rollbacks = schedule(self.table, "rollback", TablePolicy().merged({
            "hoodie.client.heartbeat.interval_in_ms": 1, "hoodie.client.heartbeat.tolerable.misses": 1}),
            datetime.now(UTC), self.transactions).planned
        for planned in rollbacks:
            execute_instant(self.table, planned.instant, LocalRunner(), transactions=self.transactions)
        return [p.instant for p in rollbacks]

    def close(self) -> None:
        self.transactions.close()


def plan_clustering_of_every_file_group(party: Party) -> str:
    """A clustering plan over every latest file group, written under the lock as a Java writer's scheduler
    would (TMS's planner leaves out file groups with writes in flight)."""
    with party.transactions.transaction() as tl:
        view = party.table.file_system_view()
        slices = [SliceInfo(file_id=fs.file_id, partition_path=fs.partition,
                            data_file_path=party.table.storage.full(fs.base_file.path) if fs.base_file else "",
                            delta_file_paths=[party.table.storage.full(f.path) for f in fs.log_files])
                  for fs in view.merged_latest_slices()]
        plan = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ClusteringPlan(
            input_groups=[ClusteringGroup(slices=slices, num_output_file_groups=1)], strategy=ClusteringStrategy(
                strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
                strategy_params={})))
        action = Action.CLUSTERING if party.table.config.version >= 8 else Action.REPLACE_COMMIT
        return tl.create_requested(action, serialize_requested_replace_metadata(plan)).timestamp


def read_rows(path: Path) -> list[dict]:
    from support import hudi_rs_table, rows
    return rows(hudi_rs_table(path), COLUMNS)


def check(path: Path, model: TableModel) -> None:
    """hudi-rs (and TMS's reader) read exactly the model's rows."""
    from support import rows

    from tms.hudi.records.reader import read_snapshot
    expected = model.expected()
    assert rows(read_snapshot(HudiTable.load(str(path))), COLUMNS) == expected
    assert read_rows(path) == expected


