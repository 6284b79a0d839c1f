"""A clean deletes a partition's files in batches and records each batch done: run again after it was killed,
it deletes only what is left and reports every file the clean deleted. Small partitions share a batch: a request
per batch of files, not one per partition."""
from planning_support import ModelledTable, now, policy, rec

from tms.execute.clean import CleanExecutor, progress_dir
from tms.execute.dispatch import execute_instant
from tms.execute.fencing import no_fence
from tms.execute.runner import LocalRunner
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_clean_metadata
from tms.planning.clean import plan_clean_or_why


class Killed(Exception):
    pass


def test_a_killed_clean_resumes_from_the_batches_it_recorded(tmp_path, monkeypatch):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8, partitioned=False)
    for step in range(1, 8):
        t.write([rec(0, step)])  # one file group, a version a commit
    planned = plan_clean_or_why(t.table(), policy(hoodie__cleaner__commits__retained=1), now())
    monkeypatch.setattr(CleanExecutor, "delete_batch", 2)
    batches: list[list[str]] = []
    real_delete_many = LocalStorage.delete_many

    def delete_many(self, rels):
        if len(batches) == 2 and killing:
            raise Killed  # the worker dies during its third batch
        batches.append(list(rels))
        return real_delete_many(self, rels)
    monkeypatch.setattr(LocalStorage, "delete_many", delete_many)

    killing = True
    crashed = CleanExecutor(t.table(), t.table().timeline.get(planned.instant))
    [task] = crashed.start(no_fence)
    [partition] = task.partitions
    assert len(partition.files) == 5
    try:
        crashed.task_function(task, "0-0-0")
    except Killed:
        pass
    assert t.table().timeline.get(planned.instant).state is State.INFLIGHT
    done_first = [r for b in batches for r in b]
    assert len(done_first) == 4 and not any((t.path / r).exists() for r in done_first)

    killing = False
    result = execute_instant(t.table(), planned.instant, LocalRunner(), no_fence)

    again = [r for b in batches[2:] for r in b]
    assert len(again) == 1 and again[0] not in done_first, "only the batch not recorded runs again"
    meta = parse_clean_metadata(t.table().timeline.read(result.instant))
    [pm] = meta.partition_metadata.values()
    assert sorted(pm.success_delete_files) == sorted(p.rsplit("/", 1)[-1] for p in partition.files)
    assert not pm.failed_delete_files and meta.total_files_deleted == 5
    assert not (t.path / progress_dir(planned.instant, "")).exists(), "the records go with the clean's completion"
    t.check()


def test_small_partitions_share_a_batch_and_each_keeps_its_own_record(tmp_path, monkeypatch):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", 8)
    for step in range(1, 5):
        t.write([rec(k, step) for k in range(6)])  # a version a commit of each partition's file group
    planned = plan_clean_or_why(t.table(), policy(hoodie__cleaner__commits__retained=1), now())
    plan = CleanExecutor(t.table(), t.table().timeline.get(planned.instant))
    planned_files = {p: sorted(f.rsplit("/", 1)[-1] for f in files) for p, files in plan._files_by_partition().items()}
    assert len(planned_files) > 2 and all(len(f) == 2 for f in planned_files.values())
    monkeypatch.setattr(CleanExecutor, "delete_batch", 5)  # two partitions' files a batch
    batches: list[list[str]] = []
    real_delete_many = LocalStorage.delete_many

    def delete_many(self, rels):
        batches.append(list(rels))
        return real_delete_many(self, rels)
    monkeypatch.setattr(LocalStorage, "delete_many", delete_many)

    result = execute_instant(t.table(), planned.instant, LocalRunner(), no_fence)

    assert sorted(len(b) for b in batches) == sorted([4] * (len(planned_files) // 2) + [2] * (len(planned_files) % 2))
    meta = parse_clean_metadata(t.table().timeline.read(result.instant))
    assert {p: sorted(pm.success_delete_files) for p, pm in meta.partition_metadata.items()} == planned_files
    assert meta.total_files_deleted == sum(len(f) for f in planned_files.values())
    t.check()
