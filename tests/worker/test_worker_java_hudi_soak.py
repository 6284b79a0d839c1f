"""The soak with Java writers, once per lock provider Java Hudi and TMS share (ZooKeeper, the file system): three Java
Hudi writers (Hudi 1.1, a MERGE_ON_READ table of version 9 with its metadata table; optimistic concurrency control;
Hudi's simple index) write for half a minute and until each has three acknowledged writes, while TMS's planner,
worker and manager receive their callbacks and compact, cluster, clean and roll back failed writes. Two writers
upsert and delete, allowing updates into file groups being clustered; the third inserts new keys only (Hudi's default
refuses an update into a file group being clustered, so a writer that keeps that default is one that does not
update). Afterwards no writer failed for any reason but the write conflicts Hudi itself raises (and Hudi's race of a
writer reading a clustering plan that TMS rolled back because another writer won over it, which Hudi's own writers
cause as well: counted apart), every task TMS planned ended, and Java Hudi reads exactly the model of the
acknowledged writes, finds its metadata table's file listing right and writes on over TMS's file groups. (Hudi's race
of a delete, a compaction and an upsert of one key, which leaves the key where Hudi's simple index cannot find it, is
proven key by key and its second row expected: see _compaction_races.)

(Hudi's storage-based lock provider needs Hudi's S3 or GCS lock client, hudi-aws or hudi-gcp: not served here.)"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest
from hudi_java.harness import FILESYSTEM_LOCK, PARTITIONS, JavaWriter, metadata_mismatches, writer_options
from worker_support import FINAL, register, wait_for
from zookeeper_server import ZookeeperServer

from tms.config import Settings
from tms.db import TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.conflicts import CONFLICT_REASON
from tms.hudi.timeline.instant import State

pytestmark = [pytest.mark.slow, pytest.mark.beside, pytest.mark.waiting, pytest.mark.timeout(1500)]
SECONDS = float(os.environ.get("TMS_TEST_JAVA_SOAK_SECONDS", 30))
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


@dataclass(frozen=True)
class _Race:
    """A key Hudi's own delete-compaction-upsert race hid from its simple index: how, and the row it left in log
    files alone (None if the race is not proven)."""
    how: str
    row: dict | None


def _compaction_races(path, outcomes) -> dict[str, _Race]:
    """The keys held by log files alone, each with its proof of Hudi's own race between a delete, a compaction and
    an upsert of the key. Hudi's simple (and bloom) index looks keys up in the latest base files only (it cannot
    index log files): to it such a key is a new one, its next upsert a second row beside the one in the log file.
    The race: a writer deletes the key (a delete block in a log file of its file group); a compaction plan takes
    that log file; a writer upserts the key before the compaction completes (its index finds the key in the base
    file before the compaction's, which still holds it); the upsert completes after the compaction's instant, so
    its log file belongs to the compaction's new slice, whose base file lacks the deleted key. Hudi lets delta
    commits into a file group under compaction (they write its next slice), as it must; Hudi's own async compaction
    races alike, and TMS cannot see a writer's upsert coming. A key in log files alone for any other reason is
    not proven (the caller fails on it)."""
    import pyarrow.parquet as pq

    from tms.hudi.fs_view.file_names import LogFileName
    from tms.hudi.log_format.log_file import BlockType, read_log_file
    from tms.hudi.timeline.instant import Action
    from tms.hudi.timeline.serde import parse_compaction_plan

    table = HudiTable.load(str(path))
    timeline = table.timeline
    acks = {ack["tag"]: ack for outcome in outcomes for ack in outcome["acks"]}
    by_instant = {}  # the instants of the writers' acknowledged writes -> the writes
    for inst in timeline.completed([Action.DELTA_COMMIT]):
        tag = (timeline.commit_metadata(inst).extra_metadata or {}).get("_tms_soak_write")
        if tag in acks:
            by_instant[inst.timestamp] = acks[tag]
    deletes = {(row["id"], ts) for ts, ack in by_instant.items() if ack["op"] == "delete" for row in ack["rows"]}
    races: dict[str, _Race] = {}
    for fs in table.file_system_view().merged_latest_slices():
        based = (set(pq.read_table(path / fs.base_file.path, columns=["_hoodie_record_key"])
                     .column(0).to_pylist()) if fs.base_file else set())
        # key -> the delta commit that last upserted it and its completion (None: its last log record deletes it)
        logged: dict[str, tuple[str, str | None] | None] = {}
        for log in fs.log_files:
            with (path / log.path).open("rb") as fh:
                for block in read_log_file(fh):
                    if block.block_type is BlockType.DELETE:
                        logged |= dict.fromkeys((key for key, _, _ in block.deleted_keys()), None)
                    elif block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA):
                        logged |= dict.fromkeys(block.records().column("_hoodie_record_key").to_pylist(),
                                                (log.name.instant, log.completion_time))
        compaction = timeline.states_of(fs.base_instant).get(State.REQUESTED)
        merged: set[str] = set()  # the delta commits whose log files of this file group the compaction took
        if fs.base_file and compaction is not None and compaction.action == Action.COMPACTION:
            for op in parse_compaction_plan(timeline.read_plan(fs.base_instant)).operations:
                if op.file_id == fs.file_id:
                    merged |= {name.instant for name in map(LogFileName.parse, op.delta_file_paths) if name}
        for key in sorted(set(logged) - based):
            if (last := logged[key]) is None:
                continue
            upsert, completed = last
            deleted = sorted(ts for k, ts in deletes if k == key and ts in merged)
            row = next((r for r in by_instant[upsert]["rows"] if r["id"] == key), None) \
                if upsert in by_instant else None
            if deleted and row is not None and completed is not None and completed > fs.base_instant:
                races[key] = _Race(f"{key} in {fs.partition}/{fs.file_id}: deleted by {deleted[-1]}, which compaction "
                                   f"{fs.base_instant} merged; upserted by {upsert} (completed {completed}) into "
                                   "the compaction's slice", row)
            else:
                races[key] = _Race(f"{key} in log files of {fs.partition}/{fs.file_id} only ({upsert}): "
                                   "no delete-compaction-upsert race explains it", None)
    return races


def _visible(model: list[dict], races: dict[str, _Race]) -> list[dict]:
    """What Java Hudi reads: the model, and beside it each raced row a later write did not find (its index could
    not: Hudi's race, see _compaction_races). A raced row the model still holds is the same row."""
    latest = {row["id"]: row for row in model}
    stale = [race.row for key, race in races.items() if race.row is not None and latest.get(key) != race.row]
    return sorted(model + stale, key=lambda r: (r["id"], r["ts"]))


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
    planner = start_planner(planner_services=["compaction", "clustering", "clean", "rollback"],
                            planner_clean_commits=4)
    start_worker()
    manager = ManagerService(db, Settings(database_url=db.url, heartbeat_seconds=3600, manager_heartbeat_seconds=0.5,
                                          manager_lease_seconds=4, retry_backoff_seconds=1,
                                          manager_retry_seconds=0.5))
    thread = threading.Thread(target=manager.run, daemon=True)
    thread.start()
    try:
        began = time.monotonic()
        answer = driver.call(timeout=SECONDS + 630, op="soak", path=str(path), name=seed.name,
                             table_type="MERGE_ON_READ", seconds=SECONDS, min_acks=3, max_seconds=SECONDS + 330,
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

        wait_for(settled, 600, "TMS to end every task it planned")
        # Then TMS stops planning, so that what follows judges a table at rest: a plan made meanwhile would write
        # files beside Hudi's metadata table validation and refuse or fail the Java write that comes last (a
        # pending clustering of a file group it updates, a write conflict).
        start_planner.stop(planner)
        tasks = wait_for(settled, 600, "TMS to end every task it planned before it stopped")
    finally:
        manager.stop()
        thread.join(timeout=30)
    ended = Counter((t.service, t.state) for t in tasks)
    # A plan that gave way to a writer (`conflict`: the writer wins, the plan is rolled back and the next one takes
    # the new data) is Hudi's optimistic concurrency control at work; any other failure is TMS's.
    failed = [f"{t.service} {t.instant}: {t.error}" for t in tasks
              if t.state == TaskState.FAILED and t.failure_kind != CONFLICT_REASON]
    plans = HudiTable.load(str(path)).timeline.pending(["compaction", "replacecommit", "clustering"])
    assert [str(i) for i in plans] == [], "plans left pending after every task ended"
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
    # A key Hudi's race left in log files alone is a new key to its simple index: a later upsert of it adds a row
    # beside the raced one (Hudi's own doing, proven key by key; the record index indexes log files).
    races = _compaction_races(path, outcomes) if INDEX != "RECORD_INDEX" else {}
    print(f"{kind}: keys Hudi's delete-compaction-upsert race hid from its index: "
          f"{[race.how for race in races.values()]}", file=sys.stderr)
    snapshot, report = sorted(seed.read("snapshot"), key=lambda r: (r["id"], r["ts"])), None
    if snapshot != _visible(seed.expected(), races) or any(race.row is None for race in races.values()):
        report = tmp_path / "diagnosis.txt"
        report.write_text(_diagnosis(path, outcomes, snapshot, seed.expected())
                          + f"\nkeys in log files alone: {[race.how for race in races.values()]}"
                          + f"\nmetadata table listing mismatches: {metadata_mismatches(driver, path)}")
        print(report.read_text(), file=sys.stderr)
    assert not [race.how for race in races.values() if race.row is None], f"diagnosis: {report}"
    assert snapshot == _visible(seed.expected(), races), \
        f"Java Hudi's snapshot read after the soak (diagnosis: {report})"
    assert metadata_mismatches(driver, path) == [], "Hudi's metadata table file listing after the soak"
    timeline = HudiTable.load(str(path)).timeline
    serviced = {i.action for i in timeline.completed()} & {"commit", "replacecommit", "clean", "rollback"}
    print(f"{kind}: completed services on the timeline {sorted(serviced)}", file=sys.stderr)

    # Java writes on over TMS's file groups.
    seed.options = options
    seed.write("upsert", [{**row, "ts": int(time.time() * 1000), "name": "after"} for row in seed.expected()[::3]])
    assert sorted(seed.read("snapshot"), key=lambda r: (r["id"], r["ts"])) == _visible(seed.expected(), races), \
        "Java Hudi's read after writing over TMS's file groups"
