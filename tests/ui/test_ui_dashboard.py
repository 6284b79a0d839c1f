"""The dashboard in headless Chromium, as an operator uses it, against a running service and worker: sign in,
find a table, open its timeline, rerun a failed task and watch the worker run it; a viewer sees no action;
a form without its CSRF token is refused. A screenshot of every page is written."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from support import FIXTURE_TABLES
from ui_support import sign_in

from tms.db import AlertRepo, TaskRepo, TaskState

pytestmark = pytest.mark.slow  # a browser, a service and a worker: about a minute


@pytest.fixture(scope="module")
def scene(stack, fixtures_root):
    """Two tables; on the MOR one a compaction planned on its timeline whose task was cancelled, and an alert."""
    trips = stack.register(fixtures_root / FIXTURE_TABLES["mor_v6_trips_8i1u"], "trips_v6")
    other = stack.register(fixtures_root / FIXTURE_TABLES["cow_v6_nonpartitioned"], "plain_cow")
    instant = stack.plan_compaction(trips)
    with stack.database.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=trips["id"], service="compaction", instant=instant,
                                           state=TaskState.FAILED)
        TaskRepo(session).transition(task.id, expected_state=TaskState.FAILED, expected_version=task.version,
                                     to=TaskState.CANCELLED, error="cancelled before it ran")
        AlertRepo(session).raise_alert(kind="task_failed", severity="critical", fingerprint=f"task-{task.id}",
                                       message=f"compaction {instant} failed", table_id=trips["id"],
                                       task_id=task.id)
    return {"trips": trips, "other": other, "task_id": task.id, "instant": instant}


def test_operator_finds_a_table_opens_its_timeline_and_reruns_a_task_until_it_succeeds(stack, browsing, scene):
    page = browsing.page()
    sign_in(page, stack, "operator")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.locator("svg.tasks-over-time rect.bar")).not_to_have_count(0)
    expect(page.locator("p.leader")).to_contain_text("Leader:")  # the manager's API: no manager runs here
    browsing.shot(page, "overview")

    # Find the table by name.
    page.get_by_role("link", name="Tables", exact=True).click()
    page.get_by_label("Name").fill("trips")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.tables tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("trips_v6")
    expect(rows.first).to_contain_text("MERGE_ON_READ v6")
    browsing.shot(page, "tables")

    # Its page: the timeline drawn by action and state, file-group charts, the pending plan.
    rows.first.get_by_role("link").first.click()
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    timeline = page.locator("svg.timeline")
    lanes = timeline.locator("text.lane").all_text_contents()
    assert "deltacommit" in lanes and "compaction" in lanes, lanes
    expect(timeline.locator("rect.bar.completed")).not_to_have_count(0)
    requested = timeline.locator("rect.bar.requested")
    expect(requested).to_have_count(1)
    assert scene["instant"] in requested.locator("title").text_content()
    expect(page.locator("svg.file-group-sizes rect.bar")).not_to_have_count(0)
    expect(page.locator("svg.log-counts rect.bar")).not_to_have_count(0)
    expect(page.locator("section", has_text="Pending plans").get_by_text(scene["instant"])).to_be_visible()
    services = page.locator("#capabilities li")  # what TMS runs on the table: a line per service
    expect(services).to_have_text(["reading: runs", "compaction: runs",
                                   "clustering: runs, on request only: clustering is not asked for by the table's "
                                   "policy (hoodie.clustering.async.enabled=true in its policy or its template turns "
                                   "it on)", "clean: runs", "rollback: runs", "restore: runs",
                                   "archive: runs"])
    browsing.shot(page, "table")

    # The task: rerun, confirmed; the worker claims it and the page shows it succeed by itself.
    page.locator(f"table.tasks tr[data-task-id='{scene['task_id']}'] a").first.click()
    expect(page.locator("#task-state")).to_have_text("CANCELLED")
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Rerun").click()
    assert questions and f"Rerun task {scene['task_id']}" in questions[0]
    expect(page.locator("#task-state")).to_have_text("CANCELLED")  # dismissed: nothing happened
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Rerun").click()
    expect(page.get_by_role("status")).to_contain_text("rerun done")
    expect(page.locator("#task-state")).to_have_text(re.compile("RUNNABLE|RUNNING|SUCCEEDED"))
    expect(page.locator("#task-state")).to_have_text("SUCCEEDED", timeout=120_000)  # the page refreshes itself
    expect(page.locator("table.attempts tbody tr").first).to_contain_text("SUCCEEDED")
    browsing.shot(page, "task")

    for name, path in [("tasks", "/ui/tasks"), ("queues", "/ui/queues"), ("alerts", "/ui/alerts?show=all"),
                       ("instances", "/ui/instances"), ("mutes", "/ui/mutes")]:
        page.goto(stack.url + path)
        expect(page.locator("main h1")).to_be_visible()
        browsing.shot(page, name)
    page.goto(stack.url + "/ui/instances")
    expect(page.locator("table.instances")).to_contain_text("service")
    expect(page.locator("table.instances")).to_contain_text("worker")
    page.goto(stack.url + "/ui/queues")
    expect(page.locator("table.queues")).to_contain_text("local")  # created by the worker
    page.goto(stack.url + "/ui/alerts")
    expect(page.locator("table.alerts")).to_contain_text(f"compaction {scene['instant']} failed")
    assert browsing.blocked == []


def test_an_admin_mutes_an_alert(stack, browsing, scene):
    page = browsing.page()
    sign_in(page, stack, "admin")
    page.goto(stack.url + "/ui/alerts")
    row = page.locator("table.alerts tr", has_text=f"compaction {scene['instant']} failed")
    row.locator("input[name=hours]").fill("2")
    row.locator("input[name=reason]").fill("deploy")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Mute").click()
    expect(page.get_by_text("muted.")).to_be_visible()
    browsing.shot(page, "alert-muted")
    page.goto(stack.url + "/ui/mutes")
    expect(page.locator("main")).to_contain_text("deploy")
    page.goto(stack.url + "/ui/webhooks")  # an admin's page (webhook URLs and deliveries)
    expect(page.locator("main h1")).to_have_text("Webhooks")
    browsing.shot(page, "webhooks")
    assert browsing.blocked == []


def test_a_viewer_sees_no_action(stack, browsing, scene):
    page = browsing.page()
    sign_in(page, stack, "viewer")
    page.goto(f"{stack.url}/ui/tasks/{scene['task_id']}")
    expect(page.get_by_role("heading", name=re.compile(f"Task {scene['task_id']}"))).to_be_visible()
    expect(page.locator("main button")).to_have_count(0)
    page.goto(f"{stack.url}/ui/tables/{scene['trips']['id']}")
    expect(page.get_by_role("heading", name="Policies")).to_be_visible()
    expect(page.get_by_text("Edit settings")).to_have_count(0)
    expect(page.locator("main form[method='post']")).to_have_count(0)
    page.goto(f"{stack.url}/ui/queues")
    expect(page.locator("main button")).to_have_count(0)
    browsing.shot(page, "viewer-table-queues")


def test_a_viewer_finds_the_worst_table_on_the_fleet_page_and_where_its_settings_come_from(stack, browsing, scene,
                                                                                           fixtures_root):
    put = stack.api("PUT", "/api/v1/policy-templates/fleet", json={
        "path_prefix": str(stack.tables_root / "fleet_cow"), "policies": {"hoodie.cleaner.commits.retained": 12}})
    assert put.status_code == 200, put.text
    table = stack.register(fixtures_root / FIXTURE_TABLES["cow_v6_nonpartitioned"], "fleet_cow")
    with stack.database.transaction() as session:  # a failed plan: the worst table of the three
        TaskRepo(session).create(table_id=table["id"], service="clean", instant="20990101000000000",
                                 state=TaskState.FAILED)
    ids = [scene["trips"]["id"], scene["other"]["id"], table["id"]]
    assert stack.api("POST", "/api/v1/fleet/health:score", json={"table_ids": ids}).status_code == 200
    page = browsing.page()
    sign_in(page, stack, "viewer")
    page.get_by_role("navigation").get_by_role("link", name="Fleet", exact=True).click()
    expect(page.get_by_role("heading", name="Fleet")).to_be_visible()
    first = page.locator("table.fleet tbody tr").first
    expect(first).to_have_attribute("data-table-id", str(table["id"]))
    expect(first).to_contain_text("1 task(s) failed for good")
    expect(page.locator("tr[data-template='fleet']")).to_contain_text(f"under {stack.tables_root / 'fleet_cow'}")
    browsing.shot(page, "fleet")
    first.get_by_role("link").click()
    expect(page.locator("#policy-template")).to_have_text("fleet")
    row = page.locator("table.policies tr", has_text="hoodie.cleaner.commits.retained")
    expect(row).to_contain_text("12")
    expect(row).to_contain_text("template fleet")


def test_a_form_without_its_csrf_token_is_refused(stack, browsing, scene):
    page = browsing.page()
    sign_in(page, stack, "admin")
    page.goto(f"{stack.url}/ui/tables/{scene['other']['id']}")
    page.get_by_text("Edit settings").click()
    page.get_by_label("Priority").fill("9")
    page.locator("form.settings input[name='csrf_token']").evaluate("input => input.remove()")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Save settings").click()
    assert answer.value.status == 403
    expect(page.get_by_role("alert")).to_contain_text("CSRF token is missing or wrong")
    browsing.shot(page, "csrf-refused")
    assert stack.api("GET", f"/api/v1/tables/{scene['other']['id']}").json()["priority"] == 0

    # With its token, the same form is saved.
    page.goto(f"{stack.url}/ui/tables/{scene['other']['id']}")
    page.get_by_text("Edit settings").click()
    page.get_by_label("Priority").fill("9")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("status")).to_contain_text("Table settings saved.")
    assert stack.api("GET", f"/api/v1/tables/{scene['other']['id']}").json()["priority"] == 9


def test_an_admin_restores_a_table_to_a_savepoint_after_confirming(stack, browsing, fixtures_root):
    from support import hudi_rs_table, rows

    from tms.hudi.table.hudi_table import HudiTable
    table = stack.register(fixtures_root / FIXTURE_TABLES["cow_v6_nonpartitioned"], "restored_cow")
    kept = HudiTable.load(table["base_path"]).timeline.completed_writes()[0].timestamp
    expected = rows(hudi_rs_table(table["base_path"], as_of=kept))
    made = stack.api("POST", f"/api/v1/tables/{table['id']}/savepoints",
                     json={"instant": kept, "comment": "known good"})
    assert made.status_code == 201, made.text
    page = browsing.page()
    sign_in(page, stack, "admin")
    page.goto(f"{stack.url}/ui/tables/{table['id']}")
    expect(page.locator("table.savepoints")).to_contain_text("known good")
    page.locator("#restore summary").click()
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Restore in place").click()
    assert asked and "Restore this table in place?" in asked[0]
    assert not HudiTable.load(table["base_path"]).timeline.pending()  # dismissed: nothing written
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Restore in place").click()
    expect(page.get_by_text(re.compile(r"task \d+ recorded"))).to_be_visible()
    browsing.shot(page, "restore-requested")
    task_id = re.search(r"task (\d+) recorded", page.locator(".notice").first.inner_text()).group(1)
    page.goto(f"{stack.url}/ui/tasks/{task_id}")
    expect(page.locator("#task-state")).to_have_text("SUCCEEDED", timeout=120_000)  # the worker ran it
    assert rows(hudi_rs_table(table["base_path"])) == expected
