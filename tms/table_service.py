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
    # Copies of the table to and from its backup destination (tms.backup): they write nothing on its timeline.
    BACKUP = "backup"
    BACKUP_CLEAN = "backup_clean"
    BACKUP_RESTORE = "backup_restore"
    # Time to live (tms.planning.ttl), requested on schedule by the manager's leader: each writes its own
    # instant on the timeline when it runs (a delete commit, a delete_partition replacecommit), none before.
    TTL = "ttl"                      # the record TTL's deletes
    PARTITION_TTL = "partition_ttl"  # the expired partitions' delete_partition
    # A metadata-table partition built (Hudi's `indexing` action), asked for through the API: its task's instant
    # is the indexing instant the request scheduled (tms.hudi.metadata.indexer).
    INDEXING = "indexing"
    # Archival of the active timeline (Hudi's archiver: tms.hudi.table.archival), planned when Hudi's rule says
    # the active timeline is over its limit. It writes no instant: its task's instant names the request, and the
    # instants it archives (through the latest one, `archive_through` in its plan) are in its result.
    ARCHIVE = "archive"


# The services on a table's timeline, each an instant TMS executes (a restore is asked for, the others planned),
# and its archival (the instants it moves off the active timeline).
SERVICES: tuple[TableService, ...] = (TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN,
                                      TableService.ROLLBACK, TableService.RESTORE, TableService.ARCHIVE)
# The services TMS plans (the planner on its own, `tms schedule` and `tms trigger` on request): a restore is asked for.
PLANNED_SERVICES: tuple[TableService, ...] = tuple(s for s in SERVICES if s is not TableService.RESTORE)
# The services on a table's backups: their task's instant names the request, not an instant of the timeline.
BACKUP_SERVICES: tuple[TableService, ...] = (TableService.BACKUP, TableService.BACKUP_CLEAN,
                                             TableService.BACKUP_RESTORE)


# The TTL services: their task's instant names the request too; the instant the job writes is in its result.
TTL_SERVICES: tuple[TableService, ...] = (TableService.TTL, TableService.PARTITION_TTL)
# The services whose task's instant names the request (a time unique among the table's tasks), not an instant
# on the table's timeline: the worker runs their job without preparing an instant, the job's result record
# says it is done, and the reconciliation of tasks with timelines leaves them alone.
REQUESTED_SERVICES: tuple[TableService, ...] = BACKUP_SERVICES + TTL_SERVICES + (TableService.ARCHIVE,)


# The services a worker claims before the others of the same priority: archival is small and bounded (a few
# hundred instants at most), and until it runs every other job loads the grown active timeline; behind a queue
# of compactions and cleans it let a busy table's timeline grow to four times its limit (bench/long_life.py).
CLAIMED_FIRST: tuple[TableService, ...] = (TableService.ARCHIVE,)
# The services whose jobs are short and run no Spark (archival: a few hundred instants, in the warm engine's driver
# or a Python process): a worker runs them in a lane of their own (TMS_WORKER_LIGHT_SLOTS), neither in one of its
# slots nor against a queue's capacity. Behind the 2 slots' compactions and cleans, the archival a completed
# compaction made due waited seconds for a slot while a busy table's timeline stood over its limit.
LIGHT_SERVICES: tuple[TableService, ...] = (TableService.ARCHIVE,)


def names_request(service: str) -> bool:
    """Whether a task of `service` names its request rather than a timeline instant (REQUESTED_SERVICES)."""
    return service in REQUESTED_SERVICES
