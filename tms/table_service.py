"""The table services TMS runs, apart from the timeline actions their instants are written as (a compaction
completes as a `commit`, a clustering as a `replacecommit`): tasks, queues, policies and the API speak of
these."""
from enum import StrEnum


class TableService(StrEnum):
    COMPACTION = "compaction"
    CLUSTERING = "clustering"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    RESTORE = "restore"   # in place, to a savepoint (Hudi's restore action)


SERVICES: tuple[TableService, ...] = tuple(TableService)
