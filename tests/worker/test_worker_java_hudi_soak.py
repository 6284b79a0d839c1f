"""The soak with Java writers, once per lock provider Java Hudi and TMS share (ZooKeeper, the file system): three Java
Hudi writers (Hudi 1.1, a MERGE_ON_READ table of version 9 with its metadata table; optimistic concurrency control;
Hudi's simple index) write for a minute while TMS's planner, worker and manager receive their callbacks and compact,
cluster, clean and roll back failed writes. Two writers upsert and delete, allowing updates into file groups being
clustered; the third inserts new keys only (Hudi's default refuses an update into a file group being clustered, so a
writer that keeps that default is one that does not update). Afterwards no writer failed for any reason but the
write conflicts Hudi itself raises (and Hudi's race of a writer reading a clustering plan that TMS rolled back
because another writer won over it, which Hudi's own writers cause as well: counted apart), every task TMS planned
ended, and Java Hudi reads exactly the model of the acknowledged writes, finds its metadata table's file listing
right and writes on over TMS's file groups.

(Hudi's storage-based lock provider needs Hudi's S3 or GCS lock client, hudi-aws or hudi-gcp: not served here.)"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter

import pytest
from hudi_java.harness import FILESYSTEM_LOCK, PARTITIONS, JavaWriter, metadata_mismatches, writer_options
from worker_support import FINAL, register, wait_for
from zookeeper_server import ZookeeperServer

from tms.config import Settings
from tms.db import TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import CONFLICT_REASON

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(1500)]
SECONDS = float(os.environ.get("TMS_TEST_JAVA_SOAK_SECONDS", 60))
# The writers' index (a developer's knob: BLOOM and RECORD_INDEX soak as SIMPLE does, the latter in the metadata
# table TMS keeps).
INDEX = os.environ.get("TMS_TEST_JAVA_SOAK_INDEX", "SIMPLE")
KEYS_PER_WRITER = 12
ALLOW_UPDATES = {"hoodie.clustering.updates.strategy":
                 "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"}


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    server = ZookeeperServer(tmp_path_factory.mktemp("zookeeper"))
    yield server
    server.stop()


def _lock_options(kind: str, zookeeper) -> dict[str, str]:
    if kind == "filesystem":
        return {"hoodie.write.lock.provider": FILESYSTEM_LOCK}
    return zookeeper.lock_options("java-soak")


def _keys(writer: int) -> list[str]:
    return [f"w{writer}k{i:02d}" for i in range(KEYS_PER_WRITER)]


def _tasks(db, table_id: int) -> list:
    with db.transaction() as session:
        return TaskRepo(session).find(table_id=table_id, limit=1000)[0]


def _diagnosis(path, outcomes, read: list[dict], expected: list[dict]) -> str:
    """What a wrong read comes from: each wrong key's acknowledged writes and the instants that made them, each
    such instant's files (and whether they are still there), the clusterings that replaced their file groups and
    the rollbacks that named them; then the whole timeline."""
    from tms.hudi.timeline.instant import Action
    from tms.hudi.timeline.serde import parse_rollback_metadata, parse_rollback_plan

    got, want = {r["id"]: r for r in read}, {r["id"]: r for r in expected}
    wrong = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    timeline = HudiTable.load(str(path)).timeline
    by_tag: dict[str, tuple] = {}
    lines: list[str] = []
    for inst in timeline.completed([Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT]):
        meta = timeline.commit_metadata(inst)
        tag = (meta.extra_metadata or {}).get("_tms_soak_write")
        if tag:
            by_tag[tag] = (inst, meta)
        replaced = {p: ids for p, ids in (meta.partition_to_replace_file_ids or {}).items() if ids}
        lines.append(f"{inst.action} {inst.timestamp} done {inst.completion_time} {meta.operation_type} {tag or ''} "
                     f"wrote {[s.path for s in meta.write_stats()]} replaced {replaced}")
    for inst in timeline.completed([Action.ROLLBACK]):
        rolled = parse_rollback_metadata(timeline.read(inst))
        lines.append(f"rollback {inst.timestamp} done {inst.completion_time} of {rolled.commits_rollback}")
    for inst in timeline.pending():
        target = ""
        if inst.action == Action.ROLLBACK:
            target = str(parse_rollback_plan(timeline.read_plan(inst.timestamp)).instant_to_rollback)
        lines.append(f"pending {inst.action} {inst.timestamp} {inst.state} {target}")
    out = [f"wrong keys: {[(k, got.get(k), want.get(k)) for k in wrong]}"]
    for k in wrong:
        for outcome in outcomes:
            for ack in outcome["acks"]:
                if any(r["id"] == k for r in ack["rows"]):
                    inst, meta = by_tag.get(ack["tag"]) or (None, None)
                    files = [(s.path, (path / s.path).exists()) for s in meta.write_stats()] if meta else "no instant"
                    out.append(f"  {k}: {ack['op']} {ack['tag']} -> {inst and inst.timestamp} "
                               f"(done {inst and inst.completion_time}) files {files}")
    return "\n".join(out + ["timeline:"] + lines)


@pytest.mark.parametrize("kind", ["zookeeper", "filesystem"])
def test_three_java_writers_and_tms_under_one_lock(kind, zookeeper, tmp_path, service, db, local_queue,
                                                   start_planner, start_worker, java_hudi):
    from manager.process import ManagerService

    local_queue()
    driver = java_hudi(9)
    path = tmp_path / f"soak_{kind}"
    lock = _lock_options(kind, zookeeper)
    # New records make new small file groups (clustering's work); updates go to log files (compaction's).
    options = {**writer_options(service.callback_url, service.callback_key), **lock,
               "hoodie.index.type": INDEX,
               **({"hoodie.metadata.record.index.enable": "true"} if INDEX == "RECORD_INDEX" else {}),
               "hoodie.parquet.small.file.limit": "0"}
    seed = JavaWriter(driver, path, "MERGE_ON_READ", {**options, "hoodie.write.commit.callback.on": "false"})
    seed.write("insert", [{"id": k, "part": PARTITIONS[w], "ts": 1, "name": "seed", "value": 0}
                          for w in range(3) for k in _keys(w)])
    table_id = register(service, path, **{"hoodie.compact.inline.max.delta.commits": 3,
                                          "hoodie.clustering.async.max.commits": 4,
                                          "hoodie.cleaner.commits.retained": 2,
                                          "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", **lock})
    start_planner(planner_services=["compaction", "clustering", "clean", "rollback"], planner_clean_commits=4)
    start_worker()
    manager = ManagerService(db, Settings(database_url=db.url, heartbeat_seconds=3600, manager_heartbeat_seconds=0.5,
                                          manager_lease_seconds=4, retry_backoff_seconds=1,
                                          manager_retry_seconds=0.5))
    thread = threading.Thread(target=manager.run, daemon=True)
    thread.start()
    try:
        began = time.monotonic()
        answer = driver.call(timeout=SECONDS + 600, op="soak", path=str(path), name=seed.name,
                             table_type="MERGE_ON_READ", seconds=SECONDS, min_acks=3, max_seconds=SECONDS + 300,
                             writers=[{"keys": _keys(w), "part": PARTITIONS[w], "inserts": w == 2,
                                       "options": {**options, **(ALLOW_UPDATES if w < 2 else {})}}
                                      for w in range(3)])
        outcomes = answer["writers"]
        soaked = time.monotonic() - began
        if any(o["raced"] for o in outcomes):
            # A write that failed reading a dropped plan leaves its heartbeat beating in the writer's JVM (Hudi
            # does not stop it on that path), so it looks alive and holds the plans after it: the writer process
            # ends, as a real one would, and TMS rolls its writes back once their heartbeats are silent.
            driver.close()
            driver = seed.driver = java_hudi(9)
        summary = [{k: len(v) for k, v in o.items()} for o in outcomes]
        print(f"\n{kind}: {soaked:.0f} s of writing: {summary}; the first conflict of each: "
              f"{[o['conflicts'][:1] for o in outcomes]}", file=sys.stderr)
        # TMS ends every task it planned (each write's callback came in before its write returned); a failed
        # task the manager will retry has not ended.
        def settled():
            tasks = _tasks(db, table_id)
            return tasks if tasks and all(TaskState(t.state) in FINAL and not (
                t.state == TaskState.FAILED and t.next_attempt_at) for t in tasks) else None

        tasks = wait_for(settled, 600, "TMS to end every task it planned")
    finally:
        manager.stop()
        thread.join(timeout=30)
    ended = Counter((t.service, t.state) for t in tasks)
    # A plan that gave way to a writer (`conflict`: the writer wins, the plan is rolled back and the next one takes
    # the new data) is Hudi's optimistic concurrency control at work; any other failure is TMS's.
    failed = [f"{t.service} {t.instant}: {t.error}" for t in tasks
              if t.state == TaskState.FAILED and t.failure_kind != CONFLICT_REASON]
    print(f"{kind}: TMS's tasks {dict(ended)} {failed}", file=sys.stderr)
    for w, outcome in enumerate(outcomes):
        refused = outcome["errors"] + outcome["rejected"]
        assert refused == [], f"writer {w} failed otherwise than by a write conflict: {refused[0]}"
        assert len(outcome["acks"]) >= 3, f"writer {w} made no progress: {summary[w]}"

    assert ended[("compaction", "SUCCEEDED")] >= 1, ended
    assert not failed, f"failed tasks: {failed}"

    # Hudi is the judge: the model is the seed and each writer's acknowledged writes, in its commit order.
    model = {row["id"]: row for row in seed.expected()}
    for outcome in outcomes:
        for ack in outcome["acks"]:
            for row in ack["rows"]:
                if ack["op"] == "delete":
                    model.pop(row["id"], None)
                else:
                    model[row["id"]] = row
    seed.model = model
    snapshot, report = seed.read("snapshot"), None
    if snapshot != seed.expected():
        report = tmp_path / "diagnosis.txt"
        report.write_text(_diagnosis(path, outcomes, snapshot, seed.expected())
                          + f"\nmetadata table listing mismatches: {metadata_mismatches(driver, path)}")
        print(report.read_text(), file=sys.stderr)
    assert snapshot == seed.expected(), f"Java Hudi's snapshot read after the soak (diagnosis: {report})"
    assert metadata_mismatches(driver, path) == [], "Hudi's metadata table file listing after the soak"
    timeline = HudiTable.load(str(path)).timeline
    serviced = {i.action for i in timeline.completed()} & {"commit", "replacecommit", "clean", "rollback"}
    print(f"{kind}: completed services on the timeline {sorted(serviced)}", file=sys.stderr)

    # Java writes on over TMS's file groups.
    seed.options = options
    seed.write("upsert", [{**row, "ts": int(time.time() * 1000), "name": "after"} for row in seed.expected()[::3]])
    assert seed.read("snapshot") == seed.expected(), "Java Hudi's read after writing over TMS's file groups"
