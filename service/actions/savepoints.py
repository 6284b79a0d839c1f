"""Savepoints' use cases: savepoint a table now, delete a savepoint, announce a backfill (savepoint the latest
completed write) and end it. Each works on the registered table's timeline under the writers' lock (its
concurrency options); a refusal (SavepointError) comes before anything is written."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from tms.db import TableRepo
from tms.hudi.context import HudiContext
from tms.hudi.locks import TransactionManager
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import (
    SavepointError,
    create_savepoint,
    delete_savepoint,
    latest_savepointable,
    read_savepoint,
)

BACKFILL_SAVEPOINTER = "tms-backfill"  # `savepointedBy` of a backfill's savepoint: the policy's keep rule leaves it
API_SAVEPOINTER = "tms-api"


@dataclass(frozen=True)
class SavepointedTable:
    """A registered table as its savepoints' use cases need it: its timeline and the writers' lock options."""
    table: HudiTable
    concurrency_options: dict[str, str]


def savepointed_table(session: Session, table_id: int, context: HudiContext) -> SavepointedTable:
    """The registered table `table_id` loaded from storage with `context`; NotFoundError for an unknown id."""
    row = TableRepo(session).get(table_id)
    return SavepointedTable(HudiTable.load(row.base_path, context=context), dict(row.concurrency_options))


def savepoint_now(target: SavepointedTable, instant: str | None, comment: str) -> str:
    """Savepoint the latest completed write (or `instant`): the savepoint's instant."""
    with TransactionManager.from_options(target.table, target.concurrency_options) as transactions, \
            transactions.transaction():
        return create_savepoint(target.table, instant, user=API_SAVEPOINTER, comment=comment).timestamp


def remove_savepoint(target: SavepointedTable, instant: str) -> None:
    with TransactionManager.from_options(target.table, target.concurrency_options) as transactions, \
            transactions.transaction():
        delete_savepoint(target.table, instant)


def announce_backfill(target: SavepointedTable, reason: str) -> tuple[str, bool]:
    """Savepoint the latest completed write for a backfill, unless it has a savepoint already: its instant, and
    whether it was made now."""
    table = target.table
    with TransactionManager.from_options(table, target.concurrency_options) as transactions, \
            transactions.transaction():
        latest = latest_savepointable(table)
        existing = latest is not None and any(s.timestamp == latest for s in table.timeline.savepoints())
        if not existing:
            latest = create_savepoint(table, latest, user=BACKFILL_SAVEPOINTER,
                                      comment=f"backfill: {reason}" if reason else "backfill").timestamp
    assert latest is not None  # create_savepoint refused a table without a completed write
    return latest, not existing


def end_backfill(target: SavepointedTable, instant: str) -> None:
    """Delete the savepoint a backfill's announcement made at `instant` (not another's)."""
    table = target.table
    with TransactionManager.from_options(table, target.concurrency_options) as transactions, \
            transactions.transaction():
        made_by = read_savepoint(table, instant).savepointed_by
        if made_by != BACKFILL_SAVEPOINTER:
            raise SavepointError(f"the savepoint at {instant} was made by {made_by}, not by a backfill's "
                                 "announcement: delete it with DELETE .../savepoints/{instant}")
        delete_savepoint(table, instant)
