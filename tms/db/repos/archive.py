"""The tasks of tables' archival (tms.planning.archive), requested by a planning pass: at most one active per
table; its instant names the request, the latest instant it archives through is in its plan."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.table_service import TableService
from tms.task_payload import ArchiveRequest

from ..records import TaskRecord
from .requested import active_task, request_task

_ARCHIVE = [TableService.ARCHIVE.value]


class ArchiveTaskRepo:
    def __init__(self, session: Session):
        self.session = session

    def active(self, table_id: int) -> TaskRecord | None:
        return active_task(self.session, table_id, _ARCHIVE)

    def request(self, table_id: int, request: ArchiveRequest, *, priority: int = 0,
                queue: str | None = None) -> TaskRecord:
        """Record a runnable archive task; ConflictError while another one of the table is active."""
        return request_task(self.session, table_id, TableService.ARCHIVE.value, request, scope=_ARCHIVE,
                            kind="archive", priority=priority, queue=queue)
