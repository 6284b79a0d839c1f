"""An `indexing` task requested through the API runs on a worker with the Python runner: the record index of a
table is built while its writer goes on committing, the task SUCCEEDS, and `tms verify` and hudi-rs agree."""
from __future__ import annotations

import httpx
from mdt_model import MdtModelledTable, check_metadata_table
from worker_support import attempts, rec, register, wait_until_final

from tms.db import TaskState
from tms.hudi.table.hudi_table import HudiTable


def test_an_indexing_task_runs_on_the_python_runner(tmp_path, service, db, local_queue, start_worker):
    local_queue()
    t = MdtModelledTable(tmp_path / "t", "MERGE_ON_READ", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(12)], "insert")
    table_id = register(service, t.path)
    response = httpx.post(f"{service.url}/api/v1/tables/{table_id}/indexes", json={"partition": "record_index"},
                          headers=service.admin, timeout=30)
    assert response.status_code == 202, response.text
    task = response.json()
    t.write([rec(i, 2) for i in range(8, 16)])       # the writer commits while the index waits to be built
    start_worker()
    done = wait_until_final(db, task["id"], timeout=120)
    assert TaskState(done.state) is TaskState.SUCCEEDED, [a.error for a in attempts(db, task["id"])]
    assert HudiTable.load(str(t.path)).timeline.get(task["instant"]).is_completed
    t.write([rec(i, 3) for i in range(14, 20)])      # and after: the built index is kept up to date
    check_metadata_table(t.path, t.model.expected())
