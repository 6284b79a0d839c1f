"""A table's metadata-table indexes: those built and being built, a build (Hudi's `indexing` action, run by a
worker as the `indexing` service while writers go on committing) and a drop."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response, status

from tms.db import TableRepo
from tms.hudi.locks import TransactionManager
from tms.hudi.metadata.indexer import drop_index
from tms.hudi.metadata.reader import inflight_metadata_partitions, metadata_partitions
from tms.hudi.table.hudi_table import HudiTable

from ..auth import Admin, AuthenticatedFirst, Viewer
from ..indexing import request_index_build
from ..schemas.common import Id, ShortText
from ..schemas.indexes import IndexesOut, IndexIn
from ..schemas.problems import ADMIN, VIEWER, problems
from ..schemas.tasks import TaskOut

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/tables", tags=["indexes"])
TableId = Annotated[Id, Path(description="The table's id")]
Partition = Annotated[ShortText, Path(description="The metadata-table partition, e.g. record_index")]


@router.get("/{table_id}/indexes", response_model=IndexesOut, dependencies=[Viewer],
            summary="The table's metadata-table partitions", responses=problems(*VIEWER, 404, 422))
def list_indexes(table_id: TableId, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        row = TableRepo(session).get(table_id)
    table = HudiTable.load(row.base_path, context=request.app.state.table_context)
    return {"table_id": table_id, "built": metadata_partitions(table), "building": inflight_metadata_partitions(table)}


@router.post("/{table_id}/indexes", status_code=status.HTTP_202_ACCEPTED, response_model=TaskOut,
             dependencies=[Admin], summary="Build a metadata-table partition of the table",
             description="Schedules Hudi's `indexing` instant under the writers' lock (the partition joins "
                         "`hoodie.table.metadata.partitions.inflight`) and answers with its task; a worker builds "
                         "the partition from the table's files, catches up with the writes that complete "
                         "meanwhile and completes the instant. 422, before anything is written, for what TMS "
                         "cannot build exactly: a table version below 8, an expression index, a secondary "
                         "index (`secondary_index_<name>` with its `column`) on a table of version other than 8 "
                         "and 9, without a record index or on a column type TMS does not render as Hudi does, a "
                         "partition the table has or is building.",
             responses=problems(*ADMIN, 400, 404, 413, 422))
def build_index(table_id: TableId, body: IndexIn, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        row = TableRepo(session).get(table_id)
        task = request_index_build(session, row, body.partition, body.column,
                                   context=request.app.state.table_context)
        return TaskOut.model_validate(task).model_dump()


@router.delete("/{table_id}/indexes/{partition}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               summary="Drop a metadata-table partition of the table",
               description="Under the writers' lock: the partition leaves hoodie.properties, then its folder is "
                           "deleted. Dropping `files` drops the metadata table (refused while it has other "
                           "partitions); refused while an indexing instant is pending.",
               responses=problems(*ADMIN, 404, 422))
def delete_index(table_id: TableId, partition: Partition, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        row = TableRepo(session).get(table_id)
    table = HudiTable.load(row.base_path, context=request.app.state.table_context)
    with TransactionManager.from_options(table, row.concurrency_options) as transactions:
        drop_index(table, partition, transactions)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
