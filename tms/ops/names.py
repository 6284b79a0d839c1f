"""The names the API speaks: the table services and the task states."""
from tms.table_service import SERVICES as TIMELINE_SERVICES
from tms.table_service import TableService

SERVICES: tuple[str, ...] = tuple(s.value for s in TableService)  # every task's service
# What `tms trigger` plans: a restore is asked for, backups follow their schedule (or `tms backups take`).
PLANNED_SERVICES: tuple[str, ...] = tuple(s.value for s in TIMELINE_SERVICES if s is not TableService.RESTORE)
TASK_STATES = ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING", "SUCCEEDED", "FAILED", "SUSPENDED", "CANCELLED")
