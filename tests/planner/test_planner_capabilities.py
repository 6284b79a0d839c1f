"""Nothing planned that cannot run. A table TMS cannot serve gets no plan on its timeline, from the planner or
from `tms schedule`, for each kind of table the issue names (real fixture tables whose `hoodie.properties`
are changed as a writer would: a metadata-table partition TMS cannot maintain (an expression index, an index
still being built), merge mode CUSTOM, a bootstrap table, virtual keys on MERGE_ON_READ); the planner raises an
alert saying why instead. Requested plans TMS wrote and can no longer run are rolled back by TMS (their tasks
CANCELLED with the reason); a writer's are left on the timeline and not adopted."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from planner_db_support import pending_plans, planner
from typer.testing import CliRunner

from service.table_view import registration_facts
from tms.cli import app
from tms.db import AlertRepo, EngineRepo, RolloutRepo, TableRepo, TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties
from tms.planning.capabilities import capabilities

COMPACT_EVERY_COMMIT = {"hoodie.compact.inline.max.delta.commits": "1"}
runner = CliRunner()

# kind -> (MOR fixture, the properties a writer changed, a word the refusal names)
UNSERVABLE = {
    "expression_index": ("mor_v8_trips_8i3u1d", {"hoodie.table.metadata.partitions": "files,expr_index_price"},
                         "expr_index_price"),
    "inflight_mdt_partition": ("mor_v8_trips_8i3u1d",
                               {"hoodie.table.metadata.partitions.inflight": "record_index"}, "record_index"),
    "custom_merge_mode": ("mor_v6_trips_8i1u", {"hoodie.compaction.payload.class": "com.acme.MyPayload"}, "CUSTOM"),
    "bootstrap": ("mor_v6_trips_8i1u", {"hoodie.bootstrap.base.path": "/data/source"}, "bootstrap"),
    # Hudi 0.15 merges the logs of virtual-key tables by one record key field only
    "virtual_keys_mor": ("mor_v6_trips_8i1u", {"hoodie.populate.meta.fields": "false",
                                               "hoodie.table.recordkey.fields": "uuid,rider"}, "virtual keys"),
}


def _copy(fixture_tables, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fixture_tables[name], tmp_path / name))


def _set(path: Path, changes: dict[str, str | None]) -> None:
    """Change the table's hoodie.properties as a writer does (None removes a key)."""
    props = HudiTable.load(str(path)).config.props
    props = {k: v for k, v in {**props, **changes}.items() if v is not None}
    (path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))


def _timeline_files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in (path / ".hoodie").rglob("*") if p.is_file())


def _register(db, path: Path) -> int:
    with db.transaction() as session:
        return TableRepo(session).register(base_path=str(path), policies=COMPACT_EVERY_COMMIT,
                                           **registration_facts(HudiTable.load(str(path)))).id


def _open_alerts(db, table_id: int) -> dict[str, str]:
    with db.transaction() as session:
        alerts, _ = AlertRepo(session).find(table_id=table_id, open_only=True)
        return {a.kind: a.message for a in alerts}


def _tasks(db, table_id: int):
    with db.transaction() as session:
        return sorted(TaskRepo(session).find(table_id=table_id, limit=100)[0], key=lambda t: t.id)


@pytest.mark.parametrize("name", sorted({fixture for fixture, _, _ in UNSERVABLE.values()}))
def test_the_unchanged_fixtures_get_a_compaction(db, fixture_tables, tmp_path, name):
    """The control: what the cases below refuse is planned on the tables as written."""
    path = _copy(fixture_tables, name, tmp_path)
    table_id = _register(db, path)
    assert planner(db).reconcile(table_id)
    [task] = _tasks(db, table_id)
    assert task.service == "compaction" and task.planned_by_tms
    assert pending_plans(HudiTable.load(str(path))) == [(task.instant, "compaction")]


@pytest.mark.parametrize("kind", sorted(UNSERVABLE))
def test_the_planner_writes_no_plan_on_a_table_it_cannot_serve_and_says_why(db, fixture_tables, tmp_path, kind):
    name, changes, word = UNSERVABLE[kind]
    path = _copy(fixture_tables, name, tmp_path)
    _set(path, changes)
    table_id = _register(db, path)
    before = _timeline_files(path)
    p = planner(db)
    assert p.reconcile(table_id)
    assert _timeline_files(path) == before
    assert _tasks(db, table_id) == []
    alerts = _open_alerts(db, table_id)
    assert set(alerts) == {"service_refused"}
    assert alerts["service_refused"].startswith("compaction is due but not planned: TMS cannot run compaction on")
    assert word in alerts["service_refused"]
    assert p.reconcile(table_id) and _timeline_files(path) == before
    with db.transaction() as session:
        [alert] = AlertRepo(session).find(table_id=table_id)[0]
        assert alert.resolved_at is None, "one alert per table and service while it holds"


@pytest.mark.parametrize("kind", sorted(UNSERVABLE))
def test_a_table_whose_rule_names_a_hudi_engine_gets_the_plan_that_engine_runs(db, fixture_tables, tmp_path, kind):
    """Hudi's own procedures (a Hudi engine) run the compactions TMS's engine cannot: with a rollout rule naming
    one as the table's stable engine, the planner plans them; the capability says which engine runs them."""
    name, changes, word = UNSERVABLE[kind]
    path = _copy(fixture_tables, name, tmp_path)
    _set(path, changes)
    table_id = _register(db, path)
    with db.transaction() as session:
        EngineRepo(session).put("hudi-1.0", kind="hudi", code_version="hudi-1.0.2", code_path="",
                                spark_submit="/opt/spark-3.5/bin/spark-submit",
                                spark_conf={"spark.jars": "/opt/hudi-bundle.jar"})
        EngineRepo(session).put("tms-next", code_version="next", code_path="/opt/tms-next")
        row = TableRepo(session).get(table_id)
        RolloutRepo(session).put("legacy", table_name=f"{row.database}.{row.name}", stable_engine="hudi-1.0",
                                 canary_engine=None, canary_percent=0, failure_margin=0.2, min_tasks=5)
        # another table's rule, and a rule naming an engine of TMS's own code, change nothing for it
        RolloutRepo(session).put("others", table_name="other.table", stable_engine="hudi-1.0",
                                 canary_engine=None, canary_percent=0, failure_margin=0.2, min_tasks=5)
        assert RolloutRepo(session).hudi_engine_for(queue=row.queue, database=row.database,
                                                    table=row.name) == "hudi-1.0"
    assert planner(db).reconcile(table_id)
    [task] = _tasks(db, table_id)
    assert task.service == "compaction" and task.planned_by_tms
    assert pending_plans(HudiTable.load(str(path))) == [(task.instant, "compaction")]
    assert "service_refused" not in _open_alerts(db, table_id)
    with db.transaction() as session:
        capability = capabilities(HudiTable.load(str(path)), RolloutRepo(session).hudi_engine_for(
            queue=row.queue, database=row.database, table=row.name))["compaction"]
    assert capability.can_run and capability.engine == "hudi-1.0" and word in capability.reason
    assert not capabilities(HudiTable.load(str(path)))["compaction"].can_run, "TMS's own engine cannot"

    # The rule now names TMS's own code: the plan TMS wrote can no longer run, and is rolled back
    with db.transaction() as session:
        RolloutRepo(session).put("legacy", table_name=f"{row.database}.{row.name}", stable_engine="tms-next",
                                 canary_engine=None, canary_percent=0, failure_margin=0.2, min_tasks=5)
    assert planner(db).reconcile(table_id)
    assert pending_plans(HudiTable.load(str(path))) == []
    assert TaskState(_tasks(db, table_id)[0].state) is TaskState.CANCELLED


@pytest.mark.parametrize("kind", sorted(UNSERVABLE))
def test_tms_schedule_writes_no_plan_on_a_table_it_cannot_serve(fixture_tables, tmp_path, kind):
    name, changes, word = UNSERVABLE[kind]
    path = _copy(fixture_tables, name, tmp_path)
    _set(path, changes)
    before = _timeline_files(path)
    result = runner.invoke(app, ["schedule", str(path), "--service", "compaction", "--option",
                                 "hoodie.compact.inline.max.delta.commits=1"])
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: TMS cannot run compaction on table ") and word in line
    assert _timeline_files(path) == before


def test_a_plan_tms_wrote_that_can_no_longer_run_is_rolled_back_with_an_alert(db, fixture_tables, tmp_path):
    path = _copy(fixture_tables, "mor_v6_trips_8i1u", tmp_path)
    table_id = _register(db, path)
    p = planner(db)  # one planner: its cached table must see the properties change
    assert p.reconcile(table_id)
    [task] = _tasks(db, table_id)
    assert task.state == TaskState.RUNNABLE
    _set(path, {"hoodie.table.metadata.partitions": "files,expr_index_price"})  # a writer enabled an index

    assert p.reconcile(table_id)
    assert pending_plans(HudiTable.load(str(path))) == [], "the requested plan is removed"
    [task] = _tasks(db, table_id)
    assert task.state == TaskState.CANCELLED and "expr_index_price" in task.error
    alerts = _open_alerts(db, table_id)
    assert alerts["plan_rolled_back"].startswith(f"TMS rolled back its compaction plan {task.instant} on table")
    assert "expr_index_price" in alerts["plan_rolled_back"] and "service_refused" in alerts

    _set(path, {"hoodie.table.metadata.partitions": "files"})  # the index dropped again: TMS serves it again
    assert p.reconcile(table_id)
    assert _open_alerts(db, table_id) == {}
    cancelled, new = _tasks(db, table_id)
    assert new.state == TaskState.RUNNABLE and pending_plans(HudiTable.load(str(path))) == [(new.instant,
                                                                                             "compaction")]


def test_a_writers_plan_that_tms_cannot_run_is_left_and_not_adopted(db, fixture_tables, tmp_path):
    path = _copy(fixture_tables, "mor_v6_trips_8i1u", tmp_path)
    table_id = _register(db, path)
    scheduled = runner.invoke(app, ["schedule", str(path), "--service", "compaction", "--option",
                                    "hoodie.compact.inline.max.delta.commits=1"])
    assert scheduled.exit_code == 0, scheduled.output
    instant = scheduled.stdout.split()[0]  # a plan outside TMS's planner: a writer's
    _set(path, {"hoodie.compaction.payload.class": "com.acme.MyPayload"})

    p = planner(db)
    assert p.reconcile(table_id)
    assert pending_plans(HudiTable.load(str(path))) == [(instant, "compaction")], "not TMS's to remove"
    assert _tasks(db, table_id) == [], "not adopted: TMS cannot run it"
    alerts = _open_alerts(db, table_id)
    assert alerts["plan_unrunnable"].startswith(f"the writers' compaction plan {instant} on table")
    assert "CUSTOM" in alerts["plan_unrunnable"]

    _set(path, {"hoodie.compaction.payload.class": None})
    assert p.reconcile(table_id)
    assert _open_alerts(db, table_id) == {}
    [task] = _tasks(db, table_id)
    assert (task.instant, task.state, task.planned_by_tms) == (instant, TaskState.RUNNABLE, False)
