"""Index building as the API asks for it (`POST /api/v1/tables/{id}/indexes`): the `indexing` instant is
scheduled on the table's timeline under the writers' lock (tms.hudi.metadata.indexer), and its task recorded
for a worker to run (`jobs/run.py --action indexing`, on the Python runner too). Refusals come before anything is
written, each in one line."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.db import TableRecord, TaskRecord, TaskRepo, TaskState
from tms.hudi.context import HudiContext
from tms.hudi.locks import TransactionManager
from tms.hudi.metadata.indexer import schedule_index
from tms.hudi.table.hudi_table import HudiTable
from tms.table_service import TableService
from tms.task_payload import ONE_OPERATION


def request_index_build(session: Session, row: TableRecord, partition: str, column: str | None = None, *,
                        context: HudiContext) -> TaskRecord:
    """Schedule building metadata partition `partition` (a secondary index: on `column`) of the registered table
    `row`; record its task."""
    table = HudiTable.load(row.base_path, context=context)
    with TransactionManager.from_options(table, row.concurrency_options) as transactions:
        instant = schedule_index(table, partition, transactions, column)
    task, _ = TaskRepo(session).create(
        table_id=row.id, service=TableService.INDEXING.value, instant=instant, state=TaskState.RUNNABLE,
        planned_by_tms=True, payload=ONE_OPERATION)
    return task
