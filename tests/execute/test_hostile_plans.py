"""Plans are input: any writer of a table may have left one on its timeline. A plan of any kind (clean,
rollback, compaction, clustering), on every table version, that names a path leading outside its table (`..`,
an absolute path or URL elsewhere, another store, a NUL, a symbolic link out of the table, a path of a
megabyte) is refused before anything is done: nothing outside the table changes, the plan stays requested, and
the error says what was refused in one bounded line."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from execute_support import ModelledTable, plan_compaction, write_history

from tms.execute.dispatch import execute_instant
from tms.execute.errors import UnsafePlanError
from tms.execute.runner import LocalRunner
from tms.hudi.storage.paths import PathOutsideTableError
from tms.hudi.storage.table_storage import open_storage
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    ClusteringGroup,
    ClusteringPlan,
    CompactionOperation,
    CompactionPlan,
    InstantInfo,
    RequestedReplaceMetadata,
    RollbackPlan,
    RollbackRequest,
    SliceInfo,
    serialize_cleaner_plan,
    serialize_compaction_plan,
    serialize_requested_replace_metadata,
    serialize_rollback_plan,
)

VERSIONS = (6, 8, 9)


@pytest.fixture(scope="module")
def written_tables(tmp_path_factory) -> dict[int, Path]:
    """One MERGE_ON_READ table with log files per table version, copied by each test."""
    root = tmp_path_factory.mktemp("hostile-originals")
    out = {}
    for version in VERSIONS:
        t = ModelledTable(root / f"v{version}", "MERGE_ON_READ", version)
        write_history(t)
        out[version] = t.path
    return out


class Scene:
    """A table under `<tmp>/root/t`, and beside the root what a hostile plan aims at: a file and a folder."""

    def __init__(self, tmp: Path, original: Path):
        self.tmp = tmp
        self.table_path = tmp / "root" / "t"
        shutil.copytree(original, self.table_path)
        self.outside = tmp / "outside"
        (self.outside / "victim").mkdir(parents=True)
        (self.outside / "victim" / "keep.txt").write_text("keep")
        (self.outside / "victimdir" / "sub").mkdir(parents=True)
        (self.outside / "victimdir" / "sub" / "data.parquet").write_text("keep too")
        # a folder inside the table that is a link to the victim
        os.symlink(self.outside / "victim", self.table_path / "linked")
        self.before = self.snapshot()

    def table(self) -> HudiTable:
        return HudiTable.load(str(self.table_path))

    def snapshot(self) -> dict[str, tuple[int, bytes]]:
        return {str(p.relative_to(self.outside)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else b"")
                for p in self.outside.rglob("*")}

    def hostile_paths(self) -> dict[str, tuple[str, str]]:
        """(partition, file path) a plan names, per way of leaving the table."""
        victim = self.outside / "victim" / "keep.txt"
        return {
            "traversal partition": ("../../outside/victim", "keep.txt"),
            "traversal path": ("city=sf", "city=sf/../../../outside/victim/keep.txt"),
            "absolute path": ("city=sf", str(victim)),
            "file url": ("city=sf", f"file:{victim}"),
            "another store": ("city=sf", f"s3://bucket{self.table_path}/city=sf/x.parquet"),
            "nul": ("city=sf", "city=sf/x.parquet\x00../../outside/victim/keep.txt"),
            "symlink out of the table": ("linked", "keep.txt"),
            "the timeline": (".hoodie", ".hoodie/hoodie.properties"),
            "100 KB": ("city=sf", "city=sf/" + "a/" * 20_000 + "../" * 30_000 + "outside/victim/keep.txt"),
        }


def _clean(table: HudiTable, partition: str, path: str) -> bytes:
    last = table.timeline.last_completed()
    return serialize_cleaner_plan(CleanerPlan(
        earliest_instant_to_retain=ActionInstant(timestamp=last.timestamp, action=last.action, state="COMPLETED"),
        last_completed_commit_timestamp=last.timestamp, policy="KEEP_LATEST_COMMITS",
        file_paths_to_be_deleted_per_partition={partition: [CleanFileInfo(file_path=path)]},
        partitions_to_be_deleted=[partition]))


def _rollback(table: HudiTable, partition: str, path: str) -> bytes:
    last = table.timeline.last_completed()
    return serialize_rollback_plan(RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=last.timestamp, action=last.action),
        rollback_requests=[RollbackRequest(partition_path=partition, file_id="f", files_to_be_deleted=[path],
                                           log_blocks_to_be_deleted={path: 10})]))


def _compaction(table: HudiTable, partition: str, path: str) -> bytes:
    return serialize_compaction_plan(CompactionPlan(operations=[CompactionOperation(
        base_instant_time=table.timeline.last_completed().timestamp, file_id="f", partition_path=partition,
        data_file_path=path, delta_file_paths=[path])]))


def _clustering(table: HudiTable, partition: str, path: str) -> bytes:
    return serialize_requested_replace_metadata(RequestedReplaceMetadata(
        operation_type="CLUSTER", clustering_plan=ClusteringPlan(input_groups=[ClusteringGroup(slices=[
            SliceInfo(file_id="f", partition_path=partition, data_file_path=path, delta_file_paths=[path])])])))


PLANS = {"clean": (Action.CLEAN, _clean), "rollback": (Action.ROLLBACK, _rollback),
         "compaction": (Action.COMPACTION, _compaction), "clustering": (Action.CLUSTERING, _clustering)}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", PLANS)
def test_a_plan_naming_paths_outside_its_table_is_refused_and_changes_nothing(tmp_path, written_tables, version,
                                                                            kind):
    scene = Scene(tmp_path, written_tables[version])
    for case, (partition, path) in scene.hostile_paths().items():
        table = scene.table()
        action, plan = PLANS[kind]
        if action == Action.CLUSTERING and version == 6:
            action = Action.REPLACE_COMMIT  # v6 names a pending clustering so
        ts = table.timeline.create_requested(action, plan(table, partition, path)).timestamp

        with pytest.raises(UnsafePlanError) as refused:
            execute_instant(table, ts, LocalRunner())

        message = str(refused.value)
        assert f"{kind} {ts}" in message and "nothing was run" in message, case
        assert len(message) < 1000 and "\x00" not in message, case  # one bounded line, whatever the path
        assert scene.snapshot() == scene.before, f"{case}: something outside the table changed"
        assert set(scene.table().timeline.states_of(ts)) == {State.REQUESTED}, f"{case}: the plan was started"
        scene.table().timeline.delete_instant(ts)


def test_a_clean_deleting_the_whole_table_as_a_partition_is_refused(tmp_path, written_tables):
    scene = Scene(tmp_path, written_tables[8])
    table = scene.table()
    ts = table.timeline.create_requested(Action.CLEAN, _clean(table, "", "")).timestamp
    with pytest.raises(UnsafePlanError, match="deletes the whole table"):
        execute_instant(table, ts, LocalRunner())
    assert (scene.table_path / ".hoodie" / "hoodie.properties").exists()


def test_the_storage_refuses_every_operation_outside_its_table(tmp_path, written_tables):
    """The last line of defence, under every executor and reader: a table's storage acts only inside it."""
    scene = Scene(tmp_path, written_tables[8])
    storage = open_storage(str(scene.table_path))
    for rel in ("../../outside/victim/keep.txt", "/etc/hostname", "linked/keep.txt", "a\x00b", "s3://b/k",
                "city=sf/../../../outside/victim"):
        for operation in (storage.delete, storage.delete_tree, storage.read_bytes, storage.exists, storage.makedirs):
            with pytest.raises(PathOutsideTableError):
                operation(rel)
        with pytest.raises(PathOutsideTableError):
            storage.write_new(rel + "-new", b"x")
    assert scene.snapshot() == scene.before


def test_a_table_folder_replaced_by_a_link_is_refused(tmp_path, written_tables):
    """A table opened before its folder was replaced by a link to a folder elsewhere acts on nothing there."""
    scene = Scene(tmp_path, written_tables[8])
    storage = open_storage(str(scene.table_path))
    elsewhere = scene.outside / "t"
    shutil.move(scene.table_path, elsewhere)
    os.symlink(elsewhere, scene.table_path)
    with pytest.raises(PathOutsideTableError, match="through a symbolic link"):
        storage.write_new("city=sf/new.parquet", b"x")
    assert not (elsewhere / "city=sf" / "new.parquet").exists()


def test_a_plan_whose_paths_stay_inside_is_still_run(tmp_path, written_tables):
    """The check refuses only what leaves the table: Java's absolute paths and plain names still run."""
    scene = Scene(tmp_path, written_tables[8])
    (scene.table_path / "linked").unlink()  # a link out of the table stops every listing of it
    table = scene.table()
    ts = plan_compaction(table)
    assert execute_instant(table, ts, LocalRunner()).instant.is_completed
    assert scene.snapshot() == scene.before


def _data_files(table_path: Path) -> list[str]:
    """The table's data files, relative to it (its partitions' base and log files; links left out)."""
    return sorted(str(p.relative_to(table_path)) for p in table_path.rglob("*")
                  if p.is_file() and not p.is_symlink() and ".hoodie" not in p.parts and not p.name.startswith("."))


def test_a_clean_plan_with_links_out_among_its_files_is_refused_and_deletes_nothing(tmp_path, written_tables):
    """A clean resolves each partition once and looks at each file (lstat), then deletes a partition's files by
    name in its open folder: a file that is itself a link out of the table, among the table's own files, and a
    file in a partition that is a link out are refused as resolving each path whole refuses them."""
    scene = Scene(tmp_path, written_tables[8])
    files = _data_files(scene.table_path)
    partition = files[0].rsplit("/", 1)[0]
    names = [f.rsplit("/", 1)[1] for f in files if f.startswith(partition + "/")]
    assert len(names) > 1
    os.symlink(scene.outside / "victim" / "keep.txt", scene.table_path / partition / "out.parquet")
    cases = {"a file that is a link out": {partition: [*names[:1], "out.parquet", *names[1:]]},
             "a partition that is a link out": {partition: names, "linked": ["keep.txt"]}}
    for case, deleted in cases.items():
        table = scene.table()
        last = table.timeline.last_completed()
        plan = serialize_cleaner_plan(CleanerPlan(
            earliest_instant_to_retain=ActionInstant(timestamp=last.timestamp, action=last.action, state="COMPLETED"),
            last_completed_commit_timestamp=last.timestamp, policy="KEEP_LATEST_COMMITS",
            file_paths_to_be_deleted_per_partition={p: [CleanFileInfo(file_path=str(scene.table_path / p / n))
                                                        for n in ns] for p, ns in deleted.items()}))
        ts = table.timeline.create_requested(Action.CLEAN, plan).timestamp

        with pytest.raises(UnsafePlanError, match="outside the table, through a symbolic link") as refused:
            execute_instant(table, ts, LocalRunner())

        assert f"clean {ts}" in str(refused.value) and "nothing was run" in str(refused.value), case
        assert scene.snapshot() == scene.before, f"{case}: something outside the table changed"
        assert _data_files(scene.table_path) == files, f"{case}: a file of the table was deleted"
        assert set(scene.table().timeline.states_of(ts)) == {State.REQUESTED}, f"{case}: the plan was started"
        scene.table().timeline.delete_instant(ts)


def test_a_batch_delete_acts_only_inside_the_table(tmp_path, written_tables):
    """The storage's batch delete, under every clean: a batch with a link out among its files is refused whole,
    whatever the check before it; a link to a file inside the table is removed, the link and not its target."""
    scene = Scene(tmp_path, written_tables[8])
    storage = open_storage(str(scene.table_path))
    files = _data_files(scene.table_path)
    partition = files[0].rsplit("/", 1)[0]
    os.symlink(scene.outside / "victim" / "keep.txt", scene.table_path / partition / "out.parquet")
    os.symlink(scene.table_path / files[1], scene.table_path / partition / "in.parquet")
    for batch in ([files[0], f"{partition}/out.parquet"], ["linked/keep.txt"], [f"{partition}/../linked/keep.txt"]):
        with pytest.raises(PathOutsideTableError):
            storage.delete_many(batch)
        with pytest.raises(PathOutsideTableError):
            storage.require_inside(batch)
    assert scene.snapshot() == scene.before
    assert _data_files(scene.table_path) == files, "a refused batch deletes nothing"

    assert storage.delete_many([f"{partition}/in.parquet", f"{partition}/gone.parquet"]) == [f"{partition}/in.parquet"]
    assert not os.path.lexists(scene.table_path / partition / "in.parquet")
    assert (scene.table_path / files[1]).is_file()
