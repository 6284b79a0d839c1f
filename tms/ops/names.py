"""The names the API speaks: the table services and the task states."""
from tms.table_service import PLANNED_SERVICES as PLANNED
from tms.table_service import TableService

SERVICES: tuple[str, ...] = tuple(s.value for s in TableService)  # every task's service
# What `tms trigger` plans: a restore is asked for, backups follow their schedule (or `tms backups take`).
PLANNED_SERVICES: tuple[str, ...] = tuple(s.value for s in PLANNED)
TASK_STATES = ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING", "SUCCEEDED", "FAILED", "SUSPENDED", "CANCELLED")
