"""`tms execute`: run one pending plan without the service, as Hudi's `HoodieCompactor --mode execute` does."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import typer

from tms.config import load_settings
from tms.errors import TMSError
from tms.hudi.locks import TransactionManager, is_concurrency_option, parse_concurrency_options
from tms.hudi.records.merge_budget import MAX_SIZE, is_memory_option, merge_budget_bytes
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.write_options import parse_option_pairs
from tms.hudi.timeline.instant import State, is_valid_instant_time
from tms.table_context import table_context

from .dispatch import execute_instant, executor_for
from .retry import prepare_retry
from .runner import LocalRunner
from .spark_submit import build_py_files, executor_settings_conf, spark_submit_command, spark_submit_env


def _parse_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise TMSError(f"--conf {pair!r} is not key=value")
        conf[key] = value
    return conf


def execute(path: str = typer.Argument(..., help="Base path (or URL) of the Hudi table."),
            instant: str = typer.Option(..., "--instant", help="Instant time of the pending plan to run."),
            master: str = typer.Option("local[*]", "--master",
                                       help="Spark master: local[*], spark://..., yarn, k8s://..."),
            conf: list[str] | None = typer.Option(None, "--conf", help="Spark configuration key=value (repeatable)."),
            local: bool = typer.Option(False, "--local",
                                       help="Run in this process, without Spark (small tables, tests)."),
            retry: bool = typer.Option(False, "--retry", help="First roll back a failed attempt left inflight."),
            option: list[str] | None = typer.Option(
                None, "--option", help="The table's lock option key=value (repeatable): hoodie.write.lock.provider, "
                                       "hoodie.write.lock.*, hoodie.write.concurrency.mode; and the merge's "
                                       f"memory budget, {MAX_SIZE}=BYTES.")) -> None:
    """Run one compaction, clustering, clean or rollback plan of a table, through spark-submit."""
    if not is_valid_instant_time(instant):
        raise TMSError(f"--instant {instant!r} is not an instant time (yyyyMMddHHmmssSSS)")
    confs = _parse_conf(conf or [])
    if "://" not in path:
        path = str(Path(path).resolve())  # executors and a cluster driver do not share our working directory
    options = parse_option_pairs(option or [])
    unknown = sorted(k for k in options if not is_concurrency_option(k) and not is_memory_option(k))
    if unknown:
        raise TMSError(f"--option {unknown[0]} is not a lock option "
                       f"(hoodie.write.lock.*, hoodie.write.concurrency.mode) nor {MAX_SIZE}")
    lock_options = {k: v for k, v in options.items() if is_concurrency_option(k)}
    memory_options = {k: v for k, v in options.items() if is_memory_option(k)}
    settings = load_settings()
    table = HudiTable.load(path, context=table_context(settings))
    budget = merge_budget_bytes(memory_options, table.config.props, settings.worker.merge_memory_bytes)
    concurrency = parse_concurrency_options(lock_options, base_path=path, table_name=table.name)
    with TransactionManager(table, concurrency) as transactions:
        executor = executor_for(table, instant, transactions)
        if retry and not executor.resumable_inflight and State.INFLIGHT in table.timeline.states_of(instant):
            rolled_back = prepare_retry(table, instant, transactions=transactions)
            if rolled_back is not None:  # None: the attempt completed or was rolled back meanwhile
                typer.echo(rolled_back.summary())
            executor = executor_for(table, instant, transactions)
        executor.validate()
        if local:
            typer.echo(execute_instant(table, instant, LocalRunner(), transactions=transactions,
                                       budget_bytes=budget).summary())
            return
    with tempfile.TemporaryDirectory(prefix="tms-execute-") as tmp:
        cmd = spark_submit_command(table.base_path, instant, py_files=build_py_files(Path(tmp)), master=master,
                                   conf=confs, service=executor.service, options={**lock_options, **memory_options},
                                   settings_conf=executor_settings_conf(settings))
        code = subprocess.call(cmd, env=spark_submit_env(master))
    if code != 0:
        raise TMSError(f"the Spark job of {executor.service} {instant} failed (spark-submit exit status {code})")


def register(app: typer.Typer) -> None:
    app.command("execute")(execute)
