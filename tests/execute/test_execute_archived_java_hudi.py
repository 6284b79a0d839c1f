"""A table whose Java writer archived its early instants (Hudi 1.1, MERGE_ON_READ v9, archival after a few
commits, as a busy table's writers do all day): TMS compacts every file slice, and Java Hudi reads exactly the
acknowledged writes, including the rows only the archived insert's base files hold and the keys an archived
delta commit deleted. (TMS's file-system view took files of archived instants for a failed write's leftovers:
its compaction dropped the archived base files' rows.) The harness (tests/hudi_java) is never skipped."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from execute_support import plan_compaction
from hudi_java.harness import JavaWriter, metadata_mismatches, plain_rows, row, standalone_writer_options

from tms.execute.dispatch import execute_instant
from tms.execute.runner import LocalRunner
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action
from tms.planning.clean import plan_clean_or_why
from tms.planning.planned import Planned
from tms.planning.policy import TablePolicy

pytestmark = [pytest.mark.slow, pytest.mark.beside]

# Hudi archives down to keep.min.commits once keep.max.commits are active (the cleaner's retention must be
# lower), and, with the metadata table on, no further than the metadata table's last compaction.
ARCHIVING = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
             "hoodie.metadata.compact.max.delta.commits": "2"}


@pytest.mark.parametrize("metadata", [False, True], ids=["no-metadata-table", "metadata-table"])
def test_tms_compacts_a_table_whose_writer_archived_its_first_commits(java_hudi, tmp_path, metadata):
    driver = java_hudi(9)
    path = tmp_path / "archived"
    writer = JavaWriter(driver, path, "MERGE_ON_READ", {**standalone_writer_options(), **ARCHIVING,
                                                        "hoodie.metadata.enable": str(metadata).lower()})
    writer.write("insert", [row(i, 1) for i in range(9)])
    writer.write("delete", [row(4, 2)])
    # Five upserts, the fewest that archive both the insert and the delete (with the metadata table or without,
    # Hudi 1.1 archives the first instant after the sixth write, the second after the seventh): a write is
    # half a minute of the Java lane on a busy machine.
    for ts in range(3, 8):
        writer.write("upsert", [row(ts % 3, ts), row(ts % 3 + 6, ts)])
    history = path / ".hoodie" / "timeline" / "history"
    assert (history / "_version_").exists(), "Hudi archived nothing: the test proves nothing"
    timeline = HudiTable.load(str(path)).timeline
    archived = [ts for ts in writer.instants if timeline.get(ts) is None]
    assert writer.instants[0] in archived and writer.instants[1] in archived, (archived, writer.instants)

    instant = plan_compaction(HudiTable.load(str(path)))
    execute_instant(HudiTable.load(str(path)), instant, LocalRunner(1))
    assert HudiTable.load(str(path)).timeline.is_completed(instant)
    assert plain_rows(writer.read("snapshot")) == plain_rows(writer.expected())
    if metadata:  # TMS kept the metadata table: Java's file listing through it agrees with the storage
        assert metadata_mismatches(driver, path) == []
    writer.write("upsert", [row(i, 20) for i in (3, 5)])
    assert plain_rows(writer.read("snapshot")) == plain_rows(writer.expected())


def test_a_clean_bounded_to_two_files_a_plan_leaves_a_table_java_hudi_reads_and_cleans(java_hudi, tmp_path):
    """A clean split by `tms.clean.max.files.per.plan` into several plans: Java reads the acknowledged rows after
    each, and Java's own (incremental) cleaner then reads TMS's clean metadata and cleans the next versions."""
    path = tmp_path / "bounded"
    writer = JavaWriter(java_hudi(8), path, "COPY_ON_WRITE", standalone_writer_options())
    for ts in range(1, 5):  # one file group a partition, a version a write
        writer.write("upsert", [row(i, ts) for i in range(6)])
    bound = TablePolicy.from_stored({"hoodie.cleaner.commits.retained": 1, "tms.clean.max.files.per.plan": 2})
    plans = 0
    while isinstance(planned := plan_clean_or_why(HudiTable.load(str(path)), bound, datetime.now(UTC)), Planned):
        execute_instant(HudiTable.load(str(path)), planned.instant, LocalRunner(1))
        plans += 1
        assert plain_rows(writer.read("snapshot")) == plain_rows(writer.expected())
    assert plans == 3, "two old versions in each of three partitions, two files a plan"

    writer.options = {**writer.options, "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1"}
    writer.write("upsert", [row(i, 9) for i in range(6)])
    cleans = HudiTable.load(str(path)).timeline.completed((Action.CLEAN,))
    assert len(cleans) == plans + 1, "Java's cleaner ran after TMS's"
    assert plain_rows(writer.read("snapshot")) == plain_rows(writer.expected())
