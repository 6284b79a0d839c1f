"""Instants archived by Hudi's writers (their files gone from the active timeline, their rows in the archived LSM
timeline of v8+) still wrote files readers see: a base file of an archived commit is part of its file group, and a
log file of an archived delta commit belongs to the slice its completion time falls in. A delta commit that
started before a compaction was planned and completed after it belongs to the compaction's slice: the compaction
left it out, so the slice before it may be cleaned without losing it (a delete that Java Hudi's soak lost when
TMS sliced it by its instant time)."""
from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from execute_support import plan_compaction
from table_model import TableModel

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.errors import HudiError
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.instant import State
from tms.planning.clean import plan_clean
from tms.planning.policy import TablePolicy

COLUMNS = ["id", "name", "ts", "city"]


def _rec(i: int, ts: int) -> dict:
    return {"id": i, "name": f"n{i}-{ts}", "ts": ts, "city": "sf"}


def archive(path, timestamps: list[str], *, record: bool = True) -> None:
    """What Hudi's archiver does to `timestamps`: their rows into the LSM timeline (`record`), their files off
    the active timeline."""
    table = HudiTable.load(str(path))
    timeline_dir = path / table.config.timeline_dir
    rows = []
    for ts in timestamps:
        done = table.timeline.states_of(ts)[State.COMPLETED]
        rows.append({"instantTime": ts, "completionTime": done.completion_time, "action": done.action,
                     "metadata": None, "plan": None, "version": 1})
    history = timeline_dir / "history"
    history.mkdir()
    if record:
        name = f"{min(timestamps)}_{max(timestamps)}_0.parquet"
        schema = pa.schema([("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
                            ("metadata", pa.binary()), ("plan", pa.binary()), ("version", pa.int32())])
        pq.write_table(pa.Table.from_pylist(rows, schema), history / name)
        (history / "manifest_1").write_text(json.dumps({"files": [{"fileName": name,
                                                                   "fileLen": (history / name).stat().st_size}]}))
        (history / "_version_").write_text("1")
    for f in os.listdir(timeline_dir):
        if f.split(".")[0].split("_")[0] in timestamps:
            os.remove(timeline_dir / f)


def _build(path):
    """insert (c1), upsert (d2), a delete (d3) that completes after compaction t_c was planned, t_c run."""
    model = TableModel("id", "city", "ts", event_time=True)
    first = [_rec(i, 10) for i in range(4)]
    writer = create_table_for_records(str(path), first, table_type="MERGE_ON_READ", version=9, key=["id"],
                                      ordering=["ts"], partition=["city"])
    c1 = writer.write(first).instant
    model.upsert(first)
    d2 = writer.write([_rec(1, 20)]).instant
    model.upsert([_rec(1, 20)])
    d3 = writer.write([_rec(2, 30)], "delete", leave_inflight=True).instant
    tc = plan_compaction(HudiTable.load(str(path)))
    writer.complete(d3)
    model.delete([_rec(2, 30)])
    execute_instant(HudiTable.load(str(path)), tc, LocalRunner(1))
    return writer, model, [c1, d2, d3], tc


def test_files_of_archived_instants_are_read_and_sliced_by_their_completion_time(tmp_path):
    path = tmp_path / "t"
    writer, model, (c1, d2, d3), tc = _build(path)
    archive(path, [c1, d2, d3])
    table = HudiTable.load(str(path))
    assert table.timeline.start() == tc
    [group] = table.file_system_view().file_groups()
    # The archived insert's base file and the delta commit's log form the slice before tc; d3 completed after tc
    # was planned, so it is in tc's slice, with the compacted base file.
    assert [(s.base_instant, s.base_file is not None, [f.name.instant for f in s.log_files])
            for s in group.slices] == [(c1, True, [d2]), (tc, True, [d3])]
    assert sorted(read_snapshot(table).select(COLUMNS).to_pylist(), key=lambda r: r["id"]) == [
        {k: r[k] for k in COLUMNS} for r in model.expected()]

    # Cleaning the slice before tc leaves d3's delete in place (and the writer writes on over it).
    d4 = writer.write([_rec(0, 40)]).instant
    model.upsert([_rec(0, 40)])
    policy = TablePolicy.model_validate({"hoodie.cleaner.commits.retained": 1})
    planned = plan_clean(table, policy, datetime.now(UTC))
    assert planned is not None
    execute_instant(HudiTable.load(str(path)), planned.instant, LocalRunner(1))
    table = HudiTable.load(str(path))
    [group] = table.file_system_view().file_groups()
    assert [(s.base_instant, [f.name.instant for f in s.log_files]) for s in group.slices] == [(tc, [d3, d4])]
    assert sorted(read_snapshot(table).select(COLUMNS).to_pylist(), key=lambda r: r["id"]) == [
        {k: r[k] for k in COLUMNS} for r in model.expected()]


def test_a_log_of_an_archived_delta_commit_without_a_completion_time_is_refused(tmp_path):
    path = tmp_path / "t"
    _writer, _model, (c1, d2, d3), _tc = _build(path)
    archive(path, [c1, d2, d3], record=False)
    with pytest.raises(HudiError, match=f"cannot tell which file slice .*({d2}|{d3}).* archived and Hudi"):
        HudiTable.load(str(path)).file_system_view()


@pytest.mark.parametrize("old_clean_kept", [False, True])
def test_a_compaction_after_archival_keeps_the_archived_delete(tmp_path, old_clean_kept):
    """`old_clean_kept`: a clean older than the archived commits is still on the active timeline (Hudi archives
    cleans and commits by separate rules); the archived delta commits' log blocks are read all the same."""
    path = tmp_path / "t"
    writer, model, archived, _tc = _build(path)
    archive(path, archived)
    if old_clean_kept:
        timeline_dir = path / HudiTable.load(str(path)).config.timeline_dir
        (timeline_dir / f"{int(archived[0]) - 1}.clean.requested").write_bytes(b"")
    writer.write([_rec(3, 40)])
    model.upsert([_rec(3, 40)])
    execute_instant(HudiTable.load(str(path)), plan_compaction(HudiTable.load(str(path))), LocalRunner(1))
    assert sorted(read_snapshot(HudiTable.load(str(path))).select(COLUMNS).to_pylist(), key=lambda r: r["id"]) == [
        {k: r[k] for k in COLUMNS} for r in model.expected()]


def test_archival_beyond_a_savepoint_leaves_the_savepointed_commit_before_the_start(tmp_path):
    """Hudi may archive past a savepoint (hoodie.archive.beyond.savepoint): the savepointed commit stays on the
    active timeline before a hole, and the archived commits after it are committed all the same."""
    path = tmp_path / "t"
    _writer, model, (c1, d2, d3), tc = _build(path)
    timeline_dir = path / HudiTable.load(str(path)).config.timeline_dir
    archive(path, [d2, d3])
    (timeline_dir / f"{c1}.savepoint").write_bytes(b"")
    table = HudiTable.load(str(path))
    assert table.timeline.start() == tc
    assert sorted(read_snapshot(table).select(COLUMNS).to_pylist(), key=lambda r: r["id"]) == [
        {k: r[k] for k in COLUMNS} for r in model.expected()]
