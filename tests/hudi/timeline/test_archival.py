"""Archival of v8/v9 timelines into Hudi's LSM timeline (tms.hudi.table.archival, tms.hudi.timeline.lsm_writer), and
of v6 timelines into Hudi 0.15's archive log files (tms.hudi.timeline.archived_log): Hudi's rules of what may leave
the active timeline, each held by a test that fails without it (on each version where the rule differs); the rows,
records and files written as Java writes them; the LSM layers compacted; archived instants still read."""
from __future__ import annotations

import io
import json
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tms.hudi.errors import HudiError
from tms.hudi.locks.transaction import TransactionManager
from tms.hudi.log_format.log_file import BlockType, read_log_file
from tms.hudi.metadata.keys import METADATA_DIR
from tms.hudi.table.archival import ArchivalSettings, archive, instants_to_archive
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.orphans import unreferenced_files
from tms.hudi.table.properties import new_table_properties
from tms.hudi.table.verify import verify_table
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.archived import ArchivedTimeline
from tms.hudi.timeline.archived_log import ArchivedLogTimeline
from tms.hudi.timeline.avro_schemas import ARCHIVED_META_ENTRY_V6
from tms.hudi.timeline.instant import Action, State, new_instant_time
from tms.hudi.timeline.instant_time import later_than
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CompactionOperation,
    CompactionPlan,
    serialize_cleaner_plan,
    serialize_compaction_plan,
)

SMALL = ArchivalSettings(min_commits=2, max_commits=4, compaction_batch_size=2, compaction_delta_commits=None)


def _table(path, table_type="COPY_ON_WRITE", version=9, **props) -> HudiTable:
    base = new_table_properties(name=path.name, table_type=table_type, version=version, record_key=["id"],
                                ordering=["ts"], partition=["p"], schema_json=None)
    return HudiTable.create(str(path), {**base, **props})


V6_COMMIT = {"partitionToWriteStats": {"p=1": [{"fileId": "f1", "path": "p=1/f1.parquet", "numWrites": 3,
                                                "totalWriteBytes": 100, "partitionPath": "p=1"}]},
             "compacted": False, "extraMetadata": {"schema": "{}"}, "operationType": "UPSERT"}


def _commit(table: HudiTable, action: str = Action.COMMIT, *, finish: bool = True, plan: bytes = b"",
            content: bytes | None = None) -> str:
    tl = table.timeline
    req = tl.create_requested(action, plan)
    inflight = tl.transition_to_inflight(req)
    if finish:
        if content is None:  # v6 commit metadata is JSON; v8+ rows keep any bytes
            content = json.dumps(V6_COMMIT).encode() if table.config.version == 6 else f"meta-{req.timestamp}".encode()
        tl.complete(inflight, content)
    return req.timestamp


def _commits(table: HudiTable, n: int, action: str = Action.COMMIT) -> list[str]:
    return [_commit(table, action) for _ in range(n)]


def _retaining(ts: str) -> CleanerPlan:
    """A cleaner plan whose earliest commit to retain is `ts`."""
    return CleanerPlan(earliest_instant_to_retain=ActionInstant(timestamp=ts, action="commit", state="COMPLETED"),
                       policy="KEEP_LATEST_COMMITS")


def _history(table: HudiTable) -> list[str]:
    return sorted(table.storage.names(f"{table.config.timeline_dir}/history"))


def _rows(table: HudiTable) -> list[dict]:
    history = f"{table.config.timeline_dir}/history"
    version = table.storage.read_bytes(f"{history}/_version_").decode()
    manifest = json.loads(table.storage.read_bytes(f"{history}/manifest_{version}"))
    rows = []
    for entry in manifest["files"]:
        rows += pq.read_table(io.BytesIO(table.storage.read_bytes(f"{history}/{entry['fileName']}"))).to_pylist()
    return sorted(rows, key=lambda r: r["instantTime"])


def test_archives_the_oldest_commits_down_to_min_once_over_max_with_their_bytes(tmp_path):
    table = _table(tmp_path / "t")
    commits = _commits(table, 4)
    assert instants_to_archive(table, SMALL) == []  # 4 commits: not over max
    commits += _commits(table, 1)
    states = {ts: table.timeline.states_of(ts) for ts in commits[:3]}
    result = archive(table, SMALL)
    assert result.archived == commits[:3]
    assert [i.timestamp for i in table.timeline.completed()] == commits[3:]
    assert not any(n.startswith(tuple(commits[:3])) for n in table.storage.names(table.config.timeline_dir))
    rows = _rows(table)
    assert [(r["instantTime"], r["completionTime"], r["action"], r["metadata"], r["plan"], r["version"])
            for r in rows] == [(ts, s[State.COMPLETED].completion_time, "commit", f"meta-{ts}".encode(), None, 1)
                               for ts, s in states.items()]
    assert "_version_" in _history(table) and f"{commits[0]}_{commits[2]}_0.parquet" in _history(table)
    # TMS's readers of archived instants' completion times
    archived = ArchivedTimeline(table.storage, table.config.timeline_dir)
    assert archived.completion_time(commits[1]) == states[commits[1]][State.COMPLETED].completion_time
    reloaded = HudiTable.load(table.base_path)
    assert reloaded.timeline.archived_completion_time(commits[0]) == states[commits[0]][State.COMPLETED].completion_time
    assert reloaded.timeline.committed_rule()(commits[0])


def test_cleans_and_rollbacks_before_the_last_archived_commit_go_with_it(tmp_path):
    table = _table(tmp_path / "t")
    first = _commit(table)
    clean = _commit(table, Action.CLEAN, plan=serialize_cleaner_plan(CleanerPlan(policy="KEEP_LATEST_COMMITS")))
    rest = _commits(table, 4)
    result = archive(table, SMALL)
    assert result.archived == sorted([first, clean, *rest[:2]])
    row = next(r for r in _rows(table) if r["instantTime"] == clean)
    assert row["action"] == "clean" and row["plan"] is not None  # the cleaner plan kept as the row's plan


@pytest.mark.parametrize("version", [6, 9])
def test_a_pending_write_holds_archival_back(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    done = _commits(table, 2)
    _commit(table, finish=False)
    _commits(table, 4)
    # without the rule, 4 of the 6 completed commits would go; the last completed before the pending one stays
    assert instants_to_archive(table, SMALL) == done[:1]


@pytest.mark.parametrize("version", [6, 9])
def test_a_pending_compaction_holds_archival_back(tmp_path, version):
    table = _table(tmp_path / "t", "MERGE_ON_READ", version=version)
    done = _commits(table, 2, Action.DELTA_COMMIT)
    _commit(table, Action.COMPACTION, finish=False, plan=b"plan")
    _commits(table, 4, Action.DELTA_COMMIT)
    assert instants_to_archive(table, SMALL) == done[:1]


@pytest.mark.parametrize("version", [6, 9])
def test_a_savepoint_holds_archival_back_unless_beyond_savepoint(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    commits = _commits(table, 6)
    table.timeline.write_savepoint(commits[1], b"savepoint")
    assert instants_to_archive(table, SMALL) == commits[:1]
    beyond = ArchivalSettings(**{**SMALL.__dict__, "beyond_savepoint": True})
    assert instants_to_archive(table, beyond) == [commits[0], *commits[2:5]]  # the savepointed one stays


@pytest.mark.parametrize("version", [6, 9])
def test_replace_commits_wait_for_the_clean_that_retains_past_them(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    commits = _commits(table, 2)
    replace = _commit(table, Action.REPLACE_COMMIT)
    commits += _commits(table, 4)
    # no clean yet: the replaced files are not cleaned, so nothing from the replace commit on is archived
    assert instants_to_archive(table, SMALL) == commits[:2]
    # the last clean retains from commits[2] (the replaced files before it are gone): up to it may go
    plan = _retaining(commits[2])
    _commit(table, Action.CLEAN, plan=serialize_cleaner_plan(plan))
    assert instants_to_archive(table, SMALL) == [*commits[:2], replace, *commits[2:4]]


@pytest.mark.parametrize("version", [6, 9])
def test_an_unfinished_clean_does_not_release_replace_commits(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    commits = _commits(table, 2)
    _commit(table, Action.REPLACE_COMMIT)
    commits += _commits(table, 4)
    plan = _retaining(commits[4])
    _commit(table, Action.CLEAN, finish=False, plan=serialize_cleaner_plan(plan))
    assert instants_to_archive(table, SMALL) == commits[:2]


@pytest.mark.parametrize("version", [6, 9])
def test_the_cleaner_retention_widens_the_limits(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    commits = _commits(table, 8)
    assert instants_to_archive(table, SMALL) == commits[:6]
    # the cleaner retains from commits[4]: 3 commits after it + 2 = 5 kept at least, max 5 + (4 - 2) = 7
    assert instants_to_archive(table, SMALL, cleaner_retains_from=commits[4]) == commits[:3]
    assert instants_to_archive(table, SMALL, cleaner_retains_from=commits[2]) == []


@pytest.mark.parametrize("version", [6, 9])
def test_merge_on_read_keeps_the_delta_commits_compaction_scheduling_needs(tmp_path, version):
    table = _table(tmp_path / "t", "MERGE_ON_READ", version=version)
    deltas = _commits(table, 7, Action.DELTA_COMMIT)
    settings = ArchivalSettings(**{**SMALL.__dict__, "compaction_delta_commits": 4})
    # no compaction yet: the last 4 delta commits are what the next compaction schedule counts
    assert instants_to_archive(table, settings) == deltas[:3]
    assert instants_to_archive(table, SMALL) == deltas[:5]


def _with_metadata_table(table: HudiTable, compaction: bool) -> None:
    mdt = HudiTable.create(f"{table.base_path}/{METADATA_DIR}", new_table_properties(
        name=f"{table.name}_metadata", table_type="MERGE_ON_READ", version=table.config.version,
        record_key=["key"], ordering=[], partition=[], schema_json=None))
    _commit(mdt, Action.DELTA_COMMIT)
    if compaction:
        _commit(mdt, Action.COMPACTION, plan=b"plan")
    props = table.config.props
    props["hoodie.table.metadata.partitions"] = "files"


@pytest.mark.parametrize("version", [6, 9])
def test_a_lagging_metadata_table_holds_archival_back(tmp_path, version):
    table = _table(tmp_path / "t", version=version)
    commits = _commits(table, 6)
    _with_metadata_table(table, compaction=False)
    assert instants_to_archive(table, SMALL) == []  # no compaction of the metadata table yet
    assert instants_to_archive(table, ArchivalSettings(**{**SMALL.__dict__, "metadata_enabled": False})) == \
        commits[:4]


def test_the_metadata_tables_latest_compaction_bounds_archival(tmp_path):
    table = _table(tmp_path / "t")
    before = _commits(table, 2)
    _with_metadata_table(table, compaction=True)
    _commits(table, 4)
    assert instants_to_archive(table, SMALL) == before  # commits completed after the compaction stay


def test_the_metadata_table_keeps_what_its_data_tables_timeline_starts_with(tmp_path):
    data = _table(tmp_path / "t")
    mdt = HudiTable.create(f"{data.base_path}/{METADATA_DIR}", new_table_properties(
        name="t_metadata", table_type="MERGE_ON_READ", version=9, record_key=["key"], ordering=[], partition=[],
        schema_json=None))
    mdt_deltas = _commits(mdt, 3, Action.DELTA_COMMIT)
    # A timeline's instants run ahead of the clock when they come within a millisecond of each other: the data
    # table's first commit, from its own timeline, must come after the three (CI once saw it take the third's time).
    last = max(i.completion_time or i.timestamp for i in mdt.timeline.instants())
    while new_instant_time(data.config.timeline_zone) <= last:
        time.sleep(0.001)
    first_data = _commit(data)
    mdt_deltas += _commits(mdt, 4, Action.DELTA_COMMIT)
    assert instants_to_archive(mdt, SMALL, data_table=data) == mdt_deltas[:3]
    assert first_data  # the data table's first commit is newer than those three
    result = archive(mdt, SMALL, data_table=data)
    assert result.archived == mdt_deltas[:3]
    assert _history(mdt)


def test_lsm_layers_are_compacted_and_old_versions_cleaned(tmp_path):
    table = _table(tmp_path / "t")
    archived: list[str] = []
    completions: dict[str, str | None] = {}
    for _ in range(6):
        for ts in _commits(table, 3):
            completions[ts] = table.timeline.states_of(ts)[State.COMPLETED].completion_time
        archived += archive(table, SMALL).archived
    history = _history(table)
    layers = sorted(n for n in history if n.endswith(".parquet"))
    version = int(table.storage.read_bytes(f"{table.config.timeline_dir}/history/_version_"))
    listed = [f["fileName"] for f in json.loads(
        table.storage.read_bytes(f"{table.config.timeline_dir}/history/manifest_{version}"))["files"]]
    assert any(n.endswith("_1.parquet") or n.endswith("_2.parquet") for n in listed), listed
    assert len(listed) < 4, listed
    assert [r["instantTime"] for r in _rows(table)] == archived
    manifests = [n for n in history if n.startswith("manifest_")]
    assert len(manifests) <= 3 + 2, manifests  # old versions cleaned
    assert set(layers) >= set(listed)
    reader = ArchivedTimeline(table.storage, table.config.timeline_dir)  # reads the compacted layers too
    assert {ts: reader.completion_time(ts) for ts in archived} == {ts: completions[ts] for ts in archived}


def test_the_active_timeline_loses_pending_files_before_completed_ones(tmp_path, monkeypatch):
    table = _table(tmp_path / "t")
    commits = _commits(table, 5)
    deleted: list[str] = []
    delete = table.storage.delete

    def recording(rel, **kw):
        deleted.append(rel.rsplit("/", 1)[-1])
        return delete(rel, **kw)
    monkeypatch.setattr(table.storage, "delete", recording)
    archive(table, SMALL)
    instant_files = [n for n in deleted if n[:17] in commits]
    completed = [n for n in instant_files if n.endswith(".commit")]
    assert instant_files == [n for n in instant_files if not n.endswith(".commit")] + completed
    assert completed == sorted(completed) and len(completed) == 3


def test_a_rerun_after_a_crash_before_the_deletes_writes_no_second_file(tmp_path, monkeypatch):
    table = _table(tmp_path / "t")
    commits = _commits(table, 5)
    monkeypatch.setattr(table.storage, "delete", lambda rel, **kw: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(OSError):
        archive(table, SMALL)
    monkeypatch.undo()
    reloaded = HudiTable.load(table.base_path)
    assert archive(reloaded, SMALL).archived == commits[:3]
    assert [r["instantTime"] for r in _rows(reloaded)] == commits[:3]  # the committed file, once


def test_refuses_bad_limits_and_merging_small_archive_files(tmp_path):
    table = _table(tmp_path / "v6", version=6)
    commits = _commits(table, 5)
    with pytest.raises(HudiError, match="hoodie.archive.merge.enable"):
        archive(table, ArchivalSettings.from_options({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "4",
                                                      "hoodie.archive.merge.enable": "true"}))
    assert [i.timestamp for i in table.timeline.completed()] == commits  # nothing archived
    with pytest.raises(HudiError, match="hoodie.keep.max.commits"):
        ArchivalSettings(min_commits=5, max_commits=5)


def test_archives_under_the_tables_lock_when_given_its_transactions(tmp_path, monkeypatch):
    table = _table(tmp_path / "t")
    commits = _commits(table, 5)
    transactions = TransactionManager.from_options(table, {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"})
    assert transactions.takes_lock
    locked: list[bool] = []
    delete = table.storage.delete

    def recording(rel, **kw):
        locked.append(transactions.in_transaction)
        return delete(rel, **kw)
    monkeypatch.setattr(table.storage, "delete", recording)
    assert archive(table, SMALL, transactions=transactions).archived == commits[:3]
    assert locked and all(locked)


def test_settings_from_hudis_options():
    assert ArchivalSettings.from_options({}) == ArchivalSettings()
    settings = ArchivalSettings.from_options({"hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "8",
                                              "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
                                              "hoodie.archive.beyond.savepoint": "true"})
    assert (settings.min_commits, settings.max_commits, settings.compaction_delta_commits,
            settings.beyond_savepoint) == (5, 8, None, True)
    mdt = settings.for_metadata_table({"hoodie.metadata.compact.max.delta.commits": "3"})
    assert (mdt.min_commits, mdt.max_commits, mdt.compaction_delta_commits, mdt.metadata_enabled) == (20, 30, 3, False)
    with pytest.raises(HudiError, match="hoodie.keep.min.commits must be an integer"):
        ArchivalSettings.from_options({"hoodie.keep.min.commits": "many"})


def test_rows_keep_the_plans_of_compactions_and_clusterings(tmp_path):
    table = _table(tmp_path / "t", "MERGE_ON_READ")
    compaction = _commit(table, Action.COMPACTION, plan=b"compaction-plan")
    clustering = _commit(table, Action.CLUSTERING, plan=b"clustering-plan")
    delta = _commit(table, Action.DELTA_COMMIT, content=b"")
    _commits(table, 3, Action.DELTA_COMMIT)
    last = table.timeline.last_completed()
    assert last is not None  # a clean retaining from the last delta commit lets the clustering go
    _commit(table, Action.CLEAN, plan=serialize_cleaner_plan(_retaining(last.timestamp)))
    archive(table, SMALL)
    rows = {r["instantTime"]: r for r in _rows(table)}
    assert (rows[compaction]["action"], rows[compaction]["plan"]) == ("commit", b"compaction-plan")
    assert (rows[clustering]["action"], rows[clustering]["plan"]) == ("replacecommit", b"clustering-plan")
    assert (rows[delta]["action"], rows[delta]["metadata"], rows[delta]["plan"]) == ("deltacommit", None, None)


# --- table version 6: Hudi 0.15's archive log files ------------------------------------------------------------


def _archive_files(table: HudiTable) -> list[str]:
    return ArchivedLogTimeline(table.storage, table.config.archive_dir).files()


def test_v6_archives_each_instant_file_as_a_record_of_an_archive_log_file(tmp_path):
    table = _table(tmp_path / "t", version=6)
    commits = _commits(table, 5)
    result = archive(table, SMALL)
    assert result.archived == commits[:3] and result.file == ".commits_.archive.1_1-0-1"
    assert [i.timestamp for i in table.timeline.completed()] == commits[3:]
    assert not any(n.startswith(tuple(commits[:3])) for n in table.storage.names(".hoodie"))
    assert _archive_files(table) == [".commits_.archive.1_1-0-1"]
    entries = ArchivedLogTimeline(table.storage, table.config.archive_dir).entries()
    assert [(e.timestamp, e.action, e.state) for e in entries] == [
        (ts, "commit", state) for ts in commits[:3] for state in ("REQUESTED", "INFLIGHT", "COMPLETED")]
    assert all(e.transition_time and len(e.transition_time) == 17 for e in entries)  # when each file was written
    done = entries[2].record["hoodieCommitMetadata"]
    assert (done["operationType"], done["extraMetadata"]) == ("UPSERT", {"schema": "{}", "ROLLING_STAT": ""})
    stat = done["partitionToWriteStats"]["p=1"][0]
    assert (stat["fileId"], stat["numWrites"], stat["totalWriteBytes"]) == ("f1", 3, 100)
    blocks = read_log_file(table.storage.read_bytes(f".hoodie/archived/{result.file}"))
    assert [(b.block_type, b.record_count()) for b in blocks] == [(BlockType.AVRO_DATA, 9)]
    assert blocks[0].schema == ARCHIVED_META_ENTRY_V6 and set(blocks[0].header) == {2}  # the schema, only
    reloaded = HudiTable.load(table.base_path)
    assert reloaded.timeline.committed_rule()(commits[0])  # archived: before the active timeline's start

    # the next archival writes the next file, `hoodie.commits.archival.batch` records a block
    more = _commits(reloaded, 3)
    again = archive(reloaded, ArchivalSettings(**{**SMALL.__dict__, "archival_batch_size": 4}))
    assert again.archived == [*commits[3:], *more[:1]] and again.file == ".commits_.archive.2_1-0-1"
    blocks = read_log_file(table.storage.read_bytes(f".hoodie/archived/{again.file}"))
    assert [b.record_count() for b in blocks] == [4, 4, 1]
    assert [e.timestamp for e in ArchivedLogTimeline(table.storage, table.config.archive_dir).completed()] == \
        [*commits, *more[:1]]


def test_v6_archives_cleans_and_rollbacks_by_their_own_count(tmp_path):
    """Hudi 0.15 archives completed cleans (and rollbacks) apart from commits: the oldest down to min once over
    max of them; later versions archive those before the last archived commit."""
    table = _table(tmp_path / "t", version=6)
    _commits(table, 2)
    plan = serialize_cleaner_plan(CleanerPlan(policy="KEEP_LATEST_COMMITS"))
    cleans = [_commit(table, Action.CLEAN, plan=plan, content=b"") for _ in range(4)]
    assert instants_to_archive(table, SMALL) == []  # 4 cleans: not over max
    cleans.append(_commit(table, Action.CLEAN, plan=plan, content=b""))
    assert instants_to_archive(table, SMALL) == cleans[:3]
    result = archive(table, SMALL)
    assert result.archived == cleans[:3]
    records = {(e.timestamp, e.state): e.record for e in
               ArchivedLogTimeline(table.storage, table.config.archive_dir).entries()}
    assert records[(cleans[0], "REQUESTED")]["hoodieCleanerPlan"]["policy"] == "KEEP_LATEST_COMMITS"
    assert records[(cleans[0], "COMPLETED")]["hoodieCleanMetadata"] is None  # an empty completed file: names only
    assert records[(cleans[0], "COMPLETED")]["actionType"] == "clean"


def test_v6_one_clean_stays_while_the_commits_around_it_go(tmp_path):
    table = _table(tmp_path / "t", version=6)
    first = _commit(table)
    _commit(table, Action.CLEAN, plan=serialize_cleaner_plan(CleanerPlan(policy="KEEP_LATEST_COMMITS")), content=b"")
    rest = _commits(table, 4)
    assert instants_to_archive(table, SMALL) == [first, *rest[:2]]


def test_v6_nothing_at_or_after_the_metadata_tables_latest_compaction_goes_not_even_a_clean(tmp_path):
    table = _table(tmp_path / "t", version=6)
    plan = serialize_cleaner_plan(CleanerPlan(policy="KEEP_LATEST_COMMITS"))
    cleans = [_commit(table, Action.CLEAN, plan=plan, content=b"") for _ in range(2)]
    _with_metadata_table(table, compaction=True)
    cleans += [_commit(table, Action.CLEAN, plan=plan, content=b"") for _ in range(3)]
    # 5 cleans over max 4: the oldest 3 would go; the metadata table's compaction came after the first 2
    assert instants_to_archive(table, SMALL) == cleans[:2]


def test_v6_compaction_records_keep_the_plan_and_the_commit_its_operation(tmp_path):
    table = _table(tmp_path / "t", "MERGE_ON_READ", version=6)
    plan = CompactionPlan(operations=[CompactionOperation(base_instant_time="1", file_id="f1", partition_path="p=1",
                                                          delta_file_paths=[".f1_1.log.1_0-1-0"])])
    compaction = _commit(table, Action.COMPACTION, plan=serialize_compaction_plan(plan),
                         content=json.dumps({**V6_COMMIT, "compacted": True}).encode())
    _commits(table, 4, Action.DELTA_COMMIT)
    assert archive(table, SMALL).archived[0] == compaction
    records = {e.state: e for e in ArchivedLogTimeline(table.storage, table.config.archive_dir).entries()
               if e.timestamp == compaction}
    assert (records["REQUESTED"].action, records["INFLIGHT"].action, records["COMPLETED"].action) == \
        ("compaction", "compaction", "commit")
    assert records["REQUESTED"].record["hoodieCompactionPlan"]["operations"][0]["fileId"] == "f1"
    assert records["INFLIGHT"].record["hoodieCompactionPlan"] is None
    assert records["COMPLETED"].record["hoodieCommitMetadata"]["operationType"] == "COMPACT"


@pytest.mark.parametrize("version", [6, 9])
def test_files_of_archived_commits_are_not_leftovers_and_a_failed_writes_are(tmp_path, version):
    """A file group whose base file was written by a commit archival took off the active timeline is committed
    (Hudi's containsOrBeforeTimelineStarts): `tms verify` and the orphan search leave it alone; a file of an
    instant after the timeline's start that the timeline does not have is still a leftover."""
    writer = HudiWriter.create_table(str(tmp_path / "t"), table_type="MERGE_ON_READ", version=version, key=["id"],
                                     ordering=["ts"], partition=["p"], name="t",
                                     schema=pa.schema([("id", pa.string()), ("ts", pa.int64()), ("p", pa.string())]))
    table = writer.table
    first = writer.write([{"id": "a", "ts": 1, "p": "x"}], "insert").instant
    for ts in range(2, 8):  # log files on the first commit's file group; no compaction
        writer.write([{"id": "a", "ts": ts, "p": "x"}], "upsert")
    table = HudiTable.load(table.base_path)
    assert first in archive(table, SMALL).archived
    table = HudiTable.load(table.base_path)
    assert not table.timeline.states_of(first)
    assert list(unreferenced_files(table)) == []
    assert verify_table(table) == []
    newest = max(i.timestamp for i in table.timeline.instants())  # a time no instant has, after the start
    leftover = f"p=x/{uuid.uuid4()}-0_0-0-0_{later_than(newest)}.parquet"
    table.storage.write_new(leftover, b"PAR1")
    assert [e.path for e, _ in unreferenced_files(HudiTable.load(table.base_path))] == [leftover]
