"""The dashboard served by the service (without a browser; tests/ui drives it in Chromium): `/` leads to it,
its pages need a session, every form needs its CSRF token, and what each role is shown and allowed."""
from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from service.ui.session import CSRF_FIELD, SESSION_COOKIE
from tms.db import AlertRepo, QueueRepo, Sighting, TaskRepo, TaskState
from tms.db.repos.webhooks import MuteRepo, WebhookRepo
from tms.task_payload import PlanStatistics


def _token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def _sign_in(client, headers: dict[str, str]) -> str:
    """Sign in through the form (as a browser does) and return the session's CSRF token."""
    client.cookies.clear()
    page = client.get("/ui/login")
    csrf = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', page.text).group(1)
    response = client.post("/ui/login", data={CSRF_FIELD: csrf, "token": _token(headers), "next": "/ui/tables"},
                           follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/tables"
    cookie = response.headers["set-cookie"]
    assert f"{SESSION_COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    overview = client.get("/ui/")
    return re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', overview.text).group(1)


@pytest.fixture
def failed_task(app, register):
    table = register("mor_v8_trips_8i3u1d")
    with app.state.database.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table["id"], service="compaction", instant="20250331040000000",
                                           state=TaskState.FAILED)
        AlertRepo(session).raise_alert(kind="task_failed", severity="critical", message="compaction failed",
                                       fingerprint="t1", table_id=table["id"], task_id=task.id)
        QueueRepo(session).put("local", kind="local", master="local[*]", capacity=2)
    return table, task.id


def test_root_redirects_to_the_dashboard_which_asks_to_sign_in(client):
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 307 and root.headers["location"] == "/ui/"
    page = client.get("/ui/tables?q=trips", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/ui/login?next=%2Fui%2Ftables%3Fq%3Dtrips"
    assert "Sign in to TMS" in client.get("/ui/login").text


def test_a_wrong_token_does_not_sign_in(client):
    client.cookies.clear()
    page = client.get("/ui/login")
    csrf = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', page.text).group(1)
    response = client.post("/ui/login", data={CSRF_FIELD: csrf, "token": "tms_wrong"}, follow_redirects=False)
    assert response.status_code == 401 and "Unknown, revoked or expired token" in response.text
    assert SESSION_COOKIE not in response.headers.get("set-cookie", "")


def test_every_page_renders_for_a_viewer_without_actions(client, tokens, failed_task):
    table, task_id = failed_task
    _sign_in(client, tokens["viewer"])
    for path, expected in [("/ui/", "Tasks by state"), ("/ui/tables", "trips"),
                           (f"/ui/tables/{table['id']}", "Timeline"), ("/ui/tasks", str(task_id)),
                           (f"/ui/tasks/{task_id}", "Attempts"), ("/ui/queues", "local[*]"),
                           ("/ui/alerts", "compaction failed"), ("/ui/instances", "Instances"),
                           ("/ui/mutes", "Mutes"), ("/ui/engines", "No rollout rule")]:
        page = client.get(path)
        assert page.status_code == 200, path
        assert expected in page.text, path
        assert "<button type=\"submit\" class=\"action" not in page.text, path
        assert "Save settings" not in page.text and "Save queue" not in page.text, path
    # Webhooks (their URLs and deliveries) are an admin's, as in the API: no link, and a 403 page.
    assert 'href="/ui/webhooks"' not in client.get("/ui/").text
    assert client.get("/ui/webhooks").status_code == 403
    assert "Leader:" in client.get("/ui/").text


def test_operator_reruns_with_the_csrf_token_and_is_refused_without(client, tokens, app, failed_task):
    _, task_id = failed_task
    csrf = _sign_in(client, tokens["operator"])
    page = client.get(f"/ui/tasks/{task_id}")
    assert f'action="/ui/tasks/{task_id}/rerun"' in page.text and "data-confirm" in page.text
    refused = client.post(f"/ui/tasks/{task_id}/rerun", data={}, follow_redirects=False)
    assert refused.status_code == 403 and "CSRF token is missing or wrong" in refused.text
    wrong = client.post(f"/ui/tasks/{task_id}/rerun", data={CSRF_FIELD: "x" * 64}, follow_redirects=False)
    assert wrong.status_code == 403
    with app.state.database.transaction() as session:
        assert TaskRepo(session).get(task_id).state == "FAILED"
    done = client.post(f"/ui/tasks/{task_id}/rerun", data={CSRF_FIELD: csrf})
    assert done.status_code == 200 and "rerun done; it is RUNNABLE now" in done.text
    again = client.post(f"/ui/tasks/{task_id}/rerun", data={CSRF_FIELD: csrf})
    assert f"cannot rerun task {task_id}: it is RUNNABLE" in again.text


def test_a_viewer_posting_an_action_is_refused(client, tokens, app, failed_task):
    _, task_id = failed_task
    csrf = _sign_in(client, tokens["viewer"])
    response = client.post(f"/ui/tasks/{task_id}/rerun", data={CSRF_FIELD: csrf}, follow_redirects=False)
    assert response.status_code == 403 and "needs the operator role" in response.text
    with app.state.database.transaction() as session:
        assert TaskRepo(session).get(task_id).state == "FAILED"


def test_admin_edits_policies_and_queues(client, tokens, app, failed_task):
    table, _ = failed_task
    csrf = _sign_in(client, tokens["admin"])
    saved = client.post(f"/ui/tables/{table['id']}/settings", data={
        CSRF_FIELD: csrf, "priority": "7", "queue": "local", "enabled": "on",
        "policies": "hoodie.compact.inline.max.delta.commits=2\n"})
    assert "Table settings saved." in saved.text
    detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["admin"]).json()
    assert detail["priority"] == 7 and detail["queue"] == "local"
    assert detail["policies"]["hoodie.compact.inline.max.delta.commits"] == 2
    bad = client.post(f"/ui/tables/{table['id']}/settings", data={
        CSRF_FIELD: csrf, "priority": "7", "enabled": "on", "policies": "hoodie.compact.inline.max.delta.commits=0"})
    assert "hoodie.compact.inline.max.delta.commits" in bad.text and "notice error" in bad.text
    queue = client.post("/ui/queues", data={CSRF_FIELD: csrf, "name": "big", "kind": "standalone",
                                            "master": "spark://m:7077", "capacity": "4", "enabled": "on"})
    assert "Queue big saved." in queue.text
    assert {q["name"]: q["capacity"] for q in client.get("/api/v1/queues", headers=tokens["admin"]).json()} == {
        "big": 4, "local": 2}
    client.post("/ui/queues/big/delete", data={CSRF_FIELD: csrf})
    assert [q["name"] for q in client.get("/api/v1/queues", headers=tokens["admin"]).json()] == ["local"]


def test_sign_out_ends_the_session(client, tokens):
    csrf = _sign_in(client, tokens["viewer"])
    client.post("/ui/logout", data={CSRF_FIELD: csrf})
    assert client.get("/ui/", follow_redirects=False).status_code == 303


def test_manager_pages_show_the_manager_api_and_mute_an_alert(client, app, tokens, failed_task):
    """The leader, mutes and webhooks come from the manager's API; an admin mutes an alert through it."""
    table, task_id = failed_task
    with app.state.database.transaction() as session:
        WebhookRepo(session).create(url="http://hooks.example/tms", secret="s3cret", kinds=[],
                                    min_severity="warning", format="slack")
    csrf = _sign_in(client, tokens["admin"])
    assert "Leader:" in client.get("/ui/").text
    hooks = client.get("/ui/webhooks").text
    assert "not available" not in hooks and "http://hooks.example/tms" in hooks
    alerts = client.get("/ui/alerts").text
    assert "Muting is not available" not in alerts
    alert_id = int(re.search(r'data-alert-id="(\d+)"', alerts).group(1))
    muted = client.post(f"/ui/alerts/{alert_id}/mute", data={CSRF_FIELD: csrf, "hours": "2", "reason": "deploy"})
    assert "muted." in muted.text, muted.text
    with app.state.database.transaction() as session:
        [mute] = MuteRepo(session).list()
        assert (mute.table_id, mute.reason) == (table["id"], "deploy")
        remaining = (mute.expires_at - datetime.now(UTC)).total_seconds()
        assert 7000 < remaining <= 7200
    assert "deploy" in client.get("/ui/mutes").text


def test_the_task_page_shows_its_plan_as_a_summary_with_units_and_times_in_utc(client, tokens, app, register):
    table = register("mor_v8_trips_8i3u1d")
    stats = PlanStatistics(operations=3, operation_bytes=[1024, 2048, 5 * 1024 ** 2],
                           largest_file_group_bytes=5 * 1024 ** 2, total_bytes=3072 + 5 * 1024 ** 2)
    with app.state.database.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table["id"], service="compaction", instant="20250331040000000",
                                           state=TaskState.RUNNABLE, payload=stats)
    _sign_in(client, tokens["viewer"])
    page = client.get(f"/ui/tasks/{task.id}").text
    plan = re.search(r"<dt>plan</dt><dd>(.*?)</dd>", page, re.S).group(1)
    assert plan.startswith("3 operations, 5.0 MB in all, the largest file group 5.0 MB"), plan
    assert re.search(r"<details class=\"operations\"><summary>each operation's size</summary><ol>"
                     r"<li>1.0 KB</li><li>2.0 KB</li><li>5.0 MB</li></ol></details>", plan), plan
    assert "1024" not in plan and "5242880" not in plan  # no raw byte counts
    created = re.search(r"<dt>created</dt><dd>(.*?)</dd>", page).group(1)
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(", created), created


def test_the_table_page_shows_boolean_policies_as_the_cli_does(client, tokens, register):
    table = register("mor_v8_trips_8i3u1d")
    _sign_in(client, tokens["viewer"])
    page = client.get(f"/ui/tables/{table['id']}").text
    values = re.findall(r"<tr[^>]*><td><code class=\"policy-key\">.+?</code></td><td>([^<]*)</td></tr>", page)
    assert values and ("yes" in values or "no" in values), values  # the policies have booleans
    assert "True" not in values and "False" not in values, values
    sizes = re.search(r"hoodie.<wbr>parquet.<wbr>max.<wbr>file.<wbr>size</code></td><td>([^<]*)</td>", page)
    assert sizes and sizes.group(1) == "120.0 MB", sizes  # a size with its unit, as the CLI shows it
    # The table's own settings first; Hudi's defaults folded away below them.
    own, folded = page.split('<details class="defaults" id="policy-defaults">', 1)
    assert "hoodie.<wbr>parquet.<wbr>max.<wbr>file.<wbr>size" not in own.split("<h2>Policies</h2>", 1)[1]
    assert re.search(r"<summary>\d+ more: Hudi's defaults</summary>", folded)


def test_the_tasks_page_filters_by_table_name_and_shows_durations(client, tokens, failed_task):
    table, task_id = failed_task
    _sign_in(client, tokens["viewer"])
    assert "<th>duration</th>" in client.get("/ui/tasks").text
    for ref in (table["name"], f"{table['database']}.{table['name']}", str(table["id"])):
        assert f'data-task-id="{task_id}"' in client.get("/ui/tasks", params={"table": ref}).text, ref
    unknown = client.get("/ui/tasks", params={"table": "no_such_table"}).text
    assert "No table is named &#39;no_such_table&#39;" in unknown and "data-task-id" not in unknown
    assert f'data-task-id="{task_id}"' in client.get("/ui/tasks", params={"table_id": table["id"]}).text


def test_the_sign_in_page_says_where_the_admin_token_is_kept(client):
    client.cookies.clear()
    page = client.get("/ui/login").text
    assert "<code>.tms/admin-token</code>" in page and "tms tokens create" in page


def test_the_table_page_shows_its_ttl_state(client, register, tokens):
    table = register("mor_v8_trips_8i3u1d")  # partitioned by city, written long before today
    client.patch(f"/api/v1/tables/{table['id']}", headers=tokens["admin"],
                 json={"policies": {"hoodie.partition.ttl.days.retain": 1}})
    _sign_in(client, tokens["viewer"])
    page = client.get(f"/ui/tables/{table['id']}").text
    ttl = page[page.index('id="ttl"'):page.index("</dl>", page.index('id="ttl"'))]
    assert "no record TTL" in ttl and "city=" in ttl  # every city expired by its last write


def test_the_table_page_shows_the_backups_and_an_admin_restores_one_after_confirming(client, tokens, register,
                                                                                    settings, hudi_tables):
    import uuid

    from tms.backup.layout import BackupStore, backup_root
    from tms.backup.take import take_backup
    from tms.hudi.table.hudi_table import HudiTable

    table = register("mor_v8_trips_8i3u1d")
    scratch = f"{settings.storage_roots[0]}/dashboard-backups-{uuid.uuid4().hex[:8]}"
    client.put(f"/api/v1/tables/{table['id']}/backup", headers=tokens["admin"],
               json={"destination": scratch}).raise_for_status()
    version = take_backup(HudiTable.load(table["base_path"]),
                          BackupStore(backup_root(scratch, table["name"], table["id"]))).manifest
    _sign_in(client, tokens["viewer"])
    page = client.get(f"/ui/tables/{table['id']}").text
    assert 'id="backups"' in page and f"<code>{version.instant}</code>" in page
    assert "Restore a version" not in page  # admins only
    csrf = _sign_in(client, tokens["admin"])
    assert "Restore a version" in client.get(f"/ui/tables/{table['id']}").text
    target = f"{scratch}/restored"
    unconfirmed = client.post(f"/ui/tables/{table['id']}/backup-restore",
                              data={CSRF_FIELD: csrf, "version": "1", "target_path": target})
    assert "confirm the restore" in unconfirmed.text and "notice error" in unconfirmed.text
    restored = client.post(f"/ui/tables/{table['id']}/backup-restore",
                           data={CSRF_FIELD: csrf, "version": "1", "target_path": target, "confirm": "on"})
    assert "Restore requested: task" in restored.text
    listed = client.get(f"/api/v1/tables/{table['id']}/backups", headers=tokens["admin"]).json()
    assert [(t["action"], t["plan_stats"]["target_path"]) for t in listed["tasks"]] == [("backup_restore", target)]


def test_an_operator_acknowledges_an_instance_down_alert_from_the_alerts_page(client, tokens, app):
    with app.state.database.transaction() as session:
        down, _ = AlertRepo(session).fire("instance_down", "instance:h:9:gone", Sighting("warning", "h:9:gone silent"))
        AlertRepo(session).fire("queue_saturated", "queue:q", Sighting("warning", "queue q is full"))
    csrf = _sign_in(client, tokens["operator"])
    page = client.get("/ui/alerts").text
    assert page.count('/acknowledge"') == 1 and f'/ui/alerts/{down.id}/acknowledge"' in page  # only instance_down
    done = client.post(f"/ui/alerts/{down.id}/acknowledge", data={CSRF_FIELD: csrf})
    assert "acknowledged and resolved" in done.text, done.text
    with app.state.database.transaction() as session:
        assert AlertRepo(session).get(down.id).resolved_at is not None
    assert "h:9:gone silent" not in client.get("/ui/alerts").text  # firing alerts only
