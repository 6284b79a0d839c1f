"""The table services' registry (tms.table_services): every TableService has its entry, and the entry agrees with
the payload union, the timeline actions the dispatch runs, and the jobs a worker launches."""
from __future__ import annotations

import importlib.util

import pytest

from tms.execute.dispatch import EXECUTORS
from tms.table_service import REQUESTED_SERVICES, TableService
from tms.table_services import BY_ACTION, PASS_PLANNED, TABLE_SERVICES, entry_of
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
