"""The archive task's work (tms.execute.archive_task): the table's timeline and its metadata table's archived in one
run by the settings of the task's plan, and nothing deleted by an attempt whose fence says its lease is lost."""
from __future__ import annotations

import pytest

from tms.execute.archive_task import run_archive_task
from tms.execute.errors import FencingError
from tms.hudi.metadata.keys import METADATA_DIR
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import new_table_properties
from tms.hudi.timeline.instant import Action
from tms.task_payload import ArchiveRequest

PLAN = ArchiveRequest(policy={"hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4,
                              "hoodie.cleaner.commits.retained": 1, "hoodie.metadata.keep.min.commits": 2,
                              "hoodie.metadata.keep.max.commits": 4})


def _create(path: str, table_type: str, **props) -> HudiTable:
    return HudiTable.create(path, {**new_table_properties(
        name="t", table_type=table_type, version=9, record_key=["id"], ordering=[], partition=[],
        schema_json=None), **props})


def _commit(table: HudiTable, action: str = Action.COMMIT, plan: bytes = b"") -> str:
    tl = table.timeline
    inflight = tl.transition_to_inflight(tl.create_requested(action, plan))
    tl.complete(inflight, b"{}")
    return inflight.timestamp


def _table_with_metadata(tmp_path) -> tuple[HudiTable, HudiTable, list[str], list[str]]:
    """Metadata-table delta commits, then the table's commits, then the metadata table's compaction."""
    data = _create(str(tmp_path / "t"), "COPY_ON_WRITE", **{"hoodie.table.metadata.partitions": "files"})
    mdt = _create(f"{data.base_path}/{METADATA_DIR}", "MERGE_ON_READ")
    mdt_deltas = [_commit(mdt, Action.DELTA_COMMIT) for _ in range(4)]
    commits = [_commit(data) for _ in range(6)]
    _commit(mdt, Action.COMPACTION, b"plan")
    return data, mdt, commits, mdt_deltas


def test_archives_the_table_and_its_metadata_table(tmp_path):
    data, mdt, commits, mdt_deltas = _table_with_metadata(tmp_path)
    run = run_archive_task(data.base_path, PLAN)
    assert (run.archived, run.metadata_archived) == (tuple(commits[:4]), tuple(mdt_deltas[:3]))
    assert (run.files_removed, run.metadata_files_removed) == (12, 9)  # requested, inflight, completed of each
    assert run.record()["archived_through"] == commits[3]
    assert [i.timestamp for i in HudiTable.load(data.base_path).timeline.completed()] == commits[4:]
    assert run_archive_task(data.base_path, PLAN).archived == ()  # a retry finds nothing left to archive


def test_an_attempt_that_lost_its_lease_deletes_nothing(tmp_path):
    data, _, _, _ = _table_with_metadata(tmp_path)
    before = sorted(data.storage.names(data.config.timeline_dir))

    def lost() -> None:
        raise FencingError("the lease is lost")

    with pytest.raises(FencingError):
        run_archive_task(data.base_path, PLAN, lost)
    assert sorted(data.storage.names(data.config.timeline_dir)) == before
