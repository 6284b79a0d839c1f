"""`tms savepoint`, `tms savepoints`, `tms restore` and `tms restore-copy`: savepoints and restores of a table
on storage, without the service (the service's API does the same for registered tables)."""
from __future__ import annotations

from pathlib import Path

import typer

from tms.config import load_settings
from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.savepoint import create_savepoint, delete_savepoint, read_savepoint
from tms.hudi.table.write_options import parse_option_pairs
from tms.table_context import table_context

from .restore import restore_in_place
from .restore_copy import restore_copy
from .runner import LocalRunner

Option = typer.Option(None, "--option", help="The table's lock option key=value (repeatable): "
                                             "hoodie.write.lock.provider, hoodie.write.lock.*")


def _open(path: str, option: list[str] | None) -> tuple[HudiTable, TransactionManager]:
    if "://" not in path:
        path = str(Path(path).resolve())
    table = HudiTable.load(path, context=table_context(load_settings()))
    concurrency = parse_concurrency_options(parse_option_pairs(option or []), base_path=path, table_name=table.name)
    return table, TransactionManager(table, concurrency)


def savepoint(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table."),
              instant: str | None = typer.Option(None, "--instant", help="The completed write to keep (default: "
                                                 "the latest)."),
              comment: str = typer.Option("", "--comment"),
              delete: bool = typer.Option(False, "--delete", help="Delete the savepoint at --instant instead."),
              option: list[str] | None = Option) -> None:
    """Savepoint a table (as Hudi's savepoint action), or delete one."""
    table, transactions = _open(path, option)
    with transactions, transactions.transaction():
        if delete:
            if instant is None:
                raise typer.BadParameter("--delete needs --instant")
            delete_savepoint(table, instant)
            typer.echo(f"savepoint {instant} of {table.name} deleted")
            return
        made = create_savepoint(table, instant, user="tms-cli", comment=comment)
    typer.echo(f"savepoint {made.timestamp} of {table.name} made")


def savepoints(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table.")) -> None:
    """List a table's savepoints."""
    table = HudiTable.load(path, context=table_context(load_settings()))
    for s in table.timeline.savepoints():
        meta = read_savepoint(table, s.timestamp)
        files = sum(len(p.savepoint_data_file) for p in meta.partition_metadata.values())
        typer.echo(f"{s.timestamp}  by {meta.savepointed_by}  {files} file(s)  {meta.comments}")


def restore(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table."),
            savepoint_instant: str = typer.Option(..., "--savepoint", help="The savepoint to restore the table to."),
            force: bool = typer.Option(False, "--force", help="Roll back the writers' pending instants too."),
            option: list[str] | None = Option) -> None:
    """Restore a table in place to a savepoint (Hudi's restore action), under the writers' lock."""
    table, transactions = _open(path, option)
    with transactions:
        result = restore_in_place(table, savepoint_instant, LocalRunner(), roll_back_pending_writes=force,
                                  transactions=transactions)
    typer.echo(result.summary())


def restore_copy_command(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table."),
                         savepoint_instant: str = typer.Option(..., "--savepoint", help="The savepoint to copy."),
                         target_path: str = typer.Option(..., "--target-path", help="A new, empty base path.")
                         ) -> None:
    """Restore a savepoint of a table to a new base path (the source is only read)."""
    table = HudiTable.load(path, context=table_context(load_settings()))
    typer.echo(restore_copy(table, savepoint_instant, target_path, LocalRunner()).summary())


def register(app: typer.Typer) -> None:
    app.command("savepoint")(savepoint)
    app.command("savepoints")(savepoints)
    app.command("restore-savepoint")(restore)
    app.command("restore-copy")(restore_copy_command)
