"""`tms ttl`: apply a table's time to live now, without the service: delete its expired partitions (Hudi's
KEEP_BY_TIME) and its expired records (the record TTL task), as the policy options given say."""
from __future__ import annotations

from datetime import UTC, datetime

import typer
from pydantic import ValidationError

from tms.config import load_settings
from tms.errors import TMSError
from tms.hudi.locks import TransactionManager, is_concurrency_option, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.write_options import parse_option_pairs
from tms.planning.policy import TablePolicy
from tms.planning.ttl import expired_partitions, record_ttl_cutoff, ttl_policy_refusal
from tms.table_context import table_context

from .partition_delete import delete_partitions
from .record_ttl_delete import DEFAULT_MAX_FILE_GROUPS, delete_expired_records, expired_records


def ttl(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table."),
        policy: list[str] | None = typer.Option(
            None, "--policy", help="A TTL option key=value (repeatable): tms.ttl.field, tms.ttl.days, "
                                   "hoodie.partition.ttl.days.retain, "
                                   "hoodie.partition.ttl.management.max.partitions.to.delete."),
        max_file_groups: int = typer.Option(DEFAULT_MAX_FILE_GROUPS, "--max-file-groups", min=1,
                                            help="At most this many file groups' expired records per run."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Say what has expired; write nothing."),
        option: list[str] | None = typer.Option(
            None, "--option", help="The table's lock option key=value (repeatable): hoodie.write.lock.provider, "
                                   "hoodie.write.lock.*, hoodie.write.concurrency.mode.")) -> None:
    """Delete a table's expired partitions, then its expired records; prints what it did."""
    try:
        ttl_policy = TablePolicy.from_stored(parse_option_pairs(policy or []))
    except ValidationError as exc:
        raise TMSError(f"--policy: {exc.errors()[0]['msg']}") from None
    if not (ttl_policy.record_ttl or ttl_policy.partition_ttl):
        raise TMSError("no TTL to apply: give --policy tms.ttl.field=F --policy tms.ttl.days=N, or "
                       "--policy hoodie.partition.ttl.days.retain=N")
    lock_options = parse_option_pairs(option or [])
    unknown = sorted(k for k in lock_options if not is_concurrency_option(k))
    if unknown:
        raise TMSError(f"--option {unknown[0]} is not a lock option "
                       "(hoodie.write.lock.*, hoodie.write.concurrency.mode)")
    table = HudiTable.load(path, context=table_context(load_settings()))
    refusal = ttl_policy_refusal(table, ttl_policy)
    if refusal:
        raise TMSError(refusal[1])
    now = datetime.now(UTC)
    partitions = expired_partitions(table, ttl_policy, now)
    cutoff = record_ttl_cutoff(ttl_policy, now) if ttl_policy.record_ttl else None
    if dry_run:
        typer.echo(f"expired partitions: {', '.join(partitions) or 'none'}")
        if cutoff is not None:
            expired, groups = expired_records(table, ttl_policy.ttl_field, cutoff, max_file_groups)
            typer.echo(f"expired records: {expired.num_rows if expired is not None else 0} in {groups} file group(s)")
        return
    concurrency = parse_concurrency_options(lock_options, base_path=path, table_name=table.name)
    with TransactionManager(table, concurrency) as transactions:
        if partitions:
            instant = delete_partitions(table, partitions, transactions)
            typer.echo(f"deleted {len(partitions)} partition(s) ({', '.join(partitions)}) in replacecommit {instant}")
        elif ttl_policy.partition_ttl:
            typer.echo("no expired partition")
        if cutoff is not None:
            done = delete_expired_records(table, ttl_policy.ttl_field, cutoff, transactions=transactions,
                                          max_file_groups=max_file_groups)
            typer.echo(f"deleted {done.deleted} expired record(s) of {done.file_groups} file group(s) in commit "
                       f"{done.instant}" if done.instant else "no expired record")


def register(app: typer.Typer) -> None:
    app.command("ttl")(ttl)
