"""Hudi itself in the loop, for clustering: a table written by Java Hudi (Hudi's Spark datasource, the release
that writes each table version; small files, inline services off, the commit callback at TMS) is clustered by
TMS while Java goes on inserting. Java Hudi is the judge: its snapshot, time-travel (as of every write) and
incremental (from every write) reads are the model of the acknowledged writes; its metadata table's file
listing agrees with storage; Java upserts into the clustered file groups; TMS cleans the replaced ones and Java
reads the same rows again."""
from __future__ import annotations

import pytest
from hudi_java.harness import JavaWriter, metadata_mismatches, table_lock_policies, writer_options
from worker_support import attempts, plan, register, task, wait_for, wait_until_final

from tms.db import TaskRepo, TaskState
from tms.hudi.metadata.listing import file_instant
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(1200)]
PARTITIONS = ["americas", "asia", "europe"]


def row(i: int, ts: int, name: str = "n") -> dict:
    return {"id": f"k{i:03d}", "part": PARTITIONS[i % 3], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def _tasks(db, table_id: int, service: str) -> list[int]:
    with db.transaction() as session:
        return [t.id for t in TaskRepo(session).find(table_id=table_id, service=service)[0]]


def _clustered(path, instant: str) -> tuple[int, int]:
    """(the file groups the clustering `instant` replaced, the file groups it wrote), as TMS's view sees them."""
    view = HudiTable.load(str(path)).file_system_view()
    return (len(view.replaced_file_groups()),
            sum(1 for s in view.latest_slices() if s.base_instant == instant))


def _data_files(path) -> set[str]:
    return {p.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts
            and (p.suffix == ".parquet" or ".log." in p.name) and not p.name.endswith(".crc")}


def _judge(writer: JavaWriter, what: str) -> None:
    """Java Hudi's snapshot, time-travel and incremental reads against the model, after `what`."""
    assert writer.read("snapshot") == writer.expected(), f"Java Hudi's snapshot read after {what}"
    for i, snapshot in enumerate(writer.snapshots):
        assert writer.read_as_of(i) == snapshot, f"Java Hudi's time travel to write {i} after {what}"
        assert writer.read_changes_after(i) == writer.changed_after(i), \
            f"Java Hudi's incremental read from write {i} after {what}"


@pytest.mark.parametrize(("version", "table_type"), [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_java_writes_tms_clusters_java_reads(version, table_type, tmp_path, service, db, local_queue,
                                             start_planner, start_worker, java_hudi):
    local_queue()
    driver = java_hudi(version)
    path = tmp_path / f"trips_{table_type.lower()}_v{version}"
    # Every write makes new small files (no bin-packing of inserts into existing ones): clustering's work.
    options = {**writer_options(service.callback_url, service.callback_key), "hoodie.parquet.small.file.limit": "0"}
    writer = JavaWriter(driver, path, table_type, {**options, "hoodie.write.commit.callback.on": "false"})
    writer.write("insert", [row(i, 1) for i in range(12)])
    writer.options = options
    table_id = register(service, path, **{"hoodie.clustering.async.max.commits": 3,
                                          "hoodie.compact.inline.max.delta.commits": 1000,
                                          "hoodie.cleaner.commits.retained": 1}, **table_lock_policies())
    # Clustering is opt-in, as in Hudi; the clean is planned below, when the test wants it.
    planner = start_planner(planner_services=["clustering", "rollback"], planner_clean_commits=1000)

    writer.write("insert", [row(i, 2) for i in range(12, 24)])
    writer.write("upsert", [row(i, 3, "u") for i in range(0, 24, 3)])
    writer.write("insert", [row(i, 4) for i in range(24, 30)])
    [clustering] = wait_for(lambda: _tasks(db, table_id, "clustering"), 90, "the planner to plan a clustering")
    # One clustering is the subject: the planner stops (it plans again after three more writes, and when it
    # does depends on how fast it saw the first three).
    start_planner.stop(planner)
    # Java goes on inserting (new file groups) while TMS's clustering is pending.
    writer.write("insert", [row(i, 5) for i in range(30, 33)])

    start_worker()
    done = wait_until_final(db, clustering, 240)
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, clustering)[-1].log_tail}"
    instant = task(db, clustering).instant
    assert HudiTable.load(str(path)).timeline.get(instant).is_completed
    replaced, written = _clustered(path, instant)
    assert 0 < written < replaced, f"the clustering rewrote {replaced} small file groups into {written}"

    _judge(writer, "TMS's clustering")
    # The clustered file groups are base files only: the read-optimized view is the whole table.
    assert writer.read("read_optimized") == writer.expected(), "Java Hudi's read-optimized read"
    assert metadata_mismatches(driver, path) == [], "Hudi's metadata table file listing after TMS's clustering"

    # Java upserts into the clustered file groups.
    writer.write("upsert", [row(i, 6, "after") for i in range(0, 33, 4)])
    last = len(writer.instants) - 1
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's read after its upsert into clustered groups"
    assert writer.read_as_of(last - 1) == writer.snapshots[last - 1], "time travel to before the upsert"
    assert writer.read_changes_after(last - 1) == writer.changed_after(last - 1), "the upsert, incrementally"
    assert metadata_mismatches(driver, path) == []

    # TMS cleans the file groups its clustering replaced; Java still reads the same rows.
    before = _data_files(path)
    [clean] = plan(db, table_id, "clean")
    done = wait_until_final(db, clean, 180)
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, clean)[-1].log_tail}"
    cleaned = before - _data_files(path)
    assert cleaned and all(file_instant(name) < instant for name in cleaned), "only the replaced files"
    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after TMS's clean"
    assert writer.read_changes_after(last - 1) == writer.changed_after(last - 1), "incremental after the clean"
    assert metadata_mismatches(driver, path) == [], "Hudi's metadata table file listing after TMS's clean"
