"""The ops commands' global options (--json, --url, --token) before or after the subcommand, and the console
of `tms up` (its task watcher) against a live service: one line summing up the past, then only the changes,
each naming its table."""
from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from standalone.run import TaskWatcher, took
from tms.cli import app as tms_app
from tms.db import TaskRepo
from tms.demo import run_demo_writer
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


def test_an_empty_past_is_one_line(service, tokens):
    said: list[str] = []
    TaskWatcher(service.url, tokens["admin"], said.append).poll()
    assert said == ["no task before this start"]


def test_durations_below_a_second_are_milliseconds():
    assert (took(0.25), took(0.0004), took(14.4)) == ("250 ms", "0 ms", "14 s")
