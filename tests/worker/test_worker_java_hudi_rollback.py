"""Hudi itself in the loop, for the rollback of a failed write: a Java Hudi writer (Hudi's lazy failed-writes
policy, its heartbeat on) crashes in the middle of an upsert and leaves its instant behind; TMS waits out the
writer's heartbeat, plans the rollback and runs it. Java Hudi is the judge: its reads are the model of the
acknowledged writes (the crashed one never was), its metadata table's file listing agrees with storage, and it
writes and reads on afterwards."""
from __future__ import annotations

import pytest
from hudi_java.harness import JavaWriter, metadata_mismatches, table_lock_policies, writer_options
from worker_support import attempts, register, task, wait_for, wait_until_final

from tms.db import TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(1200)]
PARTITIONS = ["americas", "asia", "europe"]
# A short heartbeat, on the writer and in the table's policy alike: the crashed writer is presumed gone soon.
HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "5000", "hoodie.client.heartbeat.tolerable.misses": "3"}


def row(i: int, ts: int, name: str = "n") -> dict:
    return {"id": f"k{i:03d}", "part": PARTITIONS[i % 3], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def _rollbacks(db, table_id: int) -> list[int]:
    with db.transaction() as session:
        return [t.id for t in TaskRepo(session).find(table_id=table_id, service="rollback")[0]]


def _pending_writes(path) -> list[str]:
    timeline = HudiTable.load(str(path)).timeline
    return [i.timestamp for i in timeline.pending((Action.COMMIT, Action.DELTA_COMMIT))]


@pytest.mark.parametrize(("version", "table_type"), [(8, "MERGE_ON_READ")])
def test_tms_rolls_back_a_crashed_java_write(version, table_type, tmp_path, service, db, local_queue,
                                             start_planner, start_worker, java_hudi):
    local_queue()
    driver = java_hudi(version)
    path = tmp_path / f"trips_{table_type.lower()}_v{version}"
    options = {**writer_options(service.callback_url, service.callback_key), **HEARTBEAT}
    writer = JavaWriter(driver, path, table_type, {**options, "hoodie.write.commit.callback.on": "false"})
    writer.write("insert", [row(i, 1) for i in range(24)])
    writer.options = options
    table_id = register(service, path, **{"hoodie.compact.inline.max.delta.commits": 1000},
                        **HEARTBEAT, **table_lock_policies())
    writer.write("upsert", [row(i, 2, "u") for i in range(0, 24, 2)])

    writer.crash("upsert", [row(i, 3, "lost") for i in range(0, 24, 3)], failing_id="k021")
    [crashed] = _pending_writes(path)
    assert crashed not in writer.instants

    start_planner(planner_services=["rollback"])
    start_worker()
    [rollback] = wait_for(lambda: _rollbacks(db, table_id), 120, "the planner to plan the crashed write's rollback")
    done = wait_until_final(db, rollback, 180)
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, rollback)[-1].log_tail}"
    timeline = HudiTable.load(str(path)).timeline
    assert timeline.get(task(db, rollback).instant).is_completed
    assert _pending_writes(path) == [] and timeline.get(crashed) is None, "the crashed write is gone"

    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after TMS's rollback"
    assert metadata_mismatches(driver, path) == [], "Hudi's metadata table file listing after TMS's rollback"
    writer.write("upsert", [row(i, 4, "after") for i in range(0, 24, 3)])
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's read after it wrote on"
    assert metadata_mismatches(driver, path) == []
