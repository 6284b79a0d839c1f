"""The ops commands' global options (--json, --url, --token) before or after the subcommand; the console
of `tms up` (its task watcher) against a live service: one line summing up the past, then only the changes,
each naming its table; figures for people: times in UTC labelled, durations in ms below a second, sizes with
units, a plan as a summary (each operation's size on request)."""
from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from standalone.demo import run_demo_writer
from standalone.run import TaskWatcher
from tms import display
from tms.cli import app as tms_app
from tms.db import TaskRepo
from tms.errors import ConfigError
from tms.ops.options import after_the_subcommand


@pytest.mark.parametrize(("given", "passed"), [
    (["--json", "tasks", "list"], ["tasks", "list", "--json"]),
    (["--url", "http://x", "--token=t", "status"], ["status", "--url", "http://x", "--token=t"]),
    (["--json", "read", "p", "--", "--x"], ["read", "p", "--json", "--", "--x"]),
    (["tasks", "list", "--json"], ["tasks", "list", "--json"]),
    (["--help"], ["--help"]),
])
def test_global_options_before_the_subcommand_are_passed_to_it(given, passed):
    assert after_the_subcommand(given) == passed


def _run(*args: str, env: dict[str, str]):
    result = CliRunner().invoke(tms_app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _trips(service) -> str:
    path = service.storage_root / f"trips_{os.getpid()}_{len(list(service.storage_root.iterdir()))}"
    run_demo_writer(str(path), commits=3, interval=0, seed=7, echo=lambda line: None)
    return str(path)


def test_json_url_and_token_work_before_or_after_the_subcommand(service, tokens):
    nowhere = {"TMS_URL": "http://127.0.0.1:1", "TMS_TOKEN": "not-a-token"}  # the options must win over these
    registered = json.loads(_run("--url", service.url, "--token", tokens["admin"], "--json", "tables", "register",
                                 _trips(service), env=nowhere))
    before = json.loads(_run("--json", "--url", service.url, "--token", tokens["viewer"], "tables", "list",
                             env=nowhere))
    after = json.loads(_run("tables", "list", "--json", "--url", service.url, "--token", tokens["viewer"],
                            env=nowhere))
    assert before == after and [t["id"] for t in before["items"]] == [registered["id"]]
    mixed = json.loads(_run("--json", "tasks", "list", "--url", service.url, env={"TMS_TOKEN": tokens["viewer"]}))
    assert mixed["items"] == [] and mixed["total"] == 0
    status = json.loads(_run(f"--url={service.url}", "--json", "status", env={"TMS_TOKEN": tokens["viewer"]}))
    assert status["tables"] == {"total": 1, "enabled": 1}


def test_the_console_prints_a_summary_of_the_past_then_the_changes_naming_the_table(service, tokens):
    client_env = {"TMS_URL": service.url, "TMS_TOKEN": tokens["admin"]}
    table = json.loads(_run("tables", "register", _trips(service), "--json", env=client_env))
    first = json.loads(_run("trigger", str(table["id"]), "--service", "compaction", "--json", env=client_env))
    [old] = first["tasks"]
    _run("tasks", "cancel", str(old["id"]), env=client_env)  # a task of the past, CANCELLED
    rerun = json.loads(_run("tasks", "rerun", str(old["id"]), "--json", env=client_env))
    assert rerun["done"][0]["state"] == "RUNNABLE"  # and now one RUNNABLE: still the past, it has not changed

    said: list[str] = []
    watcher = TaskWatcher(service.url, tokens["admin"], said.append)
    watcher.poll()
    assert said == ["1 task(s) before this start (1 RUNNABLE); from now on, their changes and the new ones'"]
    watcher.poll()
    assert len(said) == 1, "nothing changed: nothing printed"

    with service.database.transaction() as session:
        repo = TaskRepo(session)
        repo.claim(old["id"], expected_version=repo.get(old["id"]).version, owner="w1", lease_seconds=60)
    watcher.poll()
    assert said[1:] == [f"task {old['id']} (table {table['name']}): compaction {old['instant']} RUNNING"]

    # `tms tasks show`: the plan as a summary with units, each operation's size on request, times in UTC.
    shown = _run("tasks", "show", str(old["id"]), env=client_env)
    plan = re.search(r"^plan: +(.*)$", shown, re.M).group(1)
    operations = json.loads(_run("tasks", "show", str(old["id"]), "--json", env=client_env))["plan_stats"]["operations"]
    assert operations >= 1 and re.fullmatch(
        rf"{operations} operations?, [\d.]+ (B|KB|MB) in all, the largest file group [\d.]+ (B|KB|MB)", plan), shown
    assert "operations (bytes each reads)" not in shown
    assert re.search(r"^created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", shown, re.M), shown
    assert re.search(rf"^plan sizes: +< 1 MB: {operations}$", shown, re.M), shown
    in_paris = _run("tasks", "show", str(old["id"]), env={**client_env, "TMS_DISPLAY_TIMEZONE": "Europe/Paris"})
    assert re.search(r"^created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CET \(Europe/Paris\)$", in_paris, re.M), in_paris
    listed = _run("tasks", "show", str(old["id"]), "--operations", env=client_env)
    each = listed.split("operations (bytes each reads):\n")[1].split("\n\n")[0].splitlines()
    assert [line.split(".")[0].strip() for line in each] == [str(n) for n in range(1, operations + 1)], listed
    assert all(re.fullmatch(r"  \d+\. [\d.]+ (B|KB|MB)", line) for line in each), listed


def test_an_empty_past_is_one_line(service, tokens):
    said: list[str] = []
    TaskWatcher(service.url, tokens["admin"], said.append).poll()
    assert said == ["no task before this start"]


def test_figures_for_people_have_units_and_a_zone():
    assert [display.duration(s) for s in (0.25, 0.0004, 14.4, 185, 7800)] == [
        "250 ms", "0 ms", "14 s", "3m 05s", "2h 10m"]
    assert [display.size(n) for n in (0, 512, 3 * 1024 + 400, 5 * 1024 ** 3)] == ["0 B", "512 B", "3.4 KB", "5.0 GB"]
    assert display.moment("2026-11-26T08:44:08.123456+02:00") == "2026-11-26 06:44:08 UTC"
    assert display.moment("2026-11-26T06:44:08") == "2026-11-26 06:44:08 UTC" and display.moment(None) == "-"
    stats = {"operations": 3, "operation_bytes": [1024, 2048, 5 * 1024 ** 2], "largest_file_group_bytes": 5 * 1024 ** 2,
             "total_bytes": 3072 + 5 * 1024 ** 2}
    assert display.plan_summary(stats) == "3 operations, 5.0 MB in all, the largest file group 5.0 MB"
    assert display.operation_sizes(stats) == ["1.0 KB", "2.0 KB", "5.0 MB"]
    assert display.plan_summary({}) == "no statistics"
    mb = 1024 ** 2
    assert display.size_histogram({"operation_bytes": [10, mb, 3 * mb, 20 * mb, 2048 * mb]}) == [
        ("< 1 MB", 1), ("1-10 MB", 2), ("10-100 MB", 1), (">= 1 GB", 1)]
    assert display.size_histogram(None) == []
    assert display.policy_value("hoodie.parquet.max.file.size", 125829120) == "120.0 MB"
    assert display.policy_value("hoodie.compaction.target.io", 500 * 1024) == "500.0 GB"  # Hudi's MB
    assert display.policy_value("hoodie.cleaner.commits.retained", 10) == 10
    assert display.resources({"executors": 3, "executor_cores": 1, "executor_memory_mb": 512, "driver_cores": 1,
                              "driver_memory_mb": 1024, "largest_file_group_bytes": 721591}) == \
        "3 executors of 1 core and 512.0 MB, driver 1 core and 1.0 GB; the largest file group 704.7 KB"
    now = datetime(2026, 11, 28, 16, 25, 43, tzinfo=UTC)
    assert display.instant("20261128162238942", UTC, now) == "2026-11-28 16:22:38 UTC (3m 04s ago)"
    assert display.instant("20261128172238942", ZoneInfo("Europe/Paris"), now) == \
        "2026-11-28 16:22:38 UTC (3m 04s ago)"  # a LOCAL timeline's wall-clock time, shown in the display zone
    assert display.instant("not-an-instant") == "not-an-instant"


def test_times_are_shown_in_the_display_zone_said_with_it(monkeypatch):
    monkeypatch.setenv("TMS_DISPLAY_TIMEZONE", "Asia/Tokyo")
    assert display.moment("2026-11-26T06:44:08+00:00") == "2026-11-26 15:44:08 JST (Asia/Tokyo)"
    monkeypatch.setenv("TMS_DISPLAY_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match="TMS_DISPLAY_TIMEZONE=Mars/Olympus is not a time zone"):
        display.moment("2026-11-26T06:44:08+00:00")
    result = CliRunner().invoke(tms_app, ["tasks", "list"], env={"TMS_DISPLAY_TIMEZONE": "Mars/Olympus",
                                                                 "TMS_URL": "http://127.0.0.1:9"})
    assert result.exit_code == 1 and "Traceback" not in result.output
