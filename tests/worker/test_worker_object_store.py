"""The worker's python runner on a table on S3 (the moto server on loopback): a compaction and then a clean
planned as the planner plans them run in the worker's child processes, which reach the store as the worker
does; hudi-rs reads exactly the model's rows after each."""
from __future__ import annotations

import pytest
from worker_support import ModelledTable, attempts, plan, rec, wait_until_final, write_history

from service.table_view import registration_facts
from tms.db import TableRepo, TaskState


def _run(db, task_ids: list[int]) -> None:
    assert task_ids
    for task_id in task_ids:
        done = wait_until_final(db, task_id, 180)
        assert done.state == TaskState.SUCCEEDED, f"{done.service}: {done.error}\n{attempts(db, task_id)[-1].log_tail}"


@pytest.mark.slow  # ~2 min: every request of the writer and the jobs goes through the moto server
def test_compaction_and_clean_of_an_s3_table_on_the_python_runner(s3_base, s3_endpoint, db, local_queue,
                                                                   start_worker):
    local_queue()
    t = ModelledTable(f"{s3_base}/t", "MERGE_ON_READ", 8)
    with db.transaction() as session:
        table_id = TableRepo(session).register(
            base_path=t.path, policies={"hoodie.compact.inline.max.delta.commits": 2,
                                        "hoodie.cleaner.commits.retained": 1},
            **registration_facts(t.table())).id
    write_history(t)
    start_worker()

    _run(db, plan(db, table_id, "compaction"))
    t.check()
    t.write([rec(i, 90) for i in range(0, 30, 4)])
    prefix = t.path.split(f"{s3_endpoint.bucket}/", 1)[1]
    before = {k for k in s3_endpoint.keys(prefix) if "/.hoodie/" not in k}
    _run(db, plan(db, table_id, "clean"))
    after = {k for k in s3_endpoint.keys(prefix) if "/.hoodie/" not in k}
    assert after < before, "the old file versions are gone"
    t.check()
