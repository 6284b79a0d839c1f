"""The names the API speaks: the table services and the task states."""
from tms.table_service import SERVICES as TABLE_SERVICES

SERVICES: tuple[str, ...] = tuple(s.value for s in TABLE_SERVICES)
PLANNED_SERVICES: tuple[str, ...] = tuple(s for s in SERVICES if s != "restore")  # a restore is asked, not planned
TASK_STATES = ("PENDING", "BLOCKED", "RUNNABLE", "RUNNING", "SUCCEEDED", "FAILED", "SUSPENDED", "CANCELLED")
