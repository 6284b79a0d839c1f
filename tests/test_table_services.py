"""The table services' registry (tms.table_services): every TableService has its entry, and the entry agrees with
the payload union, the timeline actions the dispatch runs, and the jobs a worker launches."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tms.execute.dispatch import EXECUTORS
from tms.execute.hudi_engine import refusal
from tms.table_service import REQUESTED_SERVICES, TableService
from tms.table_services import BY_ACTION, JAVA_EXECUTED, PASS_PLANNED, TABLE_SERVICES, entry_of
from tms.task_payload import ONE_OPERATION, PlanStatistics, payload_of


@pytest.mark.parametrize("service", list(TableService))
def test_every_table_service_has_one_entry_that_agrees_with_its_payload_and_job(service):
    entry = entry_of(service.value)
    assert entry.service is service
    assert type(payload_of(service, {}).body) is entry.payload, "the registry names the payload the union parses"
    if service in REQUESTED_SERVICES:  # its task names its request: its own job runs it, nothing on the timeline
        assert entry.executor is None and not entry.actions and entry.payload is not PlanStatistics
        assert entry.job is not None and importlib.util.find_spec(entry.job) is not None
    else:  # a plan on the timeline: the plan's job runs it with the executor of its actions
        assert entry.executor is not None and entry.job is None and entry.actions
        assert all(BY_ACTION[a] is entry for a in entry.actions)


def test_the_registry_is_what_the_pass_the_dispatch_and_the_sizing_go_by():
    assert set(TABLE_SERVICES) == set(TableService)
    assert PASS_PLANNED == (TableService.COMPACTION, TableService.CLUSTERING, TableService.CLEAN,
                            TableService.ARCHIVE), "the order a pass plans them in"
    assert set(EXECUTORS) == {"compaction", "clustering", "clean", "rollback"}, "a restore, an index build: whole"
    assert {s for s, e in TABLE_SERVICES.items() if e.merges} == {TableService.COMPACTION, TableService.CLUSTERING}
    with pytest.raises(ValueError):
        entry_of("vacuum")


def test_a_payload_of_another_service_is_refused():
    with pytest.raises(ValueError, match="archive task: its payload is ArchiveRequest, not PlanStatistics"):
        payload_of("archive", ONE_OPERATION)


def test_java_executes_compaction_and_clustering_plans_only():
    """A hudi engine and a rollout's shadow run take these from the registry (Hudi's run_clean would schedule
    a clean of its own rather than run TMS's plan)."""
    assert JAVA_EXECUTED == (TableService.COMPACTION, TableService.CLUSTERING)
    assert refusal("compaction") is None
    assert "cannot execute a TMS-planned clean" in refusal("clean")


@pytest.mark.parametrize("job", sorted({"jobs.python_job", "jobs.run"} | {e.job for e in TABLE_SERVICES.values()
                                                                           if e.job}))
def test_a_job_starts_without_the_database_layer_or_spark(job):
    """Every task's job is a process of its own: importing the database layer took 3 of its 3.4 s of start-up
    CPU, once per compaction, clean and archive. A job talks to TMS through its fence, never to the database;
    Spark is imported only by a job that runs on it."""
    code = (f"import sys, {job}; print(sorted(m for m in ('sqlalchemy', 'alembic', 'tms.db', 'pyspark', 'fastapi') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
