"""The ops CLI against a live service: every command, in human form and with `--json` (parsed), and every
failure as one line `error: <the service's message>` on stderr with exit status 1."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from support import REPO

from standalone.demo import run_demo_writer
from tms.db import AlertRepo, Sighting, TaskRepo
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action


def ok(result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output)
    return result.stdout


def as_json(result):
    return json.loads(ok(result))


def one_line_error(result) -> str:
    """The command failed as the CLI promises: exit 1, one line `error: ...` on stderr, nothing on stdout."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    return lines[0]


@pytest.fixture
def trips(service) -> str:
    """A MERGE_ON_READ table with three commits (inserts, then updates: log files) under the storage root."""
    path = service.storage_root / f"trips_{os.getpid()}_{len(list(service.storage_root.iterdir()))}"
    run_demo_writer(str(path), commits=3, interval=0, seed=7, echo=lambda line: None)
    return str(path)


def test_tables_commands(tms, trips, service):
    registered = as_json(tms("tables", "register", trips, "--policy", "hoodie.compact.inline.max.delta.commits=50",
                             "--priority", "2", "--json"))
    tid = registered["id"]
    assert registered["base_path"] == os.path.realpath(trips) and registered["priority"] == 2
    assert registered["policies"]["hoodie.compact.inline.max.delta.commits"] == 50
    no_key = "<none set: give the table a callback key, or the service a TMS_CALLBACK_KEY>"
    options = {"hoodie.write.commit.callback.on": "true",
               "hoodie.write.commit.callback.http.url": f"{service.url}/api/v1/hudi/callback",
               "hoodie.write.commit.callback.http.api.key": no_key}
    assert registered["writer_options"] == options
    name = registered["name"]

    listed = as_json(tms("tables", "list", "--json"))
    assert [t["id"] for t in listed["items"]] == [tid] and listed["total"] == 1
    human = ok(tms("tables", "list"))
    assert human.splitlines()[0].split()[:3] == ["ID", "DATABASE", "NAME"] and name in human
    assert as_json(tms("tables", "list", "--disabled", "--json"))["items"] == []

    detail = as_json(tms("tables", "show", name, "--json"))  # by name
    assert detail["id"] == tid and detail["timeline"]["completed"] >= 3 and "status" in detail["health"]
    shown = ok(tms("tables", "show", str(tid)))
    assert registered["base_path"] in shown and "ttl:" not in shown
    assert all(f"  {key}={value}\n" in shown for key, value in options.items())
    assert "no event from its writers yet: its commits reach TMS only by the planner's periodic pass" in shown
    # The table's own settings first, the defaults folded away (--all shows them), sizes with units.
    own = shown.split("policies set for this table or by its template:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"hoodie.compact.inline.max.delta.commits: +50 \(table\)", own)
    assert "hoodie.cleaner.policy" not in shown and "default(s), not shown (--all shows them)" in own
    assert re.search(r"^last completed: +deltacommit \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+ ago\), instant \d{17}$",
                     shown, re.MULTILINE), shown
    every = ok(tms("tables", "show", str(tid), "--all"))
    assert "hoodie.cleaner.policy" in every
    assert re.search(r"hoodie.parquet.max.file.size: +120.0 MB$", every, re.MULTILINE), every
    sized = ok(tms("tables", "update", str(tid), "--policy", "hoodie.parquet.max.file.size=268435456"))
    assert re.search(r"hoodie.parquet.max.file.size: +256.0 MB \(table\)$", ok(tms("tables", "show", str(tid))),
                     re.MULTILINE) and "hoodie.parquet.max.file.size = 256.0 MB" in sized
    assert as_json(tms("tables", "show", str(tid), "--json"))["policies"]["hoodie.parquet.max.file.size"] == 268435456

    updated = as_json(tms("tables", "update", str(tid), "--policy", "hoodie.cleaner.commits.retained=7",
                          "--policy", "hoodie.compact.inline.max.delta.commits=", "--priority", "5", "--json"))
    assert updated["policies"]["hoodie.cleaner.commits.retained"] == 7
    assert updated["policies"]["hoodie.compact.inline.max.delta.commits"] == 5  # back to Hudi's default
    assert updated["priority"] == 5
    ok(tms("tables", "update", str(tid), "--policy", "tms.ttl.field=ts", "--policy", "tms.ttl.days=30"))
    ttl = ok(tms("tables", "show", str(tid))).split("ttl:", 1)[1]
    assert "records expire before" in ttl and "expired partitions" in ttl and "none yet" in ttl
    assert re.search(r"ttl task: +every 24 h; last: none yet; next: at the next look", ttl)  # the TTL task
    assert "hoodie.cleaner.commits.retained = 7" in ok(tms("tables", "update", name, "--policy",
                                                           "hoodie.cleaner.commits.retained=7"))

    assert as_json(tms("tables", "disable", str(tid), "--json"))["enabled"] is False
    assert ok(tms("tables", "enable", str(tid))) == f"table {tid} ({name}) enabled\n"

    assert ok(tms("tables", "delete", str(tid), "--yes")) == f"table {tid} unregistered (its files are untouched)\n"
    assert one_line_error(tms("tables", "show", str(tid))) == f"error: no table with id {tid}"


def test_register_names_the_writers_callback_options_never_the_key(tms, service):
    other = str(service.storage_root / f"own_key_{os.getpid()}")
    run_demo_writer(other, commits=1, interval=0, seed=3, echo=lambda line: None)
    human = ok(tms("tables", "register", other, "--callback-key", "its-own-key"))
    assert "  hoodie.write.commit.callback.on=true\n" in human
    assert f"  hoodie.write.commit.callback.http.url={service.url}/api/v1/hudi/callback\n" in human
    assert "  hoodie.write.commit.callback.http.api.key=<the table's own callback key, given at its registration>\n" \
        in human and "its-own-key" not in human


def test_table_errors_are_the_services_message_on_one_line(tms, trips, service):
    assert one_line_error(tms("tables", "register", "/elsewhere/t")).startswith(
        "error: body.base_path: /elsewhere/t is outside the storage roots")
    tid = as_json(tms("tables", "register", trips, "--json"))["id"]
    assert one_line_error(tms("tables", "register", trips)) == f"error: {os.path.realpath(trips)} is already " \
                                                               f"registered as table {tid}"
    assert "hoodie.cleaner.policy" in one_line_error(tms("tables", "update", str(tid), "--policy",
                                                         "hoodie.cleaner.policy=SOMETIMES"))
    assert one_line_error(tms("tables", "update", str(tid), "--policy", "novalue")) == \
        "error: --policy 'novalue' is not key=value"
    assert one_line_error(tms("tables", "update", str(tid))).startswith("error: nothing to change")
    assert one_line_error(tms("tables", "disable", str(tid), role="viewer")) == \
        "error: this needs the admin role; the token has the viewer role"
    assert one_line_error(tms("tables", "list", role=None)) == \
        "error: missing credentials: send 'Authorization: Bearer <token>' (set TMS_TOKEN or --token)"
    assert one_line_error(tms("tables", "list", token="wrong")) == "error: unknown, revoked or expired token"
    assert one_line_error(tms("tables", "show", "no_such_table")) == "error: no table named 'no_such_table'"
    refused = one_line_error(tms("tables", "delete", str(tid)))  # not confirmed (no input): nothing deleted
    assert refused == f"error: table {tid} not unregistered (--yes skips the question)"
    assert as_json(tms("tables", "show", str(tid), "--json"))["id"] == tid


def test_trigger_plans_a_compaction_now_and_the_task_commands_act_on_it(tms, trips, service):
    tid = as_json(tms("tables", "register", trips, "--json"))["id"]  # default trigger: 5 delta commits, 2 made

    tms("tables", "disable", str(tid))
    assert one_line_error(tms("trigger", str(tid))) == f"error: table {tid} is disabled: enable it before planning it"
    tms("tables", "enable", str(tid))
    assert "needs the operator role" in one_line_error(tms("trigger", str(tid), role="viewer"))

    result = as_json(tms("trigger", str(tid), "--service", "compaction", "--json", role="operator"))
    [task] = result["tasks"]
    assert (result["table_id"], result["service"], task["service"], task["state"]) == (
        tid, "compaction", "compaction", "RUNNABLE")
    requested = HudiTable.load(trips).timeline.pending([Action.COMPACTION])
    assert [i.timestamp for i in requested] == [task["instant"]]
    assert ok(tms("trigger", str(tid), role="operator")) == f"nothing to plan: table {tid} needs no compaction now\n"
    assert one_line_error(tms("trigger", str(tid), "--service", "vacuum")) == \
        "error: --service must be one of compaction, clustering, clean, rollback, archive, not 'vacuum'"

    tasks = as_json(tms("tasks", "list", "--table", str(tid), "--json"))
    assert [t["id"] for t in tasks["items"]] == [task["id"]]
    human = ok(tms("tasks", "list", "--state", "runnable"))
    assert human.splitlines()[0].split()[:4] == ["ID", "TABLE", "SERVICE", "INSTANT"] and task["instant"] in human
    name = as_json(tms("tables", "show", str(tid), "--json"))["name"]
    assert human.splitlines()[1].split()[:3] == [str(task["id"]), name, "compaction"]  # the table by name
    assert re.search(rf"^table: +{name} \(id {tid}\)$", ok(tms("tasks", "show", str(task["id"]))), re.MULTILINE)
    assert as_json(tms("tasks", "list", "--state", "FAILED", "--json"))["items"] == []
    assert as_json(tms("tasks", "show", str(task["id"]), "--json"))["attempts"] == []
    assert "instant:" in ok(tms("tasks", "show", str(task["id"])))
    assert one_line_error(tms("tasks", "logs", str(task["id"]))) == f"error: task {task['id']} has not run yet: no log"

    tid_task = str(task["id"])
    assert as_json(tms("tasks", "suspend", tid_task, "--json", role="operator"))["done"][0]["state"] == "SUSPENDED"
    assert ok(tms("tasks", "resume", tid_task, role="operator")) == \
        f"task {tid_task}: compaction {task['instant']} RUNNABLE\n"
    assert "needs the operator role" in one_line_error(tms("tasks", "cancel", tid_task, role="viewer"))
    assert as_json(tms("tasks", "cancel", tid_task, "--json"))["done"][0]["state"] == "CANCELLED"
    # Bulk: every cancelled task of the table.
    rerun = as_json(tms("tasks", "rerun", "--state", "CANCELLED", "--table", str(tid), "--json", role="operator"))
    assert [(t["id"], t["state"]) for t in rerun["done"]] == [(task["id"], "RUNNABLE")] and rerun["failed"] == []
    assert ok(tms("tasks", "rerun", "--table", str(tid), role="operator")) == "no task matches\n"
    message = one_line_error(tms("tasks", "rerun", tid_task, role="operator"))
    assert message.startswith("error: ") and "RUNNABLE" in message
    assert one_line_error(tms("tasks", "rerun")).startswith("error: give the ids of the tasks to rerun")
    assert one_line_error(tms("tasks", "show", "999999")) == "error: no task with id 999999"

    # A run that failed with a log: `tasks logs` prints its tail; a bulk rerun reports each task.
    with service.database.transaction() as session:
        repo = TaskRepo(session)
        claimed = repo.claim(task["id"], expected_version=repo.get(task["id"]).version, owner="w1", lease_seconds=60)
        repo.finish(task["id"], fencing_token=claimed.fencing_token, succeeded=False, error="executor lost",
                    log_tail="line one\nSparkException: executor lost\n")
    assert ok(tms("tasks", "logs", tid_task)) == "line one\nSparkException: executor lost\n"
    logs = as_json(tms("tasks", "logs", tid_task, "--attempt", "1", "--json"))
    assert (logs["attempt"], logs["outcome"], logs["worker"]) == (1, "FAILED", "w1")
    assert one_line_error(tms("tasks", "logs", tid_task, "--attempt", "2")) == \
        f"error: task {tid_task} has no attempt 2 (attempts: 1)"
    attempts = ok(tms("tasks", "show", tid_task))
    assert "w1" in attempts and "FAILED" in attempts
    assert ok(tms("tasks", "rerun", "--state", "FAILED", "--table", str(tid), role="operator")) == \
        f"task {tid_task}: compaction {task['instant']} RUNNABLE\n"


def test_queues_commands(tms):
    created = as_json(tms("queues", "set", "spark", "--master", "spark://head:7077", "--capacity", "3",
                          "--allowed-services", "compaction,clean", "--spark-conf", "spark.eventLog.enabled=true",
                          "--json"))
    assert (created["kind"], created["master"], created["capacity"]) == ("standalone", "spark://head:7077", 3)
    assert created["allowed_services"] == created["allowed_actions"] == ["compaction", "clean"]
    assert created["spark_conf"] == {"spark.eventLog.enabled": "true"}
    assert ok(tms("queues", "set", "spark", "--capacity", "5")) == \
        "queue spark changed: spark://head:7077, 5 job(s) at once\n"
    [queue] = as_json(tms("queues", "list", "--json"))
    assert (queue["capacity"], queue["allowed_services"], queue["running"]) == (5, ["compaction", "clean"], 0)
    human = ok(tms("queues", "list"))
    assert "0/5" in human and "services compaction,clean" in human
    assert "needs the admin role" in one_line_error(tms("queues", "set", "spark", "--capacity", "1", role="operator"))
    assert one_line_error(tms("queues", "set", "spark", "--capacity", "0")).startswith("error: body.capacity:")
    assert one_line_error(tms("queues", "set", "new")).startswith("error: body.kind: Field required")
    assert ok(tms("queues", "delete", "spark")) == "queue spark deleted\n"
    assert as_json(tms("queues", "list", "--json")) == []
    assert one_line_error(tms("queues", "delete", "spark")).startswith("error: ")


def test_alerts_tokens_and_status(tms, tokens, service, trips):
    tid = as_json(tms("tables", "register", trips, "--json"))["id"]
    with service.database.transaction() as session:
        AlertRepo(session).raise_alert(kind="planning_failed", severity="warning", message="cannot plan it",
                                       fingerprint="f1", table_id=tid)
    [alert] = as_json(tms("alerts", "list", "--open", "--json", role="viewer"))["items"]
    assert (alert["kind"], alert["table_id"], alert["message"]) == ("planning_failed", tid, "cannot plan it")
    assert "cannot plan it" in ok(tms("alerts", "list", "--table", str(tid)))
    assert as_json(tms("alerts", "list", "--severity", "critical", "--json"))["items"] == []
    with service.database.transaction() as session:
        down, _ = AlertRepo(session).fire("instance_down", "instance:h:1:x", Sighting("warning", "h:1:x is silent"))
    assert ok(tms("alerts", "ack", str(down.id), role="operator")) == \
        f"alert {down.id} (instance_down instance:h:1:x) resolved\n"
    assert "resolves when its condition clears" in one_line_error(
        tms("alerts", "ack", str(as_json(tms("alerts", "list", "--open", "--json"))["items"][0]["id"])))

    listed = as_json(tms("tokens", "list", "--json"))
    assert {t["role"] for t in listed} == {"viewer", "operator", "admin"} and all("token" not in t for t in listed)
    viewer = next(t for t in listed if t["role"] == "viewer")
    assert "ops viewer" in ok(tms("tokens", "list"))
    assert "needs the admin role" in one_line_error(tms("tokens", "list", role="operator"))
    assert ok(tms("tokens", "revoke", str(viewer["id"]))) == f"token {viewer['id']} revoked\n"
    assert one_line_error(tms("tables", "list", role="viewer")) == "error: unknown, revoked or expired token"

    status = as_json(tms("status", "--json", role="operator"))
    assert status["ready"]["status"] == "ok" and status["tables"] == {"total": 1, "enabled": 1}
    assert status["open_alerts"] == 1 and status["tasks"] == {}
    human = ok(tms("status", role="operator"))
    assert f"{service.url}: ok" in human and "open alerts: 1" in human


def test_unreachable_service_is_one_line(tms):
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    assert one_line_error(tms("status", url=url)) == \
        f"error: cannot reach TMS at {url}: connection refused (is it running? set TMS_URL or --url)"
    assert one_line_error(tms("tables", "list", url="ftp://x")).startswith("error: ")


def test_the_installed_command_prints_json_and_one_line_errors(service, tokens, trips):
    """The `tms` program itself (a process, as scripts run it): exit statuses, stdout and stderr."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TMS_")}, "TMS_URL": service.url}
    cmd = [sys.executable, "-m", "tms.cli"]
    done = subprocess.run([*cmd, "tables", "register", trips, "--json", "--token", tokens["admin"]], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["base_path"] == os.path.realpath(trips), done.stderr
    failed = subprocess.run([*cmd, "tables", "show", "424242", "--token", tokens["viewer"]], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert (failed.returncode, failed.stdout, failed.stderr) == (1, "", "error: no table with id 424242\n")


def test_mutes_and_webhooks_commands(tms, trips):
    tid = as_json(tms("tables", "register", trips, "--json"))["id"]
    mute = as_json(tms("mutes", "add", "--table", str(tid), "--types", "task_failed,table_unreadable",
                       "--reason", "maintenance", "--expires-at", "2999-01-01T00:00:00Z", "--json"))
    assert (mute["table_id"], mute["alert_types"], mute["reason"]) == (tid, ["task_failed", "table_unreadable"],
                                                                       "maintenance")
    assert [m["id"] for m in as_json(tms("mutes", "list", "--json", role="viewer"))] == [mute["id"]]
    assert "maintenance" in ok(tms("mutes", "list"))
    assert "needs the admin role" in one_line_error(tms("mutes", "add", "--reason", "x", role="operator"))
    assert "alert_types" in one_line_error(tms("mutes", "add", "--types", "no_such_type"))
    assert ok(tms("mutes", "delete", str(mute["id"]))).strip() == f"mute {mute['id']} deleted"
    assert as_json(tms("mutes", "list", "--json")) == []

    hook = as_json(tms("webhooks", "add", "http://127.0.0.1:9/hook", "--types", "task_failed",
                       "--min-severity", "critical", "--format", "slack", "--secret", "a-long-secret", "--json"))
    assert (hook["url"], hook["alert_types"], hook["min_severity"], hook["format"], hook["has_secret"]) == \
        ("http://127.0.0.1:9/hook", ["task_failed"], "critical", "slack", True)
    changed = as_json(tms("webhooks", "update", str(hook["id"]), "--disable", "--target", "http://127.0.0.1:9/other",
                          "--json"))
    assert (changed["enabled"], changed["url"]) == (False, "http://127.0.0.1:9/other")
    assert "http://127.0.0.1:9/other" in ok(tms("webhooks", "list"))
    assert as_json(tms("webhooks", "deliveries", str(hook["id"]), "--json"))["items"] == []
    assert "999999" in one_line_error(tms("webhooks", "delete", "999999"))
    assert ok(tms("webhooks", "delete", str(hook["id"]))).strip() == f"webhook {hook['id']} deleted"


def test_tables_take_the_writers_lock_options(tms, trips):
    fs_lock = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    registered = as_json(tms("tables", "register", trips, "--option", f"hoodie.write.lock.provider={fs_lock}",
                             "--option", "hoodie.write.lock.wait_time_ms=500", "--json"))
    tid = registered["id"]
    assert registered["policies"]["hoodie.write.lock.provider"] == fs_lock
    shown = ok(tms("tables", "show", str(tid)))
    assert "concurrency control:" in shown and fs_lock in shown.split("concurrency control:")[1]
    refused = one_line_error(tms("tables", "update", str(tid), "--option",
                                 "hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock."
                                 "InProcessLockProvider"))
    assert "locks within one JVM" in refused
    assert one_line_error(tms("tables", "update", str(tid), "--option", "hoodie.cleaner.commits.retained=3")) \
        .startswith("error: --option hoodie.cleaner.commits.retained is not a concurrency-control option")
    cleared = as_json(tms("tables", "update", str(tid), "--option", "hoodie.write.lock.provider=",
                          "--option", "hoodie.write.lock.wait_time_ms=", "--json"))
    assert not [k for k in cleared["policies"] if k.startswith("hoodie.write.lock.")]
    assert "single writer (no lock)" in ok(tms("tables", "show", str(tid)))
