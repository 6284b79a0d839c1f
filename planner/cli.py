"""The planner's commands, mounted on the `tms` app by `register(app)`:

    tms schedule PATH --service S  plan one table service on one table without the service, as Hudi's
                                   `HoodieCompactor --mode schedule` does
    tms planner                    run the planner role process"""
from __future__ import annotations

import logging
from datetime import UTC, datetime

import typer
from pydantic import ValidationError

from tms.config import load_settings
from tms.errors import TMSError
from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.inspect import human_size
from tms.hudi.table.write_options import parse_option_pairs, split_concurrency_options
from tms.planning.incremental import full_pass_period
from tms.planning.planned import Planned
from tms.planning.policy import TablePolicy
from tms.planning.schedule import schedule
from tms.table_context import table_context
from tms.table_service import PLANNED_SERVICES, TableService


def _policy(changes: dict[str, str]) -> TablePolicy:
    try:
        return TablePolicy().merged(changes)
    except ValidationError as e:
        error = e.errors()[0]
        raise TMSError(f"--option {'.'.join(str(p) for p in error['loc'])}: {error['msg']}") from None


def _describe(planned: Planned) -> str:
    s = planned.stats
    if planned.service == TableService.ARCHIVE:  # nothing is written: a worker's archive task archives them
        return (f"archive due: {s.operations} instant(s) through {planned.instant} (Hudi's archival rule); the "
                f"planner records an archive task for a worker, or `tms trigger TABLE --service archive`")
    return (f"{planned.instant} {planned.service} planned: {s.operations} operation(s), {human_size(s.total_bytes)}, "
            f"largest file group {human_size(s.largest_file_group_bytes)}")


def register(app: typer.Typer) -> None:
    @app.command("schedule")
    def schedule_command(
            path: str = typer.Argument(..., help="Base path (or URL) of a Hudi table."),
            service: str = typer.Option(..., "--service", "--action",
                                        help="compaction | clustering | clean | rollback | archive "
                                             "(--action: its older name)"),
            option: list[str] | None = typer.Option(
                None, "--option", help="A policy option, hoodie.key=value (repeatable); the table's lock options "
                                       "(hoodie.write.lock.*, hoodie.write.concurrency.mode) plan under its lock.")):
        """Plan one table service now: sync held compaction plans, then write the new plan's requested
        instant and print it (or say there is nothing to do)."""
        if service not in PLANNED_SERVICES:
            raise TMSError(f"--service must be one of {', '.join(PLANNED_SERVICES)}, not {service!r}")
        concurrency_options, policy_options = split_concurrency_options(parse_option_pairs(option or []))
        policy = _policy(policy_options)
        table = HudiTable.load(path, context=table_context(load_settings()))
        concurrency = parse_concurrency_options(concurrency_options, base_path=path, table_name=table.name)
        with TransactionManager(table, concurrency) as transactions:
            result = schedule(table, service, policy, datetime.now(UTC), transactions,
                              full_pass_period(load_settings().planner.full_pass_hours))
        for tc, blockers in result.synced.items():
            typer.echo(f"{tc} compaction held by delta commits in flight: {', '.join(blockers)}" if blockers
                       else f"{tc} compaction synced with its late commits: runnable")
        for planned in result.planned:
            typer.echo(_describe(planned))
            if planned.blockers:
                typer.echo(f"  held until these delta commits complete or roll back: {', '.join(planned.blockers)}")
        if not result.planned:
            typer.echo(f"nothing to do: no {service} is due")

    @app.command("planner")
    def planner_command(
            threads: int | None = typer.Option(None, "--threads", min=1,
                                                  help="Tables planned at the same time [TMS_PLANNER_THREADS]")):
        """Run the planner role: plan on each table's events, on the periodic trigger and on the
        reconciliation scan, and record a task per plan."""
        # The role's process (the database, the scheduler) loads only for `tms planner`.
        from tms.instance import run_role

        from .process import PlannerService

        settings = load_settings(**({"planner_threads": threads} if threads is not None else {}))
        run_role(settings, lambda database: PlannerService(database, settings),
                 quiet_loggers={"apscheduler": logging.WARNING})  # a line per run
